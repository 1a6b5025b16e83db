"""Sandboxed Jinja2 rendering of the string values of a combined spec.

Strings without ``{{``/``{%`` are left as they are.  An unknown name, a syntax error or a sandbox violation is
a :class:`~template_engine.errors.RenderError` naming the field path and the layer that wrote the string.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from functools import lru_cache
from typing import Any

from jinja2 import StrictUndefined, TemplateError, Undefined, meta, nodes
from jinja2.exceptions import SecurityError
from jinja2.sandbox import SandboxedEnvironment

from template_engine.errors import Location, Problem
from template_engine.merge.plan import PlanNode, item_key
from template_engine.paths import Path

#: Limits that keep every value cheap to render, whoever wrote it (the service renders on every request).
MAX_TEXT = 4096  # characters of a value that holds expressions
MAX_VALUE = 10_000  # characters or items of any string or list an operator, filter or method produces
MAX_RANGE = 1000  # items of range()
MAX_EXPONENT = 256
MAX_RESULT_BITS = 100_000

#: What a value may contain: output, conditionals and expressions.  No loops, macros, call blocks,
#: assignments or ``~`` concatenation, so the work of a value is bounded by its length and the limits above.
ALLOWED_NODES: frozenset[type[nodes.Node]] = frozenset(
    {
        nodes.Template,
        nodes.Output,
        nodes.TemplateData,
        nodes.If,
        nodes.Name,
        nodes.Const,
        nodes.Getattr,
        nodes.Getitem,
        nodes.Slice,
        nodes.Filter,
        nodes.Test,
        nodes.CondExpr,
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

#: Filters whose result is at most linear in their input (``center``, ``format``, ``wordwrap`` are not).
ALLOWED_FILTERS = frozenset(
    {
        "abs", "capitalize", "count", "d", "default", "first", "float", "int", "join", "last", "length",
        "list", "lower", "max", "min", "replace", "reverse", "round", "sort", "string", "title", "trim",
        "unique", "upper", "urlencode",
    }
)  # fmt: skip

#: Methods a value may call, by the type they belong to; none produces more than its input.
ALLOWED_METHODS: dict[type, frozenset[str]] = {
    str: frozenset(
        {
            "lower", "upper", "title", "capitalize", "casefold", "swapcase", "strip", "lstrip", "rstrip",
            "startswith", "endswith", "split", "rsplit", "partition", "rpartition", "count", "find", "rfind",
            "removeprefix", "removesuffix", "isdigit", "isalpha", "isalnum", "islower", "isupper",
        }
    ),
    dict: frozenset({"get", "keys", "values", "items"}),
    list: frozenset({"index", "count"}),
    tuple: frozenset({"index", "count"}),
}  # fmt: skip


def _refuse_if_large(value: Any) -> Any:
    if isinstance(value, str | list | tuple) and len(value) > MAX_VALUE:
        raise SecurityError(f"a value longer than {MAX_VALUE} characters or items is refused")
    return value


def _bounded_range(*args: int) -> range:
    result = range(*args)
    if len(result) > MAX_RANGE:
        raise SecurityError(f"a range longer than {MAX_RANGE} items is refused")
    return result


class _BoundedSandbox(SandboxedEnvironment):
    """Jinja2's sandbox (no attribute escapes) with every way of growing a value bounded or removed."""

    intercepted_binops = frozenset({"**", "*", "%", "+"})

    def __init__(self, **options: Any) -> None:
        super().__init__(**options)
        self.globals = {"range": _bounded_range, "dict": dict}
        self.filters = {name: f for name, f in self.filters.items() if name in ALLOWED_FILTERS}
        for name in ("join", "replace", "list", "string"):
            self.filters[name] = _bounded(self.filters[name])

    def is_safe_attribute(self, obj: Any, attr: str, value: Any) -> bool:
        if attr.startswith("_"):
            return False
        for kind, allowed in ALLOWED_METHODS.items():
            if isinstance(obj, kind):
                return attr in allowed
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
                    and len(seq) * times > MAX_VALUE
                ):
                    raise SecurityError(f"a value longer than {MAX_VALUE} characters or items is refused")
        sized = (str, list, tuple)
        if (
            operator == "+"
            and isinstance(left, sized)
            and isinstance(right, sized)
            and len(left) + len(right) > MAX_VALUE
        ):
            raise SecurityError(f"a value longer than {MAX_VALUE} characters or items is refused")
        return super().call_binop(context, operator, left, right)


def _bounded(filter_function: Callable[..., Any]) -> Callable[..., Any]:
    def bounded(*args: Any, **kwargs: Any) -> Any:
        return _refuse_if_large(filter_function(*args, **kwargs))

    bounded.__dict__.update(filter_function.__dict__)  # keep jinja2's pass_context/pass_environment marks
    return bounded


_ENV = _BoundedSandbox(undefined=StrictUndefined, autoescape=False, keep_trailing_newline=True)


#: Names the composition itself provides (and the sandbox's globals); user variables may not shadow them.
RESERVED = frozenset({"department", "project", "template", "range", "dict"})


def is_expression(text: str) -> bool:
    return "{{" in text or "{%" in text


@lru_cache(maxsize=4096)
def _compile(text: str) -> Any:
    if len(text) > MAX_TEXT:
        raise SecurityError(f"a value with expressions longer than {MAX_TEXT} characters is refused")
    tree = _ENV.parse(text)
    for node in tree.find_all(nodes.Node):
        if type(node) not in ALLOWED_NODES:
            kind = type(node).__name__
            raise SecurityError(f"{kind} is not allowed in a value (only expressions and if)")
    return _ENV.from_string(tree)


@lru_cache(maxsize=4096)
def referenced_names(text: str) -> frozenset[str]:
    """The top-level names an expression string refers to (empty when it does not parse)."""
    try:
        return frozenset(meta.find_undeclared_variables(_ENV.parse(text)))
    except TemplateError:
        return frozenset()


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
            names = "names: " + ", ".join(sorted(context)) if context else "no names are defined"
            try:
                return render_string(value, context)
            except SecurityError as exc:
                why = f"unsafe expression refused by the sandbox: {exc}"
                expected = "output, {% if %} and bounded expressions (see docs/decisions.md)"
            except TemplateError as exc:
                why, expected = f"cannot render {value!r}: {exc.message or exc}", names
            except (ArithmeticError, TypeError, ValueError, LookupError, AttributeError) as exc:
                why, expected = f"cannot render {value!r}: {type(exc).__name__}: {exc}", names
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
