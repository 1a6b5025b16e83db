"""Fuzzing the expression language: generated expressions over the whole allowed grammar each render or are
refused within a fixed budget of work and memory (counted, never timed)."""

from __future__ import annotations

import tracemalloc

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from jinja2 import TemplateError

from template_engine.expressions import (
    FILTERS,
    MAX_VALUE,
    STEP_COST,
    STR_METHODS,
    TESTS,
    VALUE_BUDGET,
    Budget,
)
from template_engine.render import render_string

CONTEXT = {
    "project": {"name": "vision"},
    "department": {"name": "research"},
    "template": {"name": "train"},
    "user": "alice",
    "long": "ab" * 2500,
    "emoji": "😀" * 2000,
}
SLACK = STEP_COST + 4 * MAX_VALUE
MAX_BYTES = 4_000_000
#: What a render may fail with: a refusal (a SecurityError), an unknown name or a syntax error (TemplateError)
#: or the ordinary error of an operation (1 / 0, 'a' < 1).
EXPECTED = (TemplateError, ArithmeticError, TypeError, ValueError, LookupError)

_NAMES = st.sampled_from(
    ["user", "long", "long", "emoji", "emoji", "missing", "project.name", "department.name", "project.nope"]
)
_TEXT = st.text(st.sampled_from("ab x-_/.😀é%"), max_size=12).map(lambda s: f"'{s}'")
_NUMBERS = st.one_of(st.integers(-(10**12), 10**12), st.floats(allow_nan=False, width=32)).map(repr)
_ATOMS = st.one_of(_NAMES, _NAMES, _TEXT, _NUMBERS, st.sampled_from(["true", "false", "none", "''"]))
_UNARY_FILTERS = sorted(name for name in FILTERS if name not in {"replace", "join", "default", "d"})
_TEST_NAMES = sorted(name for name in TESTS if name.isidentifier())
_NO_ARG_METHODS = sorted(m for m in STR_METHODS if m not in {"replace", "join", "partition", "rpartition"})


def _grow(inner: st.SearchStrategy[str]) -> st.SearchStrategy[str]:
    pair = st.tuples(inner, inner)
    return st.one_of(
        st.tuples(inner, st.sampled_from(_UNARY_FILTERS)).map(lambda t: f"({t[0]})|{t[1]}"),
        st.tuples(inner, inner, inner).map(lambda t: f"({t[0]})|replace({t[1]}, {t[2]})"),
        pair.map(lambda t: f"({t[0]})|join({t[1]})"),
        pair.map(lambda t: f"({t[0]})|default({t[1]})"),
        st.tuples(inner, st.sampled_from(_NO_ARG_METHODS)).map(lambda t: f"({t[0]}).{t[1]}()"),
        st.tuples(inner, inner, inner).map(lambda t: f"({t[0]}).replace({t[1]}, {t[2]})"),
        pair.map(lambda t: f"({t[0]}).split({t[1]})"),
        pair.map(lambda t: f"({t[0]}).join({t[1]})"),
        pair.map(lambda t: f"({t[0]}).partition({t[1]})"),
        st.tuples(inner, st.sampled_from(["~", "+", "-", "*", "/", "//", "%", "**"]), inner).map(
            lambda t: f"({t[0]}) {t[1]} ({t[2]})"
        ),
        st.tuples(inner, st.sampled_from(["==", "!=", "<", ">=", "in", "not in"]), inner).map(
            lambda t: f"({t[0]}) {t[1]} ({t[2]})"
        ),
        st.tuples(inner, st.sampled_from(["and", "or"]), inner).map(lambda t: f"({t[0]}) {t[1]} ({t[2]})"),
        inner.map(lambda e: f"not ({e})"),
        inner.map(lambda e: f"-({e})"),
        st.tuples(inner, inner, inner).map(lambda t: f"({t[0]}) if ({t[1]}) else ({t[2]})"),
        st.tuples(inner, st.sampled_from(_TEST_NAMES)).map(lambda t: f"({t[0]}) is {t[1]}"),
        st.tuples(inner, st.integers(-5, 5), st.integers(-5, 5)).map(lambda t: f"({t[0]})[{t[1]}:{t[2]}]"),
        st.tuples(inner, st.integers(-3, 3)).map(lambda t: f"({t[0]})[{t[1]}]"),
    )


EXPRESSIONS = st.recursive(_ATOMS, _grow, max_leaves=12)
VALUES = st.one_of(
    EXPRESSIONS.map(lambda e: "{{ " + e + " }}"),
    st.tuples(EXPRESSIONS, EXPRESSIONS, EXPRESSIONS).map(
        lambda t: "pre-{% if " + t[0] + " %}{{ " + t[1] + " }}{% else %}{{ " + t[2] + " }}{% endif %}"
    ),
    st.lists(EXPRESSIONS, min_size=2, max_size=6).map(lambda es: "-".join("{{ " + e + " }}" for e in es)),
)


@settings(max_examples=400, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow])
@given(VALUES)
def test_every_expression_renders_or_is_refused_within_its_budget(text: str) -> None:
    budget = Budget(VALUE_BUDGET)
    tracemalloc.start()
    try:
        try:
            result = render_string(text, CONTEXT, budget)
        except EXPECTED:
            result = None
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert budget.spent <= VALUE_BUDGET + SLACK
    assert peak < MAX_BYTES
    if result is not None:
        assert isinstance(result, str)
        assert len(result) <= MAX_VALUE
