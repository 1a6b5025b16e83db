"""Completion and code actions of the language server (``template_engine.lsp.complete``, ``.actions``),
without the protocol: the schema's field names and values at the place being typed, the org's asset names,
the keys of inherited items; exclude or override an inherited item here; apply a did-you-mean."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from template_engine.loader.tree import load_org
from template_engine.lsp.actions import actions
from template_engine.lsp.analysis import Analysis, analyse
from template_engine.lsp.buffers import Buffers
from template_engine.lsp.complete import completions, yaml_context
from template_engine.lsp.diagnostics import by_file

EXAMPLE = Path(__file__).resolve().parents[1] / "templates"


@pytest.fixture(scope="module")
def analysis() -> Analysis:
    return analyse(load_org(Buffers(EXAMPLE)))


def _labels(analysis: Analysis, file: str, text: str) -> list[str]:
    lines = text.split("\n")
    line = len(lines) - 1
    return [c.label for c in completions(analysis, file, lines, line, len(lines[line]))]


@pytest.mark.parametrize(
    ("text", "context"),
    [
        ("spec:\n  ", (("spec",), None)),
        ("spec:\n  imagePullPolicy: ", (("spec",), "imagePullPolicy")),
        ("spec:\n  tolerations:\n  - name: x\n    effect: ", (("spec", "tolerations", 0), "effect")),
        ("spec:\n  tolerations:\n    - name: x\n      ", (("spec", "tolerations", 0), None)),
        ("spec:\n  labels:\n  - name: ", (("spec", "labels", 0), "name")),
        (
            "spec:\n  compute:\n    extendedResources:\n    - resource: a\n      quantity: 1\n    ",
            (("spec", "compute"), None),
        ),
    ],
)
def test_the_place_being_typed_is_read_from_the_text(text: str, context: tuple[object, object]) -> None:
    lines = text.split("\n")
    path, key, _ = yaml_context(lines, len(lines) - 1, len(lines[-1]))
    assert (path, key) == context


def test_field_names_and_enum_values_come_from_the_kind_s_schema(analysis: Analysis) -> None:
    fields = _labels(analysis, "projects/vision/defaults.yaml", "spec:\n  ")
    assert {"image", "imagePullPolicy", "environmentVariables", "tolerations"} <= set(fields)
    assert _labels(analysis, "projects/vision/defaults.yaml", "spec:\n  imagePullPolicy: ") == [
        "Always",
        "Never",
        "IfNotPresent",
    ]
    effects = _labels(analysis, "system/defaults.yaml", "spec:\n  tolerations:\n  - name: x\n    effect: ")
    assert effects == ["NoSchedule", "NoExecute", "PreferNoSchedule", "Any"]
    assert "numWorkers" in _labels(analysis, "system/policy.yaml", "rules:\n  worker:\n    ")


def test_asset_names_and_inherited_keys(analysis: Analysis) -> None:
    template = "projects/vision/templates/vit-finetune.yaml"
    assert _labels(analysis, template, "assets:\n  compute: ") == ["a100-x1", "a100-x8", "cpu-4"]
    assert _labels(analysis, template, "assets:\n  datasources:\n  - name: ") == [
        "code",
        "datasets",
        "imagenet",
        "passwd",
    ]
    # vision's defaults inherit labels org and cost-center (system, research); tier is excluded there, and
    # the templates' own labels are above them.
    assert _labels(analysis, "projects/vision/defaults.yaml", "spec:\n  labels:\n  - name: ") == [
        "cost-center",
        "org",
    ]


def test_exclude_or_override_an_inherited_item_here(analysis: Analysis) -> None:
    rel = "projects/vision/defaults.yaml"
    lines = (EXAMPLE / rel).read_text("utf-8").split("\n")
    at = lines.index("  labels:")
    found = {a.title: a for a in actions(analysis, rel, lines, at, [])}
    exclude = found["Exclude labels[name=org] here (from system defaults, in vision/hpo-sweep)"]
    override = found["Override labels[name=org] here (from system defaults, in vision/hpo-sweep)"]
    for action, item in (
        (exclude, {"name": "org", "exclude": True}),
        (override, {"name": "org", "value": "acme-ai"}),
    ):
        (edit,) = action.edits
        assert (edit.line, edit.column) == (at + 1, 0)
        edited = lines[: edit.line] + edit.text.rstrip("\n").split("\n") + lines[edit.line :]
        labels = yaml.safe_load("\n".join(edited))["spec"]["labels"]
        assert labels[0] == item


def test_apply_a_did_you_mean(tmp_path: Path) -> None:
    buffers = Buffers(EXAMPLE)
    rel = "assets/computes/cpu-4.yaml"
    text = (EXAMPLE / rel).read_text("utf-8").replace("cpuCoreRequest", "cpuCoreRequst")
    buffers.set_buffer(rel, text)
    analysis = analyse(load_org(buffers))
    (diagnostic,) = by_file(analysis)[rel]
    lines = text.split("\n")
    (fix,) = actions(analysis, rel, lines, diagnostic.line - 1, [diagnostic])
    assert fix.title == "Change 'cpuCoreRequst' to 'cpuCoreRequest'" and fix.kind == "quickfix"
    (edit,) = fix.edits
    row = lines[edit.line]
    fixed = row[: edit.column] + edit.text + row[edit.end_column :]
    buffers.set_buffer(rel, "\n".join([*lines[: edit.line], fixed, *lines[edit.line + 1 :]]))
    assert rel not in by_file(analyse(load_org(buffers)))


def test_department_project_and_document_names(analysis: Analysis) -> None:
    folders = {"departments": ["applied", "research", "robotics"], "projects": ["nlp", "vision", "lidar"]}
    lines = ["departments:", "- name: "]
    found = completions(analysis, "org.yaml", lines, 1, len(lines[1]), folders)
    assert [(c.label, c.detail) for c in found] == [
        ("robotics", "department folder, not in org.yaml yet"),
        ("applied", "department of org.yaml"),
        ("research", "department of org.yaml"),
    ]
    lines = ["departments:", "- name: research", "  projects:", "  - "]
    found = completions(analysis, "org.yaml", lines, 3, len(lines[3]), folders)
    assert [c.label for c in found][:1] == ["lidar"]
    assert {c.label for c in found} == {"lidar", "nlp", "recsys", "speech", "vision"}
    # A document's name is its file's.
    template = "projects/vision/templates/vit-finetune.yaml"
    assert [c.label for c in completions(analysis, template, ["meta:", "  name: "], 1, 8)] == ["vit-finetune"]


def test_field_names_come_with_run_ai_s_descriptions(analysis: Analysis) -> None:
    lines = ["spec:", "  compute:", "    "]
    found = {c.label: c for c in completions(analysis, "projects/vision/defaults.yaml", lines, 2, 4)}
    assert found["cpuCoreLimit"].detail == "Run:ai"
    assert found["cpuCoreLimit"].documentation.startswith("Limitations on the number of CPUs consumed by the")
    policy = ["rules:", "  worker:", "    "]
    found = {c.label: c for c in completions(analysis, "system/policy.yaml", policy, 2, 4)}
    assert found["imagePullPolicy"].documentation.startswith("Image pull policy.")


def test_the_descriptions_are_extracted_from_every_spec_kind_with_list_items_as_brackets() -> None:
    from template_engine.lsp.descriptions_source import extract

    document = {
        "components": {
            "schemas": {
                "TrainingSpecSpec": {
                    "allOf": [{"properties": {"args": {"$ref": "#/components/schemas/Args"}}}]
                },
                "WorkspaceSpecSpec": {
                    "properties": {
                        "args": {"description": "not this one: TrainingSpecSpec's comes first"},
                        "labels": {"items": {"$ref": "#/components/schemas/Label"}, "type": "array"},
                    }
                },
                "Args": {"description": "Arguments  of\n the command.", "type": "string"},
                "Label": {"properties": {"name": {"description": "The label's name."}}},
            }
        }
    }
    assert extract(document) == {"args": "Arguments of the command.", "labels[].name": "The label's name."}


def test_the_packaged_descriptions_are_the_extract_of_run_ai_s_whole_document() -> None:
    """``descriptions.json`` is what the extractor makes of the whole document (the checked copy in
    ``tests/fixtures/runai``, which ``.ci/run`` holds equal to ``../shared/reference``): a hand edit, or a
    change to the extractor without rewriting the file, fails here."""
    import json
    from pathlib import Path

    from template_engine.lsp.descriptions_source import DESCRIPTIONS_FILE, extract

    whole = Path(__file__).parent / "fixtures" / "runai" / "runai-openapi-1.224.0.json"
    assert json.loads(DESCRIPTIONS_FILE.read_text()) == extract(json.loads(whole.read_text()))


def test_a_kinds_template_and_policy_complete_with_their_own_fields(analysis: Analysis) -> None:
    """Issue 32: a template's ``kind:`` and a kind's policy file choose their schema."""
    file = "projects/vision/templates/serve.yaml"
    inference = _labels(analysis, file, "meta:\n  name: serve\nkind: inference\nspec:\n  ")
    assert {"servingPort", "autoscaling", "image"} <= set(inference)
    assert "backoffLimit" not in inference and "numWorkers" not in inference
    training = _labels(analysis, file, "kind: training\nspec:\n  ")
    assert {"completions", "parallelism", "backoffLimit"} <= set(training)
    assert "numWorkers" not in training
    distributed = _labels(analysis, file, "spec:\n  ")
    assert "numWorkers" in distributed and "completions" not in distributed
    rules = _labels(analysis, "system/training-policy.yaml", "rules:\n  ")
    assert "completions" in rules and "worker" not in rules
