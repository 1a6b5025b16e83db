"""Rendering of the string values of a combined spec with the bounded expression language of
:mod:`template_engine.expressions`.

Strings without ``{{``/``{%`` are left as they are.  An unknown name, a syntax error, a refused construct or
an exhausted budget is a :class:`~template_engine.errors.Problem` naming the field path and the layer that
wrote the string; the value is left as written, never half-rendered.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from jinja2 import TemplateError, UndefinedError

from template_engine.errors import Location, Problem
from template_engine.expressions import (
    MAX_DOCUMENT_EXPRESSIONS,
    MAX_DOCUMENT_NODES,
    MAX_TEXT,
    MAX_VALUE,
    Budget,
    ExpressionRefused,
    compile_expression,
    evaluate,
)
from template_engine.merge.plan import PlanNode, item_key
from template_engine.paths import Match, Path

__all__ = [
    "MAX_TEXT",
    "MAX_VALUE",
    "RESERVED",
    "Budget",
    "document_expression_problems",
    "is_expression",
    "referenced_names",
    "render_final",
    "render_spec",
    "render_string",
]

#: Names the composition itself provides; user variables may not shadow them.
RESERVED = frozenset({"department", "project", "template"})


def is_expression(text: str) -> bool:
    return "{{" in text or "{%" in text


def referenced_names(text: str) -> frozenset[str]:
    """The top-level names an expression string refers to (empty when it is refused or does not parse)."""
    try:
        return compile_expression(text).names
    except (TemplateError, ExpressionRefused):
        return frozenset()


def render_string(text: str, context: Mapping[str, Any], budget: Budget | None = None) -> str:
    """Render one string; raises ``UndefinedError``, ``ExpressionRefused`` (a ``SecurityError``), a syntax
    error, or the arithmetic/type error of an operation."""
    return evaluate(compile_expression(text), context, budget)


def _problem(text: str, exc: Exception, context: Mapping[str, Any]) -> tuple[str, str]:
    names = "names: " + ", ".join(sorted(context)) if context else "no names are defined"
    if isinstance(exc, ExpressionRefused):
        return (
            f"expression refused by the sandbox: {exc}",
            "output, {% if %} and bounded expressions (see docs/decisions.md, 'Expressions')",
        )
    if isinstance(exc, UndefinedError):
        return f"cannot render {text!r}: {exc.message or exc}", names
    if isinstance(exc, TemplateError):
        return f"cannot render {text!r}: {exc.message or exc}", "a well-formed expression ({{ name }})"
    return f"cannot render {text!r}: {type(exc).__name__}: {exc}", names


def document_expression_problems(
    data: Any, locate: Callable[[Path], Location | None], root: Path = ()
) -> list[Problem]:
    """The bounds of one document as a whole: at most ``MAX_DOCUMENT_EXPRESSIONS`` values with expressions
    and ``MAX_DOCUMENT_NODES`` parts in all.  (Each value's own bounds are checked when it renders.)"""
    count, size = 0, 0
    first_over: Path | None = None
    stack: list[tuple[Any, Path]] = [(data, root)]
    while stack:
        value, path = stack.pop()
        if isinstance(value, Mapping):
            stack.extend((v, (*path, str(k))) for k, v in value.items())
        elif isinstance(value, list):
            stack.extend((v, (*path, i)) for i, v in enumerate(value))
        elif isinstance(value, str) and is_expression(value):
            count += 1
            try:
                size += compile_expression(value).size
            except (TemplateError, ExpressionRefused):
                size += 1
            if first_over is None and (count > MAX_DOCUMENT_EXPRESSIONS or size > MAX_DOCUMENT_NODES):
                first_over = path
    if first_over is None:
        return []
    return [
        Problem(
            f"this document holds {count:,} values with expressions ({size:,} parts in all)",
            first_over,
            locate(first_over),
            f"at most {MAX_DOCUMENT_EXPRESSIONS:,} values with expressions and {MAX_DOCUMENT_NODES:,} parts "
            "in one document (see docs/decisions.md, 'Expressions')",
        )
    ]


_RENDER_ERRORS = (TemplateError, ArithmeticError, TypeError, ValueError, LookupError)


def render_final(
    spec: Mapping[str, Any],
    context: Mapping[str, Any],
    locate: Callable[[Path], Location | None],
    replica: str,
    plan: PlanNode,
    budget: Budget | None = None,
    seen: set[str] | None = None,
) -> tuple[dict[str, Any], list[Problem]]:
    """The final form of ``spec`` in one pass: absent values and empty mappings/lists dropped, mapping keys
    sorted (byte-for-byte stable output), every expression rendered, and every failure reported with its
    path.  Two items of a keyed list that get the same key only once rendered are a problem too."""
    problems: list[Problem] = []
    budget = budget if budget is not None else Budget()

    def render(text: str, path: Path) -> str:
        if seen is not None:
            seen.add(text)
        if budget.left <= 0:  # reported once, at the value that ran out; the rest stay as written
            return text
        try:
            return render_string(text, context, budget)
        except _RENDER_ERRORS as exc:
            why, expected = _problem(text, exc, context)
            problems.append(Problem(f"{replica} {why}", path, locate(path), expected))
            return text

    def walk(value: Any, path: Path, node: PlanNode) -> Any:
        kind = type(value)
        if kind is dict:
            out = {}
            for key in sorted(value):
                item = walk(value[key], (*path, key), node.child(key))
                if item is None or item == {} or item == []:
                    continue
                out[key] = item
            return out
        if kind is list:
            if node.key is None:
                return [walk(item, (*path, index), node) for index, item in enumerate(value)]
            items = []
            for index, item in enumerate(value):
                match = item_key(item, node.key) if isinstance(item, Mapping) else None
                items.append(walk(item, (*path, match if match is not None else index), node))
            _check_rendered_keys(value, items, path, node, locate, problems)
            return items
        if kind is str and is_expression(value):
            return render(value, path)
        return value

    return walk(spec, (), plan), problems


def _check_rendered_keys(
    written: list[Any],
    rendered: list[Any],
    path: Path,
    node: PlanNode,
    locate: Callable[[Path], Location | None],
    problems: list[Problem],
) -> None:
    assert node.key is not None
    first: dict[Match, Path] = {}
    for before, after in zip(written, rendered, strict=True):
        if not isinstance(after, Mapping):
            continue
        key = item_key(after, node.key)
        if key is None:
            continue
        own = item_key(before, node.key) if isinstance(before, Mapping) else None
        here = (*path, own if own is not None else key)
        if key in first:
            other = locate(first[key])
            problems.append(
                Problem(
                    f"two items have the key {key.field}={key.value!r} once rendered",
                    here,
                    locate(here),
                    "a distinct key for each item of a keyed list (an expression in a key must not "
                    "render to a key another item already has)",
                    (other,) if other is not None else (),
                )
            )
        else:
            first[key] = here


def render_spec(
    spec: Mapping[str, Any],
    context: Mapping[str, Any],
    locate: Callable[[Path], Location | None],
    replica: str,
    plan: PlanNode,
    budget: Budget | None = None,
) -> tuple[dict[str, Any], list[Problem]]:
    """Render every expression in ``spec`` (nothing pruned or sorted); the rendered copy and every failure."""
    problems: list[Problem] = []
    budget = budget if budget is not None else Budget()

    def walk(value: Any, path: Path, node: PlanNode) -> Any:
        if isinstance(value, str):
            if not is_expression(value):
                return value
            try:
                return render_string(value, context, budget)
            except _RENDER_ERRORS as exc:
                why, expected = _problem(value, exc, context)
            problems.append(Problem(f"{replica} {why}", path, locate(path), expected))
            return value
        if isinstance(value, Mapping):
            return {k: walk(v, (*path, k), node.child(k)) for k, v in value.items()}
        if isinstance(value, list):
            out = []
            for index, item in enumerate(value):
                match = item_key(item, node.key) if node.key is not None else None
                out.append(walk(item, (*path, match if match is not None else index), node))
            return out
        return value

    return walk(spec, (), plan), problems
