"""Sandboxed Jinja2 rendering of the string values of a combined spec.

Strings without ``{{``/``{%`` are left as they are.  An unknown name, a syntax error or a sandbox violation is
a :class:`~template_engine.errors.RenderError` naming the field path and the layer that wrote the string.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from functools import lru_cache
from typing import Any

from jinja2 import StrictUndefined, TemplateError, Undefined, nodes
from jinja2.exceptions import SecurityError
from jinja2.sandbox import SandboxedEnvironment

from template_engine.errors import Location, Problem
from template_engine.merge.plan import PlanNode, item_key
from template_engine.paths import Path

#: Bounds on operators that could exhaust the machine (``10 ** 10 ** 10``, ``'x' * 10 ** 9``).
MAX_EXPONENT = 256
MAX_REPEAT = 100_000
MAX_RESULT_BITS = 100_000

#: Statements allowed in a value: conditionals and assignments.  Loops, macros and call blocks are refused,
#: so the cost of a value is bounded by its length (a nested ``for`` over ``range`` is a denial of service).
ALLOWED_NODES: frozenset[type[nodes.Node]] = frozenset(
    {
        nodes.Template,
        nodes.Output,
        nodes.TemplateData,
        nodes.If,
        nodes.Assign,
        nodes.Name,
        nodes.Const,
        nodes.Getattr,
        nodes.Getitem,
        nodes.Slice,
        nodes.Filter,
        nodes.Test,
        nodes.CondExpr,
        nodes.Concat,
        nodes.Compare,
        nodes.Operand,
        nodes.Add,
        nodes.Sub,
        nodes.Mul,
        nodes.Div,
        nodes.FloorDiv,
        nodes.Mod,
        nodes.Pow,
        nodes.And,
        nodes.Or,
        nodes.Not,
        nodes.Neg,
        nodes.Pos,
        nodes.List,
        nodes.Tuple,
        nodes.Dict,
        nodes.Pair,
        nodes.Keyword,
        nodes.Call,
    }
)

#: Filters whose cost is linear in their input (``center(10**9)``, ``format`` and ``wordwrap`` are not).
ALLOWED_FILTERS = frozenset(
    {
        "abs",
        "capitalize",
        "d",
        "default",
        "first",
        "float",
        "int",
        "join",
        "last",
        "length",
        "list",
        "lower",
        "max",
        "min",
        "replace",
        "reverse",
        "round",
        "sort",
        "string",
        "title",
        "trim",
        "unique",
        "upper",
        "urlencode",
        "count",
    }
)


def _bounded_replace(text: Any, old: str, new: str, count: int | None = None) -> str:
    value = str(text)
    times = value.count(old) if count is None else min(count, value.count(old))
    if len(value) + times * max(len(new) - len(old), 0) > MAX_REPEAT:
        raise SecurityError(f"a replaced value longer than {MAX_REPEAT} characters is refused")
    return value.replace(old, new) if count is None else value.replace(old, new, count)


class _BoundedSandbox(SandboxedEnvironment):
    """The stock sandbox (no attribute escapes, bounded ``range``), with bounded operators, no loops or
    macros, no string formatting, and only filters of linear cost."""

    intercepted_binops = frozenset({"**", "*", "%"})

    def __init__(self, **options: Any) -> None:
        super().__init__(**options)
        self.filters = {name: f for name, f in self.filters.items() if name in ALLOWED_FILTERS}
        self.filters["replace"] = _bounded_replace

    def is_safe_attribute(self, obj: Any, attr: str, value: Any) -> bool:
        if attr in ("format", "format_map") or attr.startswith("_"):
            return False
        return bool(super().is_safe_attribute(obj, attr, value))

    def wrap_str_format(self, value: Any) -> Callable[..., str] | None:
        if super().wrap_str_format(value) is not None:
            raise SecurityError("str.format is refused (a field width can allocate without bound)")
        return None

    def call_binop(self, context: Any, operator: str, left: Any, right: Any) -> Any:
        if operator == "%" and isinstance(left, str):
            raise SecurityError("string formatting with % is refused")
        if operator == "**" and isinstance(right, int | float):
            too_big = isinstance(left, int) and left.bit_length() * abs(right) > MAX_RESULT_BITS
            if abs(right) > MAX_EXPONENT or too_big:
                raise SecurityError("a power above the limits of this sandbox is refused")
        if operator == "*":
            for seq, times in ((left, right), (right, left)):
                if (
                    isinstance(seq, str | list | tuple)
                    and isinstance(times, int)
                    and len(seq) * times > MAX_REPEAT
                ):
                    raise SecurityError(f"a repeated value longer than {MAX_REPEAT} items is refused")
        return super().call_binop(context, operator, left, right)


_ENV = _BoundedSandbox(undefined=StrictUndefined, autoescape=False, keep_trailing_newline=True)


#: Names the composition itself provides; user variables may not shadow them.
RESERVED = frozenset({"department", "project", "template"})


def is_expression(text: str) -> bool:
    return "{{" in text or "{%" in text


@lru_cache(maxsize=4096)
def _compile(text: str) -> Any:
    tree = _ENV.parse(text)
    for node in tree.find_all(nodes.Node):
        if type(node) not in ALLOWED_NODES:
            kind = type(node).__name__
            raise SecurityError(f"{kind} is not allowed in a value (only expressions, if and set)")
    return _ENV.from_string(tree)


def render_string(text: str, context: Mapping[str, Any]) -> str:
    """Render one string; raises jinja2's errors (``UndefinedError``, ``SecurityError``, syntax errors)."""
    result = _compile(text).render(context)
    if isinstance(result, Undefined):  # a lone undefined must never pass as a value
        result._fail_with_undefined_error()
    return str(result)


def render_spec(
    spec: Mapping[str, Any],
    context: Mapping[str, Any],
    locate: Callable[[Path], Location | None],
    replica: str,
    plan: PlanNode,
) -> tuple[dict[str, Any], list[Problem]]:
    """Render every expression in ``spec``; returns the rendered copy and every failure."""
    problems: list[Problem] = []

    def walk(value: Any, path: Path, node: PlanNode) -> Any:
        if isinstance(value, str):
            if not is_expression(value):
                return value
            try:
                return render_string(value, context)
            except SecurityError as exc:
                why = f"unsafe expression refused by the sandbox: {exc}"
            except TemplateError as exc:
                why = f"cannot render {value!r}: {exc.message or exc}"
            except (ArithmeticError, TypeError, ValueError, LookupError, AttributeError) as exc:
                why = f"cannot render {value!r}: {type(exc).__name__}: {exc}"
            problems.append(
                Problem(
                    f"{replica} {why}",
                    path,
                    locate(path),
                    "names: " + ", ".join(sorted(context)) if context else "no names are defined",
                )
            )
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
