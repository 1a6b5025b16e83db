"""Every fast path equals its general twin on generated inputs (issue 20, "one rule, one place").

``docs/architecture.md`` ("Fast paths and their twins") lists the pairs; each test here switches the fast
path off (its general twin then serves all, as ``benchmarks/bench_twins.py`` does to measure it) and
asserts the same outcome, with and without the switch, on documents and layer stacks hypothesis generates:
the same data, the same line map, the same problems worded the same way, in the same order.
``tests/test_fast_paths.py`` holds the hand-picked cases and the merge's own property test.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import partial
from typing import Any

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from template_engine.errors import CompositionError, InputError
from template_engine.loader import yaml_safe
from template_engine.merge import engine
from template_engine.merge.engine import Layer, check_keys, merge_layers
from template_engine.merge.plan import SPEC_PLAN

SETTINGS = settings(
    max_examples=200, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)


def _twice(
    monkeypatch: pytest.MonkeyPatch, owner: Any, name: str, general: Any, run: Callable[[], Any]
) -> tuple[Any, Any]:
    """``run()`` as it is, and with ``owner.name`` replaced by ``general`` (the fast path switched off)."""
    fast = run()
    with monkeypatch.context() as patch:
        patch.setattr(owner, name, general)
        slow = run()
    return fast, slow


def _outcome(run: Callable[[], Any]) -> tuple[str, Any]:
    """``("ok", value)`` or ``("error", the exception's type and every problem rendered)``."""
    try:
        return "ok", run()
    except (InputError, CompositionError) as exc:
        return "error", (type(exc).__name__, [p.render() for p in exc.problems])


# -- YAML: _Lean <-> _Builder, _FastLoader <-> the loader it derives from ----------------------------------

scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-(10**20), 10**20),
    st.floats(allow_nan=True, allow_infinity=True),
    st.sampled_from(["1e400", "-.5E+9", "12e3", "2024-01-01", "yes", "0x1f", "0o17", "1_000", "~", "", "<<"]),
    st.text(st.sampled_from("ab:#-&*!'\"\\ \t\x00\udfff\u00e9{}[],1e.+"), max_size=8),
)
data = st.recursive(
    scalars,
    lambda inner: st.one_of(
        st.lists(inner, max_size=4),
        st.dictionaries(st.text("abc\x00é", min_size=1, max_size=3), inner, max_size=4),
    ),
    max_leaves=20,
)


def _dump(value: Any, flow: bool | None, unicode: bool) -> str:
    return yaml.dump(value, Dumper=yaml.Dumper, default_flow_style=flow, allow_unicode=unicode)


#: Fragments a document may be made of: plain, quoted, anchored, tagged, merged, repeated keys, nesting.
pieces = st.sampled_from(
    [
        "a: 1\n",
        "a: 2\n",
        "b: [1, 2.5, true, null]\n",
        "c: &x {d: e}\n",
        "f: *x\n",
        "g: !!binary aGk=\n",
        "h: !!str 1\n",
        "i: .inf\n",
        "j: 1e400\n",
        "k: '1e400'\n",
        'l: "\\u0000"\n',
        'm: "\\udfff"\n',
        "n: 2024-01-01\n",
        "<<: {o: p}\n",
        "? [q]\n: r\n",
        "s:\n  - t: u\n  - v\n",
        "w: " + "9" * 4301 + "\n",
        "x: {y: [z, {aa: bb}]}\n",
        "\tcc: 1\n",
        "dd: [\n",
        "- ee\n",
    ]
)
documents = st.one_of(
    st.builds(_dump, data, st.sampled_from([None, True, False]), st.booleans()),
    st.lists(pieces, max_size=6).map("".join),
    st.text(st.sampled_from("ab: -[]{}&*!'\"\\\n1e.,#\t"), max_size=40),
)


def _loaded(text: str) -> Callable[[], Any]:
    def run() -> Any:
        loaded = yaml_safe.load_yaml(text, "f.yaml")
        return loaded.data, dict(loaded.lines)

    return run


def _yaml_outcome(text: str) -> tuple[str, Any]:
    try:
        return _outcome(_loaded(text))
    except yaml.YAMLError as exc:  # pragma: no cover - load_yaml words every YAML error as an InputError
        raise AssertionError(f"load_yaml let {exc!r} through") from None


@SETTINGS
@given(text=documents)
def test_the_lean_yaml_builder_equals_the_full_builder(text: str, monkeypatch: pytest.MonkeyPatch) -> None:
    def doubt(self: Any, node: Any, depth: int) -> Any:
        raise yaml_safe._Doubt

    fast, slow = _twice(monkeypatch, yaml_safe._Lean, "build", doubt, lambda: _yaml_outcome(text))
    assert fast == slow
    assert repr(fast) == repr(slow)  # the same types and key order too


@SETTINGS
@given(text=documents)
def test_the_fast_loader_equals_the_safe_loader(text: str, monkeypatch: pytest.MonkeyPatch) -> None:
    fast, slow = _twice(monkeypatch, yaml_safe, "_fast", lambda loader: loader, lambda: _yaml_outcome(text))
    assert repr(fast) == repr(slow)


@SETTINGS
@given(text=documents)
def test_the_counting_composer_equals_the_c_composer(text: str) -> None:
    """A bound under ``MAX_NODES`` composes with :class:`~yaml_safe._CountingComposer` (PyYAML's composer in
    Python, counting): on documents under both bounds it reads what the loader's C composer reads."""
    counted = _yaml_outcome_bounded(text, yaml_safe.MAX_NODES - 1)
    assert repr(counted) == repr(_yaml_outcome(text))


def _yaml_outcome_bounded(text: str, bound: int) -> tuple[str, Any]:
    def run() -> Any:
        loaded = yaml_safe.load_yaml(text, "f.yaml", bound)
        return loaded.data, dict(loaded.lines)

    return _outcome(run)


# -- merge: the lean run (_lean_list, _new_item) <-> the recording run (merge_list, merge_mapping) ----------

names = st.sampled_from(["A", "B", "C", "{{ project.name }}", "vision"])
values = st.one_of(
    st.none(),
    st.sampled_from(["a", "{{ project.name }}", "{{ nope }}", "{{ 1 / 0 }}", "{% if project %}x{% endif %}"]),
    st.integers(0, 3),
    st.floats(0, 2),
)


def _item(key: str, fallback: str | None = None) -> st.SearchStrategy[dict[str, Any]]:
    required = {key: names} if fallback is None else {}
    optional: dict[str, Any] = {"value": values, "exclude": st.sampled_from([True, False, None])}
    if fallback is not None:
        optional |= {key: names, fallback: names}
    return st.fixed_dictionaries(required, optional=optional)


#: Layer specs: scalars, nested mappings, keyed lists (with a fallback key; exclusions, overrides, items
#: without a key, keys given twice, keys that render alike), lists replaced whole, values of another type.
fragment = st.fixed_dictionaries(
    {},
    optional={
        "image": values,
        "environmentVariables": st.lists(_item("name"), max_size=4),
        "labels": st.one_of(st.lists(_item("name"), max_size=4), st.just("not a list")),
        "nodePools": st.lists(st.sampled_from(["p1", "{{ project.name }}"]), max_size=2),
        "exposedUrls": st.lists(_item("url", "container"), max_size=3),
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
        "security": st.one_of(st.just({}), st.just({"capabilities": []})),
    },
)
stacks = st.lists(fragment, min_size=1, max_size=5)


def _layers(specs: list[dict[str, Any]]) -> list[Layer]:
    return [Layer(f"layer {i}", f"layer{i}.yaml", spec) for i, spec in enumerate(specs)]


class _Recording(engine._Run):
    """The general twin of the lean run: every merge records its paths and provenance."""

    def __init__(self, plan: Any, layers: Any, record: bool = True) -> None:
        super().__init__(plan, layers, record=True)


def _merged(specs: list[dict[str, Any]]) -> Callable[[], Any]:
    def run() -> Any:
        result = merge_layers(SPEC_PLAN, _layers(specs))
        return result.spec, dict(result.set_by), dict(result.excluded), result.warnings

    return run


@SETTINGS
@given(specs=stacks)
def test_the_lean_merge_equals_the_recording_merge(
    specs: list[dict[str, Any]], monkeypatch: pytest.MonkeyPatch
) -> None:
    fast, slow = _twice(monkeypatch, engine, "_Run", _Recording, lambda: _outcome(_merged(specs)))
    assert fast == slow
    assert repr(fast) == repr(slow)


@SETTINGS
@given(specs=stacks)
def test_check_keys_says_the_same_with_and_without_its_clean_walk(
    specs: list[dict[str, Any]], monkeypatch: pytest.MonkeyPatch
) -> None:
    for spec in specs:
        walk: Callable[[], Any] = partial(check_keys, SPEC_PLAN, spec)
        fast, slow = _twice(monkeypatch, engine, "_keys_clean", lambda plan, value: False, walk)
        assert fast == slow
        assert engine._keys_clean(SPEC_PLAN, spec) == (slow == [])
