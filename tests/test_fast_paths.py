"""The speed-ups of issue 11 change no answer (docs/performance.md).

Each fast path is checked against the long way it stands in for:

* the lean YAML builder and the line map made on first use, against the full builder, on every YAML file of
  the repository (examples, conformance cases, fixtures) and on generated documents;
* the lean merge (no provenance recorded, made on first use by merging again) and the copy-on-write merge from
  a shared prefix, against the recording merge, on generated layers and on every pair of the example org;
* the documents reused from the last ``load_org``: only for a file with the same text at the same place,
  never stale;
* the garbage collector's state after ``load_org``.
"""

from __future__ import annotations

import gc
from pathlib import Path
from typing import Any

import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

from template_engine.compose import compose
from template_engine.errors import InputError
from template_engine.loader import yaml_safe
from template_engine.loader.tree import load_org
from template_engine.loader.yaml_safe import LazyLines, load_yaml
from template_engine.merge.engine import Layer, Provenance, _Run, merge_layers
from template_engine.merge.plan import SPEC_PLAN

REPO = Path(__file__).resolve().parent.parent
EXAMPLE = REPO / "templates"
YAML_FILES = sorted(
    path
    for folder in (REPO / "templates", REPO / "tests", REPO / "snapshots")
    if folder.is_dir()
    for path in folder.rglob("*.y*ml")
)


def _outcome(text: str) -> tuple[str, Any, dict[Any, tuple[int, int]]]:
    """What ``load_yaml`` gives: ``("ok", data, lines)`` or ``("error", rendered problems, {})``."""
    try:
        loaded = load_yaml(text, "f.yaml")
    except InputError as exc:
        return "error", [p.render() for p in exc.problems], {}
    return "ok", loaded.data, dict(loaded.lines)


def _both(text: str, monkeypatch: pytest.MonkeyPatch) -> tuple[Any, Any]:
    """``load_yaml``'s outcome, and its outcome with the lean pass always in doubt (the full builder only,
    as before the lean pass existed)."""
    fast = _outcome(text)

    def doubt(self: Any, node: Any, depth: int) -> Any:
        raise yaml_safe._Doubt

    with monkeypatch.context() as patch:
        patch.setattr(yaml_safe._Lean, "build", doubt)
        full = _outcome(text)
    return fast, full


@pytest.mark.parametrize("path", YAML_FILES, ids=lambda p: str(p.relative_to(REPO)))
def test_the_lean_builder_and_lazy_lines_equal_the_full_builder(
    path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    fast, full = _both(path.read_text(encoding="utf-8"), monkeypatch)
    assert fast == full
    assert repr(fast) == repr(full)  # the same types and key order too


def test_yaml_files_are_found() -> None:
    assert len(YAML_FILES) > 100


@pytest.mark.parametrize(
    "text",
    [
        "a: 1\nb: [1, 2.5, true, null, ~, 0x1f, 0o17, 1_000, -.5e3, 2024-01-01, yes, 'q', \"d\"]\n",
        "a: 1e400\n",  # YAML 1.1 text that reads as an infinite number: worded by the full builder
        "a: 12e3\nb: '1e400'\n",
        "a: .inf\nb: -.NaN\n",
        'a: "x\\u0000y"\n',
        'a: "\\udfff"\n',
        'a: "\\t tab and \\\\ backslash"\n',
        "a: &x 1\nb: *x\n",  # an anchor: the full builder, eager lines
        "a: 1\na: 2\n",
        "? [1]\n: 2\n",
        "a: !!binary aGk=\n",
        "a: !!str 1\nb: !!int '2'\n",
        "a:\n  - {b: c, d: [e, {f: g}]}\n  - plain text that is long\n",
        "a: " + "9" * 5000 + "\n",
        "a: " + "[" * 70 + "]" * 70 + "\n",
        "k\u00e9y: v\u00e4lue\n",
        "",
        "# only a comment\n",
    ],
)
def test_the_lean_builder_says_nothing_the_full_builder_would_not(
    text: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    fast, full = _both(text, monkeypatch)
    assert fast == full
    assert repr(fast) == repr(full)


def test_the_line_map_is_made_only_when_read() -> None:
    loaded = load_yaml("spec:\n  image: x\n", "f.yaml")
    assert isinstance(loaded.lines, LazyLines)
    assert loaded.lines._lines is None
    assert loaded.lines[("spec", "image")] == (2, 3)
    assert loaded.lines._lines is not None


def test_the_resolver_tags_scalars_as_pyyaml_does() -> None:
    texts = ["1", "1.5", "true", "no", "~", "", "null", "0x1F", "2024-01-01", "<<", "=", "abc", ".inf"]
    texts += ["-1_0"]
    texts += ["+1", "-.5", "1e3", "1.0e+3", "0b101", "190:20:30", "Off", "NULL", "Y", "n", "!x", "'q'", '"d"']
    for value in texts:
        document = f"a: {value}\nb: [{value}]\nc: {{{value}: x}}\n" if value not in ("!x",) else "a: '!x'\n"
        try:
            slow = yaml.compose(document, Loader=yaml_safe._Loader)  # the same parser, PyYAML's resolver
        except yaml.YAMLError:
            with pytest.raises(yaml.YAMLError):
                yaml.compose(document, Loader=yaml_safe._FastLoader)
            continue
        fast = yaml.compose(document, Loader=yaml_safe._FastLoader)
        assert repr(fast) == repr(slow), value


names = st.sampled_from(["A", "B", "C", "D"])
values = st.one_of(st.none(), st.sampled_from(["a", "b", "{{ project.name }}"]), st.integers(0, 3))


def _item(key: str) -> st.SearchStrategy[dict[str, Any]]:
    return st.fixed_dictionaries(
        {key: names},
        optional={"value": values, "quantity": values, "exclude": st.sampled_from([True, False, None])},
    )


#: Spec fragments: scalars, nested mappings, keyed lists (exclusions, overrides, items without a key, two
#: items with one key), lists replaced whole, and a value of another type than the layer below has.
fragment = st.fixed_dictionaries(
    {},
    optional={
        "image": values,
        "environmentVariables": st.lists(_item("name"), max_size=4),
        "labels": st.one_of(st.lists(_item("name"), max_size=4), st.just("not a list")),
        "nodePools": st.lists(st.sampled_from(["p1", "p2"]), max_size=2),
        "compute": st.one_of(
            st.none(),
            st.fixed_dictionaries(
                {},
                optional={
                    "cpuCoreRequest": values,
                    "extendedResources": st.lists(_item("resource"), max_size=3),
                },
            ),
            st.just(7),
        ),
        "storage": st.fixed_dictionaries(
            {},
            optional={"pvc": st.lists(_item("name"), max_size=3), "nfs": st.lists(_item("name"), max_size=2)},
        ),
    },
)


def layers_of(specs: list[dict[str, Any]]) -> list[Layer]:
    return [Layer(f"layer {i}", f"layer{i}.yaml", spec) for i, spec in enumerate(specs)]


def _recorded(layers: list[Any], start: Any = None) -> Any:
    return _Run(SPEC_PLAN, layers, record=True).run(start)


@settings(max_examples=300, deadline=None)
@given(specs=st.lists(fragment, min_size=1, max_size=6))
def test_the_lean_merge_and_its_provenance_equal_the_recording_merge(specs: list[dict[str, Any]]) -> None:
    layers = layers_of(specs)
    try:
        recorded = _recorded(layers)
    except Exception as exc:  # the same error either way
        with pytest.raises(type(exc)) as caught:
            merge_layers(SPEC_PLAN, layers)
        assert str(caught.value) == str(exc)
        return
    lean = merge_layers(SPEC_PLAN, layers)
    assert lean.spec == recorded.spec
    assert dict(lean.set_by) == recorded.set_by
    assert dict(lean.excluded) == recorded.excluded
    assert lean.warnings == recorded.warnings
    # from a shared prefix (copy on write): the same, and the prefix's result is left as it was
    for cut in range(1, len(layers)):
        prefix = merge_layers(SPEC_PLAN, layers[:cut])
        before = repr(prefix.spec)
        started = merge_layers(SPEC_PLAN, layers, prefix)
        assert started.spec == recorded.spec
        assert dict(started.set_by) == recorded.set_by
        assert dict(started.excluded) == recorded.excluded
        assert started.warnings == recorded.warnings
        assert repr(prefix.spec) == before
    assert repr([layer.spec for layer in layers]) == repr(specs)


def test_every_pair_of_the_example_org_composes_the_same_with_and_without_the_shared_merges() -> None:
    org = load_org(EXAMPLE)
    cache: dict[Any, Any] = {}
    compared = 0
    for view, template in org.views():
        try:
            alone = compose(org, template, view)
        except Exception as exc:
            with pytest.raises(type(exc)):
                compose(org, template, view, cache=cache)
            continue
        shared = compose(org, template, view, cache=cache)
        assert shared.combined_spec == alone.combined_spec
        assert shared.combined_master_spec == alone.combined_master_spec
        assert shared.runnable.to_dict() == alone.runnable.to_dict()
        assert dict(shared.worker.set_by) == dict(alone.worker.set_by)
        assert dict(shared.worker.excluded) == dict(alone.worker.excluded)
        recorded = _recorded(list(alone.worker.layers))
        assert dict(alone.worker.set_by) == recorded.set_by
        compared += 1
    assert compared > 10


def test_a_lean_merge_records_its_provenance_only_when_asked() -> None:
    layers = layers_of([{"image": "a", "labels": [{"name": "x", "value": "1"}]}, {"image": "b"}])
    result = merge_layers(SPEC_PLAN, layers)
    assert isinstance(result.set_by, Provenance)
    assert result.set_by._map is None
    assert result.set_by[("image",)].layer == 1
    assert result.set_by._map is not None


# -- reusing the last load's documents ----------------------------------------------------------------------


def _copy_tree(source: Path, target: Path) -> Path:
    for path in source.rglob("*"):
        if path.is_file():
            (target / path.relative_to(source)).parent.mkdir(parents=True, exist_ok=True)
            (target / path.relative_to(source)).write_bytes(path.read_bytes())
    return target


def test_an_unchanged_file_is_reused_and_a_changed_one_is_read_again(tmp_path: Path) -> None:
    root = _copy_tree(EXAMPLE, tmp_path / "org")
    first = load_org(root)
    defaults = next(iter(first.defaults.values()))
    changed_file = root / defaults.source.file
    second = load_org(root)
    for scope, entry in first.defaults.items():
        assert second.defaults[scope] is entry  # the same text at the same place: the same document
    text = changed_file.read_text(encoding="utf-8")
    changed_file.write_text(text + "\n# one more line\n", encoding="utf-8")
    third = load_org(root)
    assert third.defaults[defaults.scope] is not defaults  # never stale
    assert third.defaults[defaults.scope].source.data == defaults.source.data
    for scope, entry in first.defaults.items():
        if scope != defaults.scope:
            assert third.defaults[scope] is entry
    changed_file.write_text(text.replace("spec:", "spec:\n  workingDir: /changed", 1), encoding="utf-8")
    fourth = load_org(root)
    assert fourth.defaults[defaults.scope].source.data["spec"]["workingDir"] == "/changed"


def test_the_same_text_at_another_place_is_not_reused(tmp_path: Path) -> None:
    root = _copy_tree(EXAMPLE, tmp_path / "org")
    load_org(root)
    source = root / "projects/vision/templates/vit-finetune.yaml"
    copy = root / "projects/nlp/templates/vit-finetune.yaml"
    copy.write_bytes(source.read_bytes())
    org = load_org(root)
    here = org.templates[next(s for s in org.templates if s.name == "vision")]["vit-finetune"]
    there = org.templates[next(s for s in org.templates if s.name == "nlp")]["vit-finetune"]
    assert here is not there
    assert (here.scope.name, there.scope.name) == ("vision", "nlp")
    assert there.source.file == "projects/nlp/templates/vit-finetune.yaml"


def test_load_org_leaves_the_collector_as_it_found_it() -> None:
    assert gc.isenabled()
    load_org(EXAMPLE)
    assert gc.isenabled()
    gc.disable()
    try:
        load_org(EXAMPLE)
        assert not gc.isenabled()
    finally:
        gc.enable()
