"""The language server's engine without the protocol: diagnostics equal ``check``'s findings, an edit
recomposes only the pairs it reaches, unsaved buffers count, a pathological buffer is a diagnostic; hover
and definitions on the example org (``template_engine.lsp``; the protocol itself: test_lsp_protocol.py)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner

from template_engine.cli import main
from template_engine.loader.tree import load_org
from template_engine.lsp.analysis import Analysis, analyse, pair_name
from template_engine.lsp.buffers import Buffers
from template_engine.lsp.diagnostics import by_file
from template_engine.lsp.hover import hover_text
from template_engine.lsp.navigate import definitions, references

REPO = Path(__file__).resolve().parents[1]

BAD_TOLERATION = """\
  tolerations:
  - name: gpu-maintenance
    key: maintenance
    operator: Exists
    effect: NoExecute
"""


@pytest.fixture
def org(tmp_path: Path) -> Path:
    root = tmp_path / "templates"
    shutil.copytree(REPO / "templates", root)
    return root


def _analysis(buffers: Buffers, previous: Analysis | None = None) -> Analysis:
    return analyse(load_org(buffers), previous)


def _check(root: Path) -> dict[str, object]:
    result = CliRunner().invoke(main, ["check", "--root", str(root), "-o", "json"])
    assert result.exit_code in (0, 1), result.output
    found: dict[str, object] = json.loads(result.output)
    return found


def _check_findings(root: Path) -> tuple[set[tuple[str, str]], set[str]]:
    """``check``'s issues as (pair name, message), and its problems' messages."""
    report = _check(root)
    issues = set()
    for row in report["results"]:  # type: ignore[attr-defined]
        view = row["project"] or (f"({row['department']})" if row["department"] else "(system)")
        for issue in row["issues"]:  # as a finding words it: ``replica field: message (expected ...)``
            what = " ".join(filter(None, [issue.get("replica"), issue.get("field")]))
            message = issue["message"] + (f" (expected {issue['expected']})" if issue.get("expected") else "")
            issues.add((f"{view}/{row['template']}", f"{what}: {message}" if what else message))
    return issues, {p["message"] for p in report["problems"]}  # type: ignore[attr-defined]


def _lsp_findings(analysis: Analysis) -> tuple[set[tuple[str, str]], set[str]]:
    issues, problems = set(), set()
    for diagnostics in by_file(analysis).values():
        for d in diagnostics:
            if d.level != "error":
                continue
            if not d.pairs:
                problems.add(d.text)
            for pid in d.pairs:
                issues.add((analysis.pairs[pid].name, d.text))
    return issues, problems


def _same_as_check(root: Path, analysis: Analysis) -> None:
    want_issues, want_problems = _check_findings(root)
    got_issues, got_problems = _lsp_findings(analysis)
    assert got_issues == want_issues
    assert all(any(m in t for t in got_problems) for m in want_problems)
    assert len(got_problems) == len(want_problems)


def test_the_diagnostics_are_check_s_findings_for_the_example_org(org: Path) -> None:
    _same_as_check(org, _analysis(Buffers(org)))


def test_the_diagnostics_of_a_saved_edit_are_check_s_findings(org: Path) -> None:
    research = org / "departments/research/defaults.yaml"
    research.write_text(research.read_text("utf-8") + BAD_TOLERATION, encoding="utf-8")
    compute = org / "assets/computes/cpu-4.yaml"
    compute.write_text(
        compute.read_text("utf-8").replace("cpuCoreRequest", "cpuCoreRequst"), encoding="utf-8"
    )
    analysis = _analysis(Buffers(org))
    _same_as_check(org, analysis)
    found = by_file(analysis)
    (toleration,) = [d for d in found["departments/research/defaults.yaml"] if "NoExecute" in d.message]
    assert toleration.line == len(research.read_text("utf-8").splitlines())  # the edited line: `effect:`
    # The pairs of tf-parameter-server no longer compose (their compute asset is broken): 5 of 13 remain
    # (the policies of the other kinds there allow the effect: their pairs are runnable).
    assert toleration.message.endswith(
        "(not runnable in 5 of 13 pairs: nlp/mpi-horovod, nlp/pytorch-elastic, vision/mpi-horovod, "
        "vision/pytorch-elastic, vision/vit-finetune)"
    )
    (typo,) = found["assets/computes/cpu-4.yaml"]
    assert "did you mean 'cpuCoreRequest'?" in typo.message  # validate's did-you-mean
    assert "fails to compose in 3 of 3 pairs: nlp/tf-parameter-server" in typo.message


def test_an_unsaved_buffer_counts_and_closing_it_restores_the_file_on_disk(org: Path) -> None:
    buffers = Buffers(org)
    first = _analysis(buffers)
    rel = "departments/research/defaults.yaml"
    buffers.set_buffer(rel, (org / rel).read_text("utf-8") + BAD_TOLERATION)
    edited = _analysis(buffers, first)
    assert any("NoExecute" in d.message for d in by_file(edited)[rel])
    buffers.close_buffer(rel)
    closed = _analysis(buffers, edited)
    assert not any("NoExecute" in d.message for d in by_file(closed).get(rel, []))


def test_an_edit_of_a_project_default_recomposes_only_that_project_s_pairs(org: Path) -> None:
    buffers = Buffers(org)
    first = _analysis(buffers)
    assert len(first.composed) == len(first.pairs) == 23
    rel = "projects/vision/defaults.yaml"
    buffers.set_buffer(rel, (org / rel).read_text("utf-8").replace("a100-80gb", "a100-40gb"))
    second = _analysis(buffers, first)
    assert sorted(second.composed) == [
        f"projects/vision/{t}"
        for t in (
            "hpo-sweep",
            "jupyter-lab",
            "mpi-horovod",
            "pytorch-elastic",
            "tf-parameter-server",
            "vit-finetune",
        )
    ]
    assert all(
        second.pairs[p].outcome is first.pairs[p].outcome for p in second.pairs if p not in second.composed
    )
    third = _analysis(buffers, second)  # nothing changed: nothing is composed
    assert third.composed == ()
    template = "projects/nlp/templates/pytorch-elastic.yaml"
    buffers.set_buffer(template, (org / template).read_text("utf-8") + "\n# a comment\n")
    assert _analysis(buffers, third).composed == ()  # the same document: a comment changes no pair
    buffers.set_buffer(
        template, (org / template).read_text("utf-8").replace("numWorkers: 4", "numWorkers: 5")
    )
    assert _analysis(buffers, third).composed == ("projects/nlp/pytorch-elastic",)


@pytest.mark.parametrize(
    "text",
    [
        "spec:\n" + "".join("  " * n + f"k{n}:\n" for n in range(1, 120)) + "  " * 120 + "v: 1\n",
        "a: &a [x, x, x, x, x, x, x, x, x]\n"
        + "".join(
            f"{c}: &{c} [*{p}, *{p}, *{p}, *{p}, *{p}, *{p}, *{p}, *{p}, *{p}]\n"
            for p, c in zip("abcdefgh", "bcdefghi", strict=True)
        )
        + "spec: {x: *i}\n",
        "spec:\n  labels:\n" + "".join(f"  - name: l{n}\n    value: v\n" for n in range(12_000)),
        "spec:\n  labels:\n  - name: x\n    value: '" + "{{ (" * 3000 + "'\n",
    ],
    ids=["deep", "aliases", "many-values", "expression"],
)
def test_a_pathological_buffer_is_a_diagnostic_of_its_file(org: Path, text: str) -> None:
    buffers = Buffers(org)
    rel = "projects/vision/defaults.yaml"
    buffers.set_buffer(rel, text)
    found = by_file(_analysis(buffers))
    assert [d for d in found.get(rel, []) if d.level == "error"], found.keys()


def test_hover_on_a_department_value_names_what_it_overrode_and_every_pair() -> None:
    analysis = _analysis(Buffers(REPO / "templates"))
    text = hover_text(analysis, "departments/research/defaults.yaml", 6, 5)
    assert text is not None
    assert text.startswith("**`labels[name=cost-center].value`** (department research defaults)")
    assert '(13 of 13): `"cc-2100"`, set by department research defaults' in text
    assert 'overrode `"cc-1000"` of system defaults (`system/defaults.yaml:12`)' in text


def test_hover_on_an_asset_name_says_what_it_is_and_where_it_is_used() -> None:
    analysis = _analysis(Buffers(REPO / "templates"))
    text = hover_text(analysis, "projects/vision/templates/vit-finetune.yaml", 10, 5)
    assert text is not None
    assert text.startswith("**compute asset `a100-x8`** (system), `assets/computes/a100-x8.yaml`")
    assert "Used by 3 templates: mpi-horovod (system), pytorch-elastic (project nlp), vit-finetune" in text


def test_definitions_and_references() -> None:
    analysis = _analysis(Buffers(REPO / "templates"))
    places = [loc.place() for loc in definitions(analysis, "departments/research/defaults.yaml", 6, 5)]
    assert places == ["system/defaults.yaml:12", "departments/research/defaults.yaml:6"]
    # An exclusion leads to the item it removes.
    removed = [loc.place() for loc in definitions(analysis, "departments/research/defaults.yaml", 13, 5)]
    assert removed == ["system/defaults.yaml:19"]
    # An asset's name leads to its file; its references are the templates that name it.
    assert [
        loc.place() for loc in definitions(analysis, "projects/vision/templates/vit-finetune.yaml", 10, 5)
    ] == ["assets/computes/a100-x8.yaml:2"]
    users = references(analysis, "projects/vision/templates/vit-finetune.yaml", 10, 5)
    assert [loc.file for loc in users] == [
        "system/templates/mpi-horovod.yaml",
        "projects/nlp/templates/pytorch-elastic.yaml",
        "projects/vision/templates/vit-finetune.yaml",
    ]
    # A policy rule leads to the values it governs: the image of every environment asset in use.
    governed = {loc.file for loc in definitions(analysis, "system/policy.yaml", 5, 5)}
    assert governed == {
        "assets/environments/mpi-horovod.yaml",
        "assets/environments/pytorch.yaml",
        "assets/environments/tensorflow.yaml",
        "assets/environments/xgboost.yaml",
    }


def test_pair_names_are_check_s_views() -> None:
    analysis = _analysis(Buffers(REPO / "templates"))
    assert {pair_name(s.pair) for s in analysis.pairs.values()} >= {
        "vision/vit-finetune",
        "(research)/tf-parameter-server",
        "(system)/mpi-horovod",
    }


def test_a_policy_that_imposes_a_data_source_makes_its_file_a_dependency_of_the_scope_s_pairs(
    org: Path,
) -> None:
    buffers = Buffers(org)
    first = _analysis(buffers)
    imagenet = "assets/datasources/imagenet.yaml"
    text = (org / imagenet).read_text("utf-8")
    buffers.set_buffer(imagenet, text.replace("description: ", "description: (edited) "))
    second = _analysis(buffers, first)
    assert sorted(second.composed) == sorted(first.users_of(imagenet))  # the templates that name it
    assert "projects/nlp/tf-parameter-server" not in second.composed
    policy = "departments/research/policy.yaml"
    imposed = (org / policy).read_text("utf-8").replace("  - datasets\n", "  - datasets\n  - imagenet\n")
    buffers.set_buffer(policy, imposed)
    third = _analysis(buffers, second)
    assert len(third.composed) == 8  # every research pair: its policy changed
    buffers.set_buffer(imagenet, text)
    fourth = _analysis(buffers, third)
    assert sorted(fourth.composed) == sorted(third.users_of(imagenet))
    assert set(RESEARCH_PAIRS) <= set(fourth.composed)  # imposed on every research pair now


RESEARCH_PAIRS = sorted(
    [
        "departments/research/tf-parameter-server",
        *(f"projects/nlp/{t}" for t in ("mpi-horovod", "pytorch-elastic", "tf-parameter-server")),
        *(
            f"projects/vision/{t}"
            for t in ("mpi-horovod", "pytorch-elastic", "tf-parameter-server", "vit-finetune")
        ),
    ]
)


def test_an_unsaved_new_file_is_part_of_the_org_until_it_is_closed(org: Path) -> None:
    buffers = Buffers(org)
    first = _analysis(buffers)
    rel = "projects/vision/templates/new-one.yaml"
    text = (org / "projects/vision/templates/vit-finetune.yaml").read_text("utf-8")
    buffers.set_buffer(rel, text.replace("name: vit-finetune", "name: new-one"))
    second = _analysis(buffers, first)
    assert second.composed == ("projects/vision/new-one",)
    assert not (org / rel).exists()
    buffers.close_buffer(rel)
    buffers.changed_on_disk(rel)
    assert "projects/vision/new-one" not in _analysis(buffers, second).pairs


def test_the_layout_is_walked_again_only_when_the_listing_may_have_changed(
    org: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from template_engine.loader import tree

    walks: list[object] = []
    real = tree.read_layout

    def counted(*args: object) -> object:
        walks.append(args)
        return real(*args)  # type: ignore[arg-type]

    monkeypatch.setattr(tree, "read_layout", counted)
    buffers = Buffers(org)
    first = _analysis(buffers)
    rel = "projects/vision/defaults.yaml"
    buffers.set_buffer(rel, (org / rel).read_text("utf-8"))  # a new buffer: walked again
    second = _analysis(buffers, first)
    assert len(walks) == 2
    buffers.set_buffer(rel, (org / rel).read_text("utf-8").replace("a100-80gb", "a100-40gb"))
    third = _analysis(buffers, second)  # an edit of an open buffer: the same layout
    assert len(walks) == 2 and len(third.composed) == 6
    buffers.changed_on_disk("projects/vision/templates/new.yaml")  # the editor says a file appeared
    (org / "projects/vision/templates/new.yaml").write_text(
        (org / "projects/vision/templates/vit-finetune.yaml")
        .read_text("utf-8")
        .replace("name: vit-finetune", "name: new"),
        encoding="utf-8",
    )
    fourth = _analysis(buffers, third)
    assert len(walks) == 3 and fourth.composed == ("projects/vision/new",)
    assert _check_findings(org)[0] == _lsp_findings(_analysis(Buffers(org)))[0]


@pytest.mark.parametrize(
    ("file", "old", "new"),
    [
        ("system/policy.yaml", "max: 16", "max: 1"),  # a rule: most pairs are no longer runnable
        ("assets/computes/a100-x8.yaml", "description: ", "description: (edited) "),
        ("departments/research/defaults.yaml", "cc-2100", "cc-2200"),
        ("projects/speech/templates/asr-sweep-draft.yaml", "minReplicas: 4", "minReplicas: 1"),
    ],
)
def test_an_edit_answers_what_a_fresh_analysis_of_the_same_buffers_answers(
    org: Path, file: str, old: str, new: str
) -> None:
    buffers = Buffers(org)
    first = _analysis(buffers)
    text = (org / file).read_text("utf-8")
    assert old in text
    buffers.set_buffer(file, text)
    second = _analysis(buffers, first)  # the new buffer: the layout walked again
    buffers.set_buffer(file, text.replace(old, new))
    edited = _analysis(buffers, second)
    fresh = analyse(load_org(buffers))
    assert set(edited.composed) <= set(fresh.composed) and edited.composed
    assert by_file(edited) == by_file(fresh)
    assert {p: s.outcome.status() for p, s in edited.pairs.items()} == {
        p: s.outcome.status() for p, s in fresh.pairs.items()
    }


def test_hover_on_a_shared_default_says_which_kinds_take_it_and_which_lack_it() -> None:
    """Issue 32: a shared default's hover shows each kind's outcome: the training's own policy default over
    it, and the inference that has no such field."""
    analysis = _analysis(Buffers(REPO / "templates"))
    lines = (REPO / "templates/system/defaults.yaml").read_text("utf-8").splitlines()
    text = hover_text(analysis, "system/defaults.yaml", lines.index("  backoffLimit: 6") + 1, 3)  # from 1
    assert text is not None
    lacking = "- nlp/llm-serve (1 of 23): not applied: Run:ai's inference spec has no field 'backoffLimit'"
    assert lacking in text
    assert "- vision/hpo-sweep (1 of 23): `2`, overridden by system training policy defaults" in text
