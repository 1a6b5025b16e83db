"""Rendering of the string values of a combined spec with the bounded expression language of
:mod:`template_engine.expressions`.

Strings without ``{{``/``{%`` are left as they are.  An unknown name, a syntax error, a refused construct or
an exhausted budget is a :class:`~template_engine.errors.Problem` naming the field path and the layer that
wrote the string; the value is left as written, never half-rendered.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from jinja2 import TemplateError, UndefinedError

from template_engine.errors import Location, Problem, RenderError
from template_engine.expressions import (
    MAX_DOCUMENT_EXPRESSIONS,
    MAX_DOCUMENT_TOKENS,
    MAX_TEXT,
    MAX_VALUE,
    Budget,
    ExpressionRefused,
    compile_expression,
    count_tokens,
    evaluate,
)
from template_engine.merge.engine import MergeResult, clone
from template_engine.merge.plan import SPEC_PLAN, PlanNode, item_key
from template_engine.models.spec import WORKER_ONLY_FIELDS
from template_engine.paths import Match, Path
from template_engine.walk import rebuild

__all__ = [
    "MAX_TEXT",
    "MAX_VALUE",
    "RESERVED",
    "Budget",
    "Rendered",
    "document_expression_problems",
    "is_expression",
    "referenced_names",
    "render_composition",
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
    """The bounds of one document as a whole, checked by a linear scan before anything is parsed: at most
    ``MAX_DOCUMENT_EXPRESSIONS`` values with expressions and ``MAX_DOCUMENT_TOKENS`` expression tokens in all.
    (Each value's own bounds are checked when it is parsed and rendered.)"""
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
            size += count_tokens(value[: MAX_TEXT + 2])
            if first_over is None and (count > MAX_DOCUMENT_EXPRESSIONS or size > MAX_DOCUMENT_TOKENS):
                first_over = path
    if first_over is None:
        return []
    return [
        Problem(
            f"this document holds {count:,} values with expressions ({size:,} expression tokens in all)",
            first_over,
            locate(first_over),
            f"at most {MAX_DOCUMENT_EXPRESSIONS:,} values with expressions and {MAX_DOCUMENT_TOKENS:,} "
            "expression tokens in one document (see docs/decisions.md, 'Expressions')",
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
        if not is_expression(text):
            return text
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

    def distinct(path: Path, node: PlanNode, segments: list[Match | int], rendered: list[Any]) -> None:
        problems.extend(_rendered_key_problems(path, node, segments, rendered, locate))

    final = rebuild(spec, plan, text=render, keyed=distinct, sort=True, prune=True)
    return final, problems


def _rendered_key_problems(
    path: Path,
    node: PlanNode,
    segments: list[Match | int],
    rendered: list[Any],
    locate: Callable[[Path], Location | None],
) -> list[Problem]:
    """Two items of one keyed list whose keys are the same once rendered."""
    assert node.key is not None
    problems: list[Problem] = []
    first: dict[Match, Path] = {}
    for segment, after in zip(segments, rendered, strict=True):
        if not isinstance(after, Mapping):
            continue
        key = item_key(after, node.key)
        if key is None:
            continue
        here = (*path, segment)
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
    return problems


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

    def render(text: str, path: Path) -> str:
        if not is_expression(text):
            return text
        try:
            return render_string(text, context, budget)
        except _RENDER_ERRORS as exc:
            why, expected = _problem(text, exc, context)
        problems.append(Problem(f"{replica} {why}", path, locate(path), expected))
        return text

    return rebuild(spec, plan, text=render), problems


@dataclass(frozen=True, slots=True)
class Rendered:
    """The combined specs of one composition in their final form."""

    spec: dict[str, Any]
    master_spec: dict[str, Any] | None
    #: The top-level names the expressions refer to (a variable none of them uses is probably a typo).
    names: frozenset[str]


def render_composition(
    worker: MergeResult,
    master: MergeResult | None,
    same_as_worker: bool,
    context: Mapping[str, Any],
) -> Rendered:
    """``combinedSpec`` and ``combinedMasterSpec`` in their final form (see :func:`render_final`), on one
    budget; raises :class:`~template_engine.errors.RenderError` with every problem of both.

    With ``same_as_worker`` the master is a copy of the rendered worker without the worker-only fields;
    otherwise it is ``master`` (the master merged on its own) rendered, or ``None`` (workers only).
    """
    seen: set[str] = set()
    budget = Budget()  # one budget for every value of this composition
    spec, problems = render_final(
        worker.spec, context, worker.locate, "combinedSpec", SPEC_PLAN, budget, seen
    )
    master_spec: dict[str, Any] | None = None
    if same_as_worker:
        # The worker's rendering, without worker-only fields; a copy, so the two share nothing.
        master_spec = {k: clone(v) for k, v in spec.items() if k not in WORKER_ONLY_FIELDS}
    elif master is not None:
        master_spec, more = render_final(
            master.spec, context, master.locate, "combinedMasterSpec", SPEC_PLAN, budget, seen
        )
        problems += more
    if problems:
        raise RenderError(problems)
    return Rendered(spec, master_spec, frozenset().union(*(referenced_names(text) for text in seen)))
