"""Rendering of the string values of a combined spec with the bounded expression language of
:mod:`template_engine.expressions`.

Strings without ``{{``/``{%`` are left as they are.  An unknown name, a syntax error, a refused construct or
an exhausted budget is a :class:`~template_engine.errors.Problem` naming the field path and the layer that
wrote the string; the value is left as written, never half-rendered.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from template_engine.errors import Location, Problem, RenderError
from template_engine.merge.engine import MergeResult, clone
from template_engine.merge.plan import _LEAF, SPEC_PLAN, PlanNode, item_key
from template_engine.models.spec import WORKER_ONLY_FIELDS
from template_engine.paths import Match, Path
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
RESERVED = frozenset({"department", "project", "template"})


def is_expression(text: str) -> bool:
    return "{{" in text or "{%" in text


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
    from jinja2 import TemplateError, UndefinedError

    names = "names: " + ", ".join(sorted(context)) if context else "no names are defined"
    if isinstance(exc, _expressions().ExpressionRefused):
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
    count, size = _expression_totals(data)
    if count == 0:
        return []
    ex = _expressions()
    MAX_DOCUMENT_EXPRESSIONS, MAX_DOCUMENT_TOKENS = ex.MAX_DOCUMENT_EXPRESSIONS, ex.MAX_DOCUMENT_TOKENS
    count_tokens, MAX_TEXT = ex.count_tokens, ex.MAX_TEXT
    if count <= MAX_DOCUMENT_EXPRESSIONS and size <= MAX_DOCUMENT_TOKENS:
        return []  # within bounds at the end, so at every point of the scan below
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


def _expression_totals(data: Any) -> tuple[int, int]:
    """The values with expressions in ``data`` and their tokens: the scan above without paths."""
    count, size = 0, 0
    tokens: Callable[[str], int] | None = None
    stack = [data]
    push = stack.extend
    while stack:
        value = stack.pop()
        kind = type(value)
        if kind is dict:
            push(value.values())
        elif kind is list:
            push(value)
        elif kind is str or kind is int or kind is bool or kind is float or value is None:
            if kind is not str or not ("{{" in value or "{%" in value):
                continue
            if tokens is None:
                tokens = _expressions().count_tokens
            count += 1
            size += tokens(value[: _expressions().MAX_TEXT + 2])
        elif isinstance(value, Mapping):
            push(value.values())
        elif isinstance(value, list):
            push(value)
        elif isinstance(value, str) and is_expression(value):
            if tokens is None:
                tokens = _expressions().count_tokens
            count += 1
            size += tokens(value[: _expressions().MAX_TEXT + 2])
    return count, size


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

    def spent(self) -> int | None:
        return None if self._budget is None else self._budget.spent

    def restore(self, spent: int | None) -> None:
        """Back to what was spent before a pass (``None``: nothing was, the budget did not exist yet)."""
        if self._budget is not None:
            self._budget.spent = 0 if spent is None else spent


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
    before = box.spent()
    try:
        return _lean_final(spec, plan, context, box, seen), []
    except _Doubt:
        box.restore(before)  # the long way below renders every expression again, on the same budget
    problems: list[Problem] = []
    budget = box.get()
    errors = _render_errors()

    def render(text: str, path: Path) -> str:
        if not is_expression(text):
            return text
        if seen is not None:
            seen.add(text)
        if budget.left <= 0:  # reported once, at the value that ran out; the rest stay as written
            return text
        try:
            return render_string(text, context, budget)
        except errors as exc:
            why, expected = _problem(text, exc, context)
            problems.append(Problem(f"{replica} {why}", path, locate(path), expected))
            return text

    def distinct(path: Path, node: PlanNode, segments: list[Match | int], rendered: list[Any]) -> None:
        problems.extend(_rendered_key_problems(path, node, segments, rendered, locate))

    final = rebuild(spec, plan, text=render, keyed=distinct, sort=True, prune=True)
    return final, problems


class _Doubt(Exception):
    """The lean rendering met a problem: the full one (with paths) finds and words every problem."""


def _lean_final(
    spec: Mapping[str, Any], plan: PlanNode, context: Mapping[str, Any], box: _Budget, seen: set[str] | None
) -> dict[str, Any]:
    """What :func:`_render_final`'s ``rebuild`` makes when there is no problem to report, without a path per
    value; :class:`_Doubt` at the first problem (a value that does not render, keys that collide)."""

    def render(text: str) -> str:
        if seen is not None:
            seen.add(text)
        budget = box.get()
        if budget.left <= 0:
            return text
        try:
            return render_string(text, context, budget)
        except _render_errors():
            raise _Doubt from None

    def copy(value: Any, node: PlanNode) -> Any:
        kind = type(value)
        if kind is str:
            return render(value) if "{{" in value or "{%" in value else value
        if kind is dict:
            return mapping(value, node)
        if kind is list:
            return sequence(value, node)
        if value is None or kind is int or kind is bool or kind is float:
            return value
        if isinstance(value, str):
            return render(value) if is_expression(value) else value
        if isinstance(value, Mapping):
            return mapping(value, node)
        if isinstance(value, list):
            return sequence(value, node)
        return value

    def mapping(value: Mapping[str, Any], node: PlanNode) -> dict[str, Any]:
        out = {}
        children = node.children
        for name in sorted(value):
            item = value[name]
            kind = type(item)
            if kind is str:
                out[name] = render(item) if "{{" in item or "{%" in item else item
            elif kind is dict:
                found = mapping(item, children.get(name, _LEAF))
                if found:  # an empty mapping is dropped
                    out[name] = found
            elif kind is list:
                listed = sequence(item, children.get(name, _LEAF))
                if listed:
                    out[name] = listed
            elif item is None:
                continue
            elif kind is int or kind is bool or kind is float:
                out[name] = item
            else:
                item = copy(item, children.get(name, _LEAF))
                if item is None or item == {} or item == []:
                    continue
                out[name] = item
        return out

    def sequence(value: list[Any], node: PlanNode) -> list[Any]:
        copied = [mapping(item, node) if type(item) is dict else copy(item, node) for item in value]
        key = node.key
        if key is not None:
            field, fallback = key.field, key.fallback
            try:  # the usual list: every item a mapping with its key field
                found_keys: list[Any] | None = [after.get(field) for after in copied]
            except AttributeError:
                found_keys = None
            if found_keys is not None and None not in found_keys:
                try:
                    if len(set(found_keys)) != len(found_keys):
                        raise _Doubt
                except TypeError:
                    raise _Doubt from None
                return copied
            keys: set[tuple[str, Any]] = set()  # a Match is this tuple (same hash, equal)
            try:
                for after in copied:
                    if type(after) is dict or isinstance(after, Mapping):
                        found = after.get(field)
                        if found is not None:
                            identity = (field, found)
                        elif fallback is not None and (found := after.get(fallback)) is not None:
                            identity = (fallback, found)
                        else:
                            continue
                        if identity in keys:
                            raise _Doubt
                        keys.add(identity)
            except TypeError:
                raise _Doubt from None
        return copied

    final: dict[str, Any] = copy(spec, plan)
    return final


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
) -> Rendered:
    """``combinedSpec`` and ``combinedMasterSpec`` in their final form (see :func:`render_final`), on one
    budget; raises :class:`~template_engine.errors.RenderError` with every problem of both.

    With ``same_as_worker`` the master is a copy of the rendered worker without the worker-only fields;
    otherwise it is ``master`` (the master merged on its own) rendered, or ``None`` (workers only).
    """
    seen: set[str] = set()
    budget = _Budget()  # one budget for every value of this composition (made at its first expression)
    spec, problems = _render_final(
        worker.spec, context, worker.locate, "combinedSpec", SPEC_PLAN, budget, seen
    )
    master_spec: dict[str, Any] | None = None
    if same_as_worker:
        # The worker's rendering, without worker-only fields; a copy, so the two share nothing.
        master_spec = {k: clone(v) for k, v in spec.items() if k not in WORKER_ONLY_FIELDS}
    elif master is not None:
        master_spec, more = _render_final(
            master.spec, context, master.locate, "combinedMasterSpec", SPEC_PLAN, budget, seen
        )
        problems += more
    if problems:
        raise RenderError(problems)
    return Rendered(spec, master_spec, frozenset().union(*(referenced_names(text) for text in seen)))
