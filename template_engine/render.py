"""Rendering of the string values of a combined spec with the bounded expression language of
:mod:`template_engine.expressions`.

Strings without ``{{``/``{%`` are left as they are.  An unknown name, a syntax error, a refused construct or
an exhausted budget is a :class:`~template_engine.errors.Problem` naming the field path and the layer that
wrote the string; the value is left as written, never half-rendered.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from template_engine.errors import Location, Problem, RenderError
from template_engine.merge.engine import MergeResult, clone
from template_engine.merge.plan import SPEC_PLAN, PlanNode, item_key
from template_engine.models.spec import WORKER_ONLY_FIELDS
from template_engine.paths import Match, Path
from template_engine.suggest import closest, did_you_mean
from template_engine.walk import rebuild

if TYPE_CHECKING:
    from template_engine.expressions import Budget

#: Imported on first use: Jinja2 and the expression language are needed only where a value holds an
#: expression (``is_expression``), and most compositions and documents hold none.
_LAZY = {"MAX_TEXT", "MAX_VALUE", "Budget"}


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        return getattr(_expressions(), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def _expressions() -> Any:
    from template_engine import expressions

    return expressions


__all__ = [
    "MAX_TEXT",  # noqa: F822 - imported on first use (module __getattr__)
    "MAX_VALUE",  # noqa: F822
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
RESERVED = frozenset({"cluster", "department", "project", "template"})


def is_expression(text: str) -> bool:
    """Whether ``text`` holds an expression (``{{`` or ``{%``).  The one-character search comes first: it
    is a ``memchr`` (4 µs over 128 KiB), where a two-character one walks the text (700 µs, CPython 3.11),
    and most texts hold no brace at all."""
    return "{" in text and ("{{" in text or "{%" in text)


def referenced_names(text: str) -> frozenset[str]:
    """The top-level names an expression string refers to (empty when it is refused or does not parse)."""
    from jinja2 import TemplateError

    ex = _expressions()
    try:
        names: frozenset[str] = ex.compile_expression(text).names
    except (TemplateError, ex.ExpressionRefused):
        return frozenset()
    return names


def render_string(text: str, context: Mapping[str, Any], budget: Budget | None = None) -> str:
    """Render one string; raises ``UndefinedError``, ``ExpressionRefused`` (a ``SecurityError``), a syntax
    error, or the arithmetic/type error of an operation."""
    ex = _expressions()
    return ex.evaluate(ex.compile_expression(text), context, budget)  # type: ignore[no-any-return]


def _problem(text: str, exc: Exception, context: Mapping[str, Any]) -> tuple[str, str]:
    """What went wrong in rendering ``text``, and what was expected, in words: never a Python exception's
    class name (issue 21).  An unknown name is expected among the names the context defines; every other
    failure gets the expectation of its own kind (:func:`_operation_problem`)."""
    from jinja2 import TemplateError, UndefinedError

    if isinstance(exc, _expressions().ExpressionRefused):
        return (
            f"expression refused by the sandbox: {exc}",
            "output, {% if %} and bounded expressions (see docs/decisions.md, 'Expressions')",
        )
    if isinstance(exc, UndefinedError):
        message = exc.message or str(exc)
        name = getattr(exc, "name", None)
        if name in _VIEW_NAMES and name not in context:  # a scope the view has not: say how to guard it
            return (
                f"cannot render {text!r}: {name} is not defined at {_view_words(context)}; guard with "
                f"`{{% if {name} is defined %}}` or `| default(...)`",
                f"a value guarded by `{name} is defined` or `| default(...)` where the view has no {name}",
            )
        if _UNDEFINED_NAME.fullmatch(message):  # a top-level name: say the ones there are, and the closest
            names = "names: " + ", ".join(sorted(context)) if context else "no names are defined"
            hint = did_you_mean(closest(name, context)) if isinstance(name, str) else ""
            return f"cannot render {text!r}: {message}{hint}", names
        return f"cannot render {text!r}: {message}", "an index or key that the value has"
    if isinstance(exc, TemplateError):
        return f"cannot render {text!r}: {exc.message or exc}", "a well-formed expression ({{ name }})"
    why, expected = _operation_problem(exc)
    return f"cannot render {text!r}: {why}", expected


#: The names of the scopes a view may lack (a department's own view has no ``project``).
_VIEW_NAMES = frozenset({"cluster", "department", "project"})


def _view_words(context: Mapping[str, Any]) -> str:
    """The view a rendering context is of, in words."""
    if "project" in context:
        return "a project's view"
    return "a department's own view" if "department" in context else "the system's own view"


#: Jinja's message for a top-level name that is not defined (``'user' is undefined``).
_UNDEFINED_NAME = re.compile(r"'[A-Za-z_][A-Za-z0-9_]*' is undefined")


def _operation_problem(exc: Exception) -> tuple[str, str]:
    """An operation of an expression that Python refused (the errors :func:`_render_errors` catches besides
    Jinja's own), as a sentence and what was expected."""
    detail = str(exc).replace("<lambda>()", "the filter")
    if isinstance(exc, ZeroDivisionError):
        return "the expression divides by zero", "a divisor other than zero (guard it with {% if %})"
    if isinstance(exc, OverflowError):
        return (
            f"the expression computes a number too large to represent ({detail})",
            "numbers within the range of a float (about 1.8e308)",
        )
    if isinstance(exc, _expressions().ArgumentsRefused):
        return (
            f"the expression calls a filter or method with arguments it does not take ({detail})",
            "the arguments the filter or method takes (docs/decisions.md, 'Expressions')",
        )
    if isinstance(exc, TypeError):
        return (
            f"the expression applies an operation to a value of a type it does not take ({detail})",
            "operands of the types the operation takes (text with text, numbers with numbers; "
            "| int, | float and | string convert)",
        )
    if isinstance(exc, LookupError):
        return f"the expression looks up a key or index that is not there ({detail})", (
            "an index or key that the value has"
        )
    return (
        f"the expression is given a value it cannot use ({detail})",
        "a value that the operation takes",
    )


def document_expression_problems(
    data: Any, locate: Callable[[Path], Location | None], root: Path = ()
) -> list[Problem]:
    """The bounds of one document as a whole, checked by a linear scan before anything is parsed: at most
    ``MAX_DOCUMENT_EXPRESSIONS`` values with expressions and ``MAX_DOCUMENT_TOKENS`` expression tokens in all.
    (Each value's own bounds are checked when it is parsed and rendered.)"""
    # One scan with paths (issue 20 removed its path-free twin, ``_expression_totals``: it bought 3 % of
    # ``check``'s work, docs/performance.md "Twins measured"); the expression language is imported at the
    # first value that holds an expression, so a document without any imports nothing.
    ex: Any = None
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
            if ex is None:
                ex = _expressions()
            count += 1
            size += ex.count_tokens(value[: ex.MAX_TEXT + 2])
            if first_over is None and (count > ex.MAX_DOCUMENT_EXPRESSIONS or size > ex.MAX_DOCUMENT_TOKENS):
                first_over = path
    if first_over is None:
        return []
    return [
        Problem(
            f"this document holds {count:,} values with expressions ({size:,} expression tokens in all)",
            first_over,
            locate(first_over),
            f"at most {ex.MAX_DOCUMENT_EXPRESSIONS:,} values with expressions and {ex.MAX_DOCUMENT_TOKENS:,} "
            "expression tokens in one document (see docs/decisions.md, 'Expressions')",
        )
    ]


def _render_errors() -> tuple[type[Exception], ...]:
    from jinja2 import TemplateError

    return (TemplateError, ArithmeticError, TypeError, ValueError, LookupError)


class _Budget:
    """The budget of one rendering, made on first use (Jinja2 is imported only for an expression)."""

    __slots__ = ("_budget",)

    def __init__(self, budget: Budget | None = None) -> None:
        self._budget = budget

    def get(self) -> Budget:
        if self._budget is None:
            self._budget = _expressions().Budget()
        return self._budget


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
    return _render_final(spec, context, locate, replica, plan, _Budget(budget), seen)


def _render_final(
    spec: Mapping[str, Any],
    context: Mapping[str, Any],
    locate: Callable[[Path], Location | None],
    replica: str,
    plan: PlanNode,
    box: _Budget,
    seen: set[str] | None,
) -> tuple[dict[str, Any], list[Problem]]:
    """:func:`render_final` on the budget ``box`` (made at the first expression: Jinja2 and the expression
    language are imported only for a spec that holds one).

    One implementation (issue 20 removed its path-free twin, ``_lean_final``: it bought 1 % of ``check``'s
    work and 3 % of ``compose()``, docs/performance.md "Twins measured")."""
    problems: list[Problem] = []

    def render(text: str, path: Path) -> str:
        if not is_expression(text):
            return text
        if seen is not None:
            seen.add(text)
        budget = box.get()
        if budget.left <= 0:  # reported once, at the value that ran out; the rest stay as written
            return text
        try:
            return render_string(text, context, budget)
        except _render_errors() as exc:
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
    box = _Budget(budget)

    def render(text: str, path: Path) -> str:
        if not is_expression(text):
            return text
        try:
            return render_string(text, context, box.get())
        except _render_errors() as exc:
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
    plan: PlanNode = SPEC_PLAN,
) -> Rendered:
    """``combinedSpec`` and ``combinedMasterSpec`` in their final form (see :func:`render_final`), on one
    budget; raises :class:`~template_engine.errors.RenderError` with every problem of both.

    With ``same_as_worker`` the master is a copy of the rendered worker without the worker-only fields;
    otherwise it is ``master`` (the master merged on its own) rendered, or ``None`` (workers only).
    """
    seen: set[str] = set()
    budget = _Budget()  # one budget for every value of this composition (made at its first expression)
    spec, problems = _render_final(worker.spec, context, worker.locate, "combinedSpec", plan, budget, seen)
    master_spec: dict[str, Any] | None = None
    if same_as_worker:
        # The worker's rendering, without worker-only fields; a copy, so the two share nothing.
        master_spec = {k: clone(v) for k, v in spec.items() if k not in WORKER_ONLY_FIELDS}
    elif master is not None:
        master_spec, more = _render_final(
            master.spec, context, master.locate, "combinedMasterSpec", plan, budget, seen
        )
        problems += more
    if problems:
        raise RenderError(problems)
    return Rendered(spec, master_spec, frozenset().union(*(referenced_names(text) for text in seen)))
