"""The expression language of spec values: Jinja2's syntax, a small interpreter, and a cost bounded by
construction.

Jinja2 only *parses* here; nothing is compiled to Python or executed by Jinja2.  Each distinct text is parsed
once per process and checked against an allow-list (:func:`compile_expression`): output, ``{% if %}``,
names and attribute access on the composition's context, constants, filters, tests and string methods whose
output is at most a known multiple of their input, conditionals, comparisons, boolean and arithmetic
operators.  List, tuple and dict literals, sequence repetition, loops, assignments, macros and calls of
anything but an allowed method are refused before anything runs.

While a value renders, every step computes the size of what it will produce from the sizes of its inputs
*before* producing it, refuses anything above :data:`MAX_VALUE`, and charges its work to a
:class:`Budget` (per value, and per composition through the caller).  So the work of one value is at most
``MAX_NODES`` steps of at most ``MAX_VALUE`` characters each, whatever a template author writes.
"""

from __future__ import annotations

import math
import re
import threading
import urllib.parse
from collections import OrderedDict
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, NoReturn

from jinja2 import Environment, TemplateSyntaxError, UndefinedError, nodes
from jinja2.exceptions import SecurityError

#: Characters of a value that holds expressions.
MAX_TEXT = 4096
#: Tokens of one value, counted by a linear scan before Jinja2 parses anything (parsing is about linear in
#: them, so this bounds the parse), nodes of its parsed tree, and how deeply they may nest.
MAX_TOKENS = 512
MAX_NODES = 256
MAX_DEPTH = 32
#: Characters (or items plus characters) of anything an expression produces, the output included.
MAX_VALUE = 10_000
#: Bits of an integer an operator may produce, and digits of a string ``int``/``float`` may read.
MAX_INT_BITS = 4096
MAX_NUMBER_TEXT = 100
#: Work units: each step costs ``STEP_COST`` plus the size of what it reads and produces.
STEP_COST = 20
VALUE_BUDGET = 200_000
COMPOSITION_BUDGET = 1_000_000
#: Values with expressions in one document (a template, a defaults layer, an asset), and their parts.
MAX_DOCUMENT_EXPRESSIONS = 1000
MAX_DOCUMENT_TOKENS = 8192
#: Parsed trees kept for reuse, counted in nodes (memory stays bounded whatever texts arrive).
CACHE_NODES = 100_000


class ExpressionRefused(SecurityError):
    """An expression uses something outside the language, or would cost more than its bounds allow."""


class ArgumentsRefused(TypeError):
    """A filter, test or method called with arguments its parameters do not take (``| int(1, 2, 3)``)."""


class Budget:
    """Work units left to spend; shared by every value of one composition (or one request)."""

    __slots__ = ("limit", "shown", "spent", "what")

    def __init__(
        self, limit: int = COMPOSITION_BUDGET, what: str = "this composition", shown: int | None = None
    ) -> None:
        self.limit = limit
        self.spent = 0
        self.what = what
        self.shown = limit if shown is None else shown  # the limit a message names

    @property
    def left(self) -> int:
        return self.limit - self.spent

    def spend(self, units: int) -> None:
        self.spent += units
        if self.spent > self.limit:
            raise ExpressionRefused(
                f"the expressions of {self.what} need more than {self.shown:,} units of work"
                " (see docs/decisions.md, 'Expressions')"
            )


@dataclass(frozen=True, slots=True)
class Expression:
    """A parsed and checked value: its tree, its size in nodes and the top-level names it reads."""

    text: str
    tree: nodes.Template
    size: int
    names: frozenset[str] = field(default_factory=frozenset)


# -- the allow-list ------------------------------------------------------------------------------------------

_PARSER = Environment(autoescape=False, keep_trailing_newline=True)

_STRUCTURE: frozenset[type[nodes.Node]] = frozenset(
    {nodes.Template, nodes.Output, nodes.TemplateData, nodes.If, nodes.Keyword, nodes.Operand, nodes.Slice}
)
_EXPRESSIONS: frozenset[type[nodes.Node]] = frozenset(
    {
        nodes.Name, nodes.Const, nodes.Getattr, nodes.Getitem, nodes.Filter, nodes.Test, nodes.Call,
        nodes.CondExpr, nodes.Compare, nodes.And, nodes.Or, nodes.Not, nodes.Concat, nodes.Add, nodes.Sub,
        nodes.Mul, nodes.Div, nodes.FloorDiv, nodes.Mod, nodes.Pow, nodes.Neg, nodes.Pos,
    }
)  # fmt: skip
_LITERALS = {nodes.List: "a list literal", nodes.Tuple: "a tuple literal", nodes.Dict: "a dict literal"}
_STATEMENTS: dict[type[nodes.Node], str] = {
    nodes.For: "a for loop",
    nodes.Assign: "{% set %}",
    nodes.Macro: "a macro",
    nodes.CallBlock: "a call block",
}
_COMPARISONS = frozenset({"eq", "ne", "lt", "lteq", "gt", "gteq", "in", "notin"})


def _refuse(message: str) -> NoReturn:
    raise ExpressionRefused(message)


def _check(tree: nodes.Template) -> tuple[int, frozenset[str]]:
    """Every node of ``tree`` is in the language; returns the node count and the names read."""
    count, names = 0, set()
    stack: list[tuple[nodes.Node, int, nodes.Node | None]] = [(tree, 0, None)]
    while stack:
        node, depth, parent = stack.pop()
        count += 1
        if count > MAX_NODES:
            _refuse(f"a value may hold at most {MAX_NODES} expression parts")
        if depth > MAX_DEPTH:
            _refuse(f"expressions may nest at most {MAX_DEPTH} levels deep")
        kind = type(node)
        if kind in _LITERALS:
            _refuse(f"{_LITERALS[kind]} is not allowed (it can multiply sizes)")
        if kind not in _STRUCTURE and kind not in _EXPRESSIONS:
            what = _STATEMENTS.get(kind, kind.__name__)
            _refuse(f"{what} is not allowed in a value (only output, if and bounded expressions)")
        _check_node(node, parent)
        if isinstance(node, nodes.Name):
            names.add(node.name)
        stack.extend((child, depth + 1, node) for child in node.iter_child_nodes())
    return count, frozenset(names)


def _check_node(node: nodes.Node, parent: nodes.Node | None) -> None:
    if isinstance(node, nodes.Slice) and not isinstance(parent, nodes.Getitem):
        _refuse("a slice is only allowed inside [ ]")
    if isinstance(node, nodes.Const) and not isinstance(node.value, str | int | float | bool | type(None)):
        _refuse(f"a constant of type {type(node.value).__name__} is not allowed")
    if isinstance(node, nodes.Const | nodes.TemplateData):
        text = node.value if isinstance(node, nodes.Const) else node.data
        if isinstance(text, str) and not storable(text):
            _refuse("a NUL character or a lone surrogate (\\udc80...) is not allowed in a value")
    if isinstance(node, nodes.Getattr) and node.attr.startswith("_"):
        _refuse(f"attribute {node.attr!r} is not available (names starting with '_' are private)")
    if isinstance(node, nodes.Filter | nodes.Test | nodes.Call) and (node.dyn_args or node.dyn_kwargs):
        _refuse("*args and **kwargs are not allowed")
    if isinstance(node, nodes.Filter) and node.name not in FILTERS:
        _refuse(f"no filter named {node.name!r} (allowed: {', '.join(sorted(FILTERS))})")
    if isinstance(node, nodes.Test) and node.name not in TESTS:
        _refuse(f"no test named {node.name!r} (allowed: {', '.join(sorted(TESTS))})")
    if isinstance(node, nodes.Call):
        if not isinstance(node.node, nodes.Getattr):
            _refuse("only methods of strings can be called (for example user.lower())")
        if node.node.attr not in STR_METHODS:
            _refuse(f"no method named {node.node.attr!r} (allowed: {', '.join(sorted(STR_METHODS))})")
    if isinstance(node, nodes.Operand) and node.op not in _COMPARISONS:
        _refuse(f"comparison {node.op!r} is not allowed")
    if isinstance(node, nodes.Mul):
        for side in (node.left, node.right):
            if isinstance(side, nodes.Const) and isinstance(side.value, str):
                _refuse("repeating a string with * is not allowed (it can multiply sizes)")


@dataclass(frozen=True, slots=True)
class _Refusal:
    syntax: bool
    message: str
    lineno: int


#: A token of an expression, for counting only: names and numbers, quoted strings, any other character.
_TOKEN = re.compile(r"""[A-Za-z0-9_.]++|'[^']*+'?|"[^"]*+"?|[^\sA-Za-z0-9_.'"]""")


def count_tokens(text: str) -> int:
    """The tokens inside ``{{ }}`` and ``{% %}`` of ``text``, by one linear scan (no parsing)."""
    count, position = 0, 0
    while True:
        starts = [i for i in (text.find("{{", position), text.find("{%", position)) if i >= 0]
        if not starts:
            return count
        start = min(starts)
        end = text.find("}}" if text.startswith("{{", start) else "%}", start + 2)
        count += 1 + len(_TOKEN.findall(text, start + 2, end if end >= 0 else len(text)))
        if end < 0:
            return count
        position = end + 2


def storable(text: str) -> bool:
    """No NUL and no lone surrogate: text that every database and every export can hold."""
    if "\x00" in text:
        return False
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


class _Cache:
    """The parsed and checked texts, least recently used first, within :data:`CACHE_NODES` nodes."""

    def __init__(self) -> None:
        self.entries: OrderedDict[str, Expression | _Refusal] = OrderedDict()
        self.nodes = 0
        self.lock = threading.Lock()

    def get(self, text: str) -> Expression | _Refusal | None:
        with self.lock:
            found = self.entries.get(text)
            if found is not None:
                self.entries.move_to_end(text)
            return found

    def put(self, text: str, found: Expression | _Refusal) -> None:
        size = found.size if isinstance(found, Expression) else 1
        with self.lock:
            if text in self.entries:
                return
            self.entries[text] = found
            self.nodes += size
            while self.nodes > CACHE_NODES and self.entries:
                _, old = self.entries.popitem(last=False)
                self.nodes -= old.size if isinstance(old, Expression) else 1


_CACHE = _Cache()


def _compile_cached(text: str) -> Expression | _Refusal:
    found = _CACHE.get(text)
    if found is None:
        found = _compile(text)
        _CACHE.put(text, found)
    return found


def _compile(text: str) -> Expression | _Refusal:
    if len(text) > MAX_TEXT:
        return _Refusal(False, f"a value with expressions may be at most {MAX_TEXT} characters", 1)
    tokens = count_tokens(text)
    if tokens > MAX_TOKENS:
        return _Refusal(
            False, f"a value may hold at most {MAX_TOKENS} expression tokens (it has {tokens})", 1
        )
    try:
        tree = _PARSER.parse(text)
    except TemplateSyntaxError as exc:
        return _Refusal(True, exc.message or str(exc), exc.lineno)
    except RecursionError:
        return _Refusal(False, f"expressions may nest at most {MAX_DEPTH} levels deep", 1)
    except ValueError as exc:  # an integer literal past Python's digit limit
        return _Refusal(False, f"a number in the expression is too long ({exc.__class__.__name__})", 1)
    try:
        size, names = _check(tree)
    except ExpressionRefused as exc:
        return _Refusal(False, str(exc), 1)
    return Expression(text, tree, size, names)


def compile_expression(text: str) -> Expression:
    """Parse and check ``text`` once per process; raises :class:`ExpressionRefused` or a syntax error."""
    found = _compile_cached(text)
    if isinstance(found, _Refusal):
        if found.syntax:
            raise TemplateSyntaxError(found.message, found.lineno)
        raise ExpressionRefused(found.message)
    return found


# -- sizes ---------------------------------------------------------------------------------------------------


class UndefinedName(UndefinedError):
    """A value that is not defined was used: ``name`` is the first part of it that is missing (``project``
    for ``project.name`` at a view without a project)."""

    def __init__(self, name: str) -> None:
        super().__init__(f"{name!r} is undefined")
        self.name = name


class Missing:
    """A name or attribute the context does not have; only ``default`` and ``defined`` accept it.

    An attribute or item of a missing value is missing too (``project.name`` where ``project`` is not
    defined), as with Jinja2's ``ChainableUndefined``, so ``{{ project.name | default('shared') }}`` and
    ``{% if project.name is defined %}`` work at a view without a project; anything else that uses it (the
    output, an operation, a comparison, a condition) fails, naming ``first``, the first part that is missing.
    """

    __slots__ = ("first", "name")

    def __init__(self, name: str, first: str | None = None) -> None:
        self.name = name
        self.first = name if first is None else first

    def fail(self) -> NoReturn:
        raise UndefinedName(self.first)


def size_of(value: Any) -> int:
    """The size a value counts as: characters, items plus their sizes, digits of a number."""
    if isinstance(value, str):
        return len(value)
    if isinstance(value, bool) or value is None:
        return 1
    if isinstance(value, int):
        return value.bit_length() // 3 + 1
    if isinstance(value, list | tuple):
        return len(value) + sum(size_of(item) for item in value)
    if isinstance(value, Mapping):
        return len(value)
    return 24


def _fit(bound: int, what: str = "a value") -> int:
    if bound > MAX_VALUE:
        _refuse(f"{what} longer than {MAX_VALUE:,} characters or items is not allowed")
    return bound


def _text(value: Any) -> str:
    if isinstance(value, Missing):
        value.fail()
    return value if isinstance(value, str) else str(value)


def _str_bound(value: Any) -> int:
    """An upper bound of ``len(str(value))`` computed without building it."""
    if isinstance(value, str):
        return len(value)
    if isinstance(value, list | tuple):  # repr escapes a character in at most 10
        return 2 + sum(4 + 10 * _str_bound(item) for item in value)
    if isinstance(value, Mapping):
        return 2 + sum(8 + 10 * (_str_bound(k) + _str_bound(v)) for k, v in value.items())
    return size_of(value) + 24


def _string(value: Any, what: str) -> str:
    if isinstance(value, Missing):
        value.fail()
    if not isinstance(value, str):
        raise TypeError(f"{what} needs a string, not {type(value).__name__}")
    return value


def _replaced_length(text: str, old: str, new: str, count: int | None) -> int:
    occurrences = len(text) + 1 if old == "" else text.count(old)
    if count is not None and count >= 0:
        occurrences = min(occurrences, count)
    return len(text) + occurrences * (len(new) - len(old))


def _is_number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def _kind(value: Any) -> str:
    """The type of an operand, as a message names it: ``a str``, ``an int``, ``None``."""
    if value is None:
        return "None"
    name = type(value).__name__
    return f"{'an' if name[0] in 'aeiou' else 'a'} {name}"


def _number(value: Any, what: str) -> int | float:
    if isinstance(value, Missing):
        value.fail()
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise TypeError(f"{what} needs a number, not {type(value).__name__}")
    return value


# -- filters, tests and methods ------------------------------------------------------------------------------

#: A filter or method: the bound of its output from its arguments, then the operation itself.
Bound = Callable[..., int]


@dataclass(frozen=True, slots=True)
class Operation:
    bound: Bound
    run: Callable[..., Any]
    accepts_missing: bool = False
    #: A callable with the operation's parameters, where ``run``'s own do not say them (a string method's).
    takes: Callable[..., Any] | None = None

    def accepts(self, value: Any, args: Sequence[Any], kwargs: Mapping[str, Any]) -> bool:
        """Whether the operation's parameters take these arguments (asked once a call has failed)."""
        import inspect

        try:
            inspect.signature(self.takes or self.run).bind(value, *args, **kwargs)
        except TypeError:
            return False
        return True


def _scaled(factor: int) -> Bound:
    return lambda value, *_a, **_k: factor * size_of(value)


def _cased(value: Any, *_a: Any, **_k: Any) -> int:
    """Changing case keeps the length of ASCII text (an O(1) check) and at most triples any other."""
    return size_of(value) if isinstance(value, str) and value.isascii() else 3 * size_of(value)


def _one(*_a: Any, **_k: Any) -> int:
    return 1


def _default(value: Any, default: Any = "", boolean: bool = False) -> Any:
    if isinstance(value, Missing) or (boolean and not value):
        return default
    return value


def _replace(value: Any, old: Any, new: Any, count: Any = None) -> str:
    text, before, after = _string(value, "replace"), _text(old), _text(new)
    return text.replace(before, after) if count is None else text.replace(before, after, int(count))


def _replace_bound(text: Any, old: Any, new: Any, count: Any = None) -> int:
    text = _string(text, "replace")
    return _replaced_length(text, _text(old), _text(new), None if count is None else int(count))


def _join(value: Any, separator: Any = "") -> str:
    return _text(separator).join(_text(item) for item in _sequence(value, "join"))


def _join_bound(value: Any, separator: Any = "") -> int:
    items = _sequence(value, "join")
    return sum(_str_bound(item) for item in items) + len(_text(separator)) * max(len(items) - 1, 0)


def _sequence(value: Any, what: str) -> Sequence[Any]:
    if isinstance(value, Missing):
        value.fail()
    if not isinstance(value, str | list | tuple):
        raise TypeError(f"{what} needs a string or a list, not {type(value).__name__}")
    return value


def _to_int(value: Any, default: Any = 0, base: Any = 10) -> Any:
    if isinstance(value, str) and len(value.strip()) > MAX_NUMBER_TEXT:
        _refuse(f"a number written with more than {MAX_NUMBER_TEXT} characters is not allowed")
    try:
        if isinstance(value, str):
            return int(value, int(base))
        return int(value)
    except (TypeError, ValueError, OverflowError):
        return default


def _to_float(value: Any, default: Any = 0.0) -> Any:
    if isinstance(value, str) and len(value.strip()) > MAX_NUMBER_TEXT:
        _refuse(f"a number written with more than {MAX_NUMBER_TEXT} characters is not allowed")
    try:
        return float(value)
    except (TypeError, ValueError, OverflowError):
        return default


def _round(value: Any, precision: Any = 0, method: Any = "common") -> Any:
    number = _number(value, "round")
    digits = int(precision)
    if not -20 <= digits <= 20:
        _refuse("round takes a precision between -20 and 20")
    if method == "ceil":
        return math.ceil(number * 10**digits) / 10**digits
    if method == "floor":
        return math.floor(number * 10**digits) / 10**digits
    return round(number, digits)


def _first(value: Any) -> Any:
    items = _sequence(value, "first")
    return items[0] if items else Missing("first of an empty sequence")


def _last(value: Any) -> Any:
    items = _sequence(value, "last")
    return items[-1] if items else Missing("last of an empty sequence")


def _reverse(value: Any) -> Any:
    items = _sequence(value, "reverse")
    return items[::-1] if isinstance(items, str) else list(reversed(items))


def _unique(value: Any) -> list[Any]:
    return list(dict.fromkeys(_sequence(value, "unique")))


def _urlencode(value: Any) -> str:
    return urllib.parse.quote(_string(value, "urlencode"), safe="/")


def _length(value: Any) -> int:
    if isinstance(value, Missing):
        value.fail()
    if not isinstance(value, str | list | tuple | Mapping):
        raise TypeError(f"length needs a string or a list, not {type(value).__name__}")
    return len(value)


FILTERS: dict[str, Operation] = {
    "default": Operation(lambda v, default="", boolean=False: max(size_of(v) if not isinstance(v, Missing)
                                                                  else 0, size_of(default)), _default,
                         accepts_missing=True),
    "lower": Operation(_cased, lambda v: _string(v, "lower").lower()),
    "upper": Operation(_cased, lambda v: _string(v, "upper").upper()),
    "title": Operation(_cased, lambda v: _string(v, "title").title()),
    "capitalize": Operation(_cased, lambda v: _string(v, "capitalize").capitalize()),
    "trim": Operation(_scaled(1), lambda v, chars=None: _string(v, "trim").strip(chars)),
    "replace": Operation(_replace_bound, _replace),
    "length": Operation(_one, _length),
    "count": Operation(_one, _length),
    "string": Operation(lambda v: _str_bound(v), _text),
    "int": Operation(lambda v, default=0, base=10: MAX_NUMBER_TEXT, _to_int),
    "float": Operation(lambda v, default=0.0: MAX_NUMBER_TEXT, _to_float),
    "abs": Operation(_scaled(1), lambda v: abs(_number(v, "abs"))),
    "round": Operation(lambda v, precision=0, method="common": MAX_NUMBER_TEXT, _round),
    "first": Operation(_scaled(1), _first),
    "last": Operation(_scaled(1), _last),
    "join": Operation(_join_bound, _join),
    "urlencode": Operation(_scaled(12), _urlencode),
    "reverse": Operation(_scaled(1), _reverse),
    "sort": Operation(_scaled(2), lambda v: sorted(_sequence(v, "sort"))),
    "unique": Operation(_scaled(2), _unique),
    "list": Operation(_scaled(2), lambda v: list(_sequence(v, "list"))),
    "min": Operation(_scaled(1), lambda v: min(_sequence(v, "min"))),
    "max": Operation(_scaled(1), lambda v: max(_sequence(v, "max"))),
}  # fmt: skip
FILTERS["d"] = FILTERS["default"]


def _is(predicate: Callable[..., bool], accepts_missing: bool = False) -> Operation:
    return Operation(_one, predicate, accepts_missing)


TESTS: dict[str, Operation] = {
    "defined": _is(lambda v: not isinstance(v, Missing), True),
    "undefined": _is(lambda v: isinstance(v, Missing), True),
    "none": _is(lambda v: v is None),
    "number": _is(lambda v: isinstance(v, int | float) and not isinstance(v, bool)),
    "string": _is(lambda v: isinstance(v, str)),
    "boolean": _is(lambda v: isinstance(v, bool)),
    "true": _is(lambda v: v is True),
    "false": _is(lambda v: v is False),
    "odd": _is(lambda v: _number(v, "odd") % 2 == 1),
    "even": _is(lambda v: _number(v, "even") % 2 == 0),
    "divisibleby": _is(lambda v, n: _number(v, "divisibleby") % _number(n, "divisibleby") == 0),
    "lower": _is(lambda v: _string(v, "lower").islower()),
    "upper": _is(lambda v: _string(v, "upper").isupper()),
    "eq": _is(lambda v, other: bool(v == other)),
    "ne": _is(lambda v, other: bool(v != other)),
    "lt": _is(lambda v, other: bool(v < other)),
    "le": _is(lambda v, other: bool(v <= other)),
    "gt": _is(lambda v, other: bool(v > other)),
    "ge": _is(lambda v, other: bool(v >= other)),
    "in": _is(lambda v, seq: v in _sequence(seq, "in") if not isinstance(seq, Mapping) else v in seq),
}
for _alias, _name in (("equalto", "eq"), ("==", "eq"), ("!=", "ne"), ("<", "lt"), ("<=", "le"),
                      (">", "gt"), (">=", "ge"), ("lessthan", "lt"), ("greaterthan", "gt")):  # fmt: skip
    TESTS[_alias] = TESTS[_name]


def _sub_range(self: str, sub: Any, start: Any = None, end: Any = None, /) -> None:
    """The parameters of ``str.startswith``, ``endswith``, ``count``, ``find`` and ``rfind`` (their builtins
    carry no signature)."""


def _method(name: str, bound: Bound) -> Operation:
    takes = _sub_range if name in ("startswith", "endswith", "count", "find", "rfind") else getattr(str, name)
    run = lambda s, *args: getattr(_string(s, name), name)(*(_text(a) for a in args))  # noqa: E731
    return Operation(bound, run, takes=takes)


def _split_method(name: str) -> Operation:
    def run(text: Any, separator: Any = None, maxsplit: Any = -1) -> list[str]:
        sep = None if separator is None else _text(separator)
        result: list[str] = getattr(_string(text, name), name)(sep, int(maxsplit))
        return result

    return Operation(lambda s, *_a: 2 * size_of(s) + 1, run)


STR_METHODS: dict[str, Operation] = {
    **{m: _method(m, _cased) for m in ("lower", "upper", "title", "capitalize", "casefold", "swapcase")},
    **{m: _method(m, _scaled(1)) for m in ("strip", "lstrip", "rstrip", "removeprefix", "removesuffix")},
    **{m: _method(m, _one) for m in ("startswith", "endswith", "count", "find", "rfind", "isdigit",
                                     "isalpha", "isalnum", "islower", "isupper", "isspace")},
    "partition": Operation(lambda s, *_a: size_of(s) + 3,
                           lambda s, sep: list(_string(s, "partition").partition(_text(sep)))),
    "rpartition": Operation(lambda s, *_a: size_of(s) + 3,
                            lambda s, sep: list(_string(s, "rpartition").rpartition(_text(sep)))),
    "split": _split_method("split"),
    "rsplit": _split_method("rsplit"),
    "replace": Operation(_replace_bound, _replace),
    "join": Operation(lambda sep, items: _join_bound(items, sep), lambda sep, items: _join(items, sep)),
}  # fmt: skip


# -- evaluation ----------------------------------------------------------------------------------------------


class _Evaluator:
    """Evaluates one checked tree against a context, charging every step to ``budget``."""

    __slots__ = ("budget", "context")

    def __init__(self, context: Mapping[str, Any], budget: Budget) -> None:
        self.context = context
        self.budget = budget

    def produce(self, bound: int, what: str = "a value") -> None:
        self.budget.spend(STEP_COST + _fit(bound, what))

    # statements

    def render(self, tree: nodes.Template) -> str:
        parts: list[str] = []
        length = 0
        for text in self.statements(tree.body):
            length += len(text)
            _fit(length, "the rendered value")
            parts.append(text)
        return "".join(parts)

    def statements(self, body: Sequence[nodes.Node]) -> Any:
        for node in body:
            if isinstance(node, nodes.Output):
                for child in node.nodes:
                    if isinstance(child, nodes.TemplateData):
                        yield child.data
                    else:
                        value = self.eval(child)
                        self.produce(_str_bound(value), "an output")
                        yield _text(value)
            else:
                assert isinstance(node, nodes.If)
                yield from self.branch(node)

    def branch(self, node: nodes.If) -> Any:
        if self.truth(self.eval(node.test)):
            yield from self.statements(node.body)
            return
        for elif_ in node.elif_:
            if self.truth(self.eval(elif_.test)):
                yield from self.statements(elif_.body)
                return
        yield from self.statements(node.else_)

    # expressions

    def truth(self, value: Any) -> bool:
        if isinstance(value, Missing):
            value.fail()
        return bool(value)

    def eval(self, node: nodes.Node) -> Any:
        self.budget.spend(STEP_COST)
        return _DISPATCH[type(node)](self, node)

    def name(self, node: nodes.Name) -> Any:
        return self.context[node.name] if node.name in self.context else Missing(node.name)

    def const(self, node: nodes.Const) -> Any:
        self.budget.spend(size_of(node.value))
        return node.value

    def getattr(self, node: nodes.Getattr) -> Any:
        owner = self.eval(node.node)
        return self.lookup(owner, node.attr, _dotted(node))

    def lookup(self, owner: Any, key: Any, name: str) -> Any:
        if isinstance(owner, Missing):  # chained: only ``default`` or ``defined`` may take it
            return Missing(name, owner.first)
        if isinstance(owner, Mapping):
            return owner[key] if key in owner else Missing(name)
        if isinstance(key, str):
            _refuse(f"{name!r}: a {type(owner).__name__} has no fields (methods must be called)")
        return Missing(name)

    def getitem(self, node: nodes.Getitem) -> Any:
        owner = self.eval(node.node)
        if isinstance(node.arg, nodes.Slice):
            items = _sequence(owner, "a slice")
            start, stop, step = (
                None if part is None else int(_number(self.eval(part), "a slice"))
                for part in (node.arg.start, node.arg.stop, node.arg.step)
            )
            self.produce(size_of(items))
            return items[start:stop:step]
        key = self.eval(node.arg)
        if isinstance(owner, str | list | tuple):
            index = int(_number(key, "an index"))
            return (
                owner[index]
                if -len(owner) <= index < len(owner)
                else Missing(f"{_dotted(node.node)}[{index}]")
            )
        return self.lookup(owner, key, f"{_dotted(node.node)}[{key!r}]")

    def call_operation(
        self, operation: Operation, value: Any, args: list[Any], kwargs: dict[str, Any]
    ) -> Any:
        if isinstance(value, Missing) and not operation.accepts_missing:
            value.fail()
        for arg in (*args, *kwargs.values()):
            if isinstance(arg, Missing):
                arg.fail()
        self.budget.spend(size_of(value) + sum(size_of(a) for a in (*args, *kwargs.values())))
        try:
            self.produce(operation.bound(value, *args, **kwargs))
            return operation.run(value, *args, **kwargs)
        except TypeError as exc:
            if not isinstance(exc, ArgumentsRefused) and not operation.accepts(value, args, kwargs):
                raise ArgumentsRefused(str(exc)) from exc
            raise

    def arguments(self, node: nodes.Filter | nodes.Test | nodes.Call) -> tuple[list[Any], dict[str, Any]]:
        return [self.eval(a) for a in node.args], {
            str(k.key): self.eval(k.value) for k in node.kwargs if isinstance(k, nodes.Keyword)
        }

    def filter(self, node: nodes.Filter) -> Any:
        assert node.node is not None
        value = self.eval(node.node)
        args, kwargs = self.arguments(node)
        return self.call_operation(FILTERS[node.name], value, args, kwargs)

    def test(self, node: nodes.Test) -> Any:
        value = self.eval(node.node)
        args, kwargs = self.arguments(node)
        return self.call_operation(TESTS[node.name], value, args, kwargs)

    def call(self, node: nodes.Call) -> Any:
        target = node.node
        assert isinstance(target, nodes.Getattr)
        owner = self.eval(target.node)
        if not isinstance(owner, str):
            if isinstance(owner, Missing):
                owner.fail()
            _refuse(f"method {target.attr!r} is only available on strings, not on {type(owner).__name__}")
        args, kwargs = self.arguments(node)
        if kwargs:
            _refuse(f"method {target.attr!r} takes no keyword arguments here")
        return self.call_operation(STR_METHODS[target.attr], owner, args, {})

    def condexpr(self, node: nodes.CondExpr) -> Any:
        if self.truth(self.eval(node.test)):
            return self.eval(node.expr1)
        return "" if node.expr2 is None else self.eval(node.expr2)

    def compare(self, node: nodes.Compare) -> Any:
        left = self.eval(node.expr)
        for operand in node.ops:
            right = self.eval(operand.expr)
            for side in (left, right):
                if isinstance(side, Missing):
                    side.fail()
            self.budget.spend(size_of(left) + size_of(right))
            if not _COMPARE[operand.op](left, right):
                return False
            left = right
        return True

    def and_(self, node: nodes.And) -> Any:
        left = self.eval(node.left)
        return self.eval(node.right) if self.truth(left) else left

    def or_(self, node: nodes.Or) -> Any:
        left = self.eval(node.left)
        return left if self.truth(left) else self.eval(node.right)

    def not_(self, node: nodes.Not) -> Any:
        return not self.truth(self.eval(node.node))

    def concat(self, node: nodes.Concat) -> Any:
        values = [self.eval(child) for child in node.nodes]
        self.produce(sum(_str_bound(v) for v in values))
        return "".join(_text(v) for v in values)

    def binary(self, node: nodes.BinExpr) -> Any:
        left, right = self.eval(node.left), self.eval(node.right)
        for side in (left, right):
            if isinstance(side, Missing):
                side.fail()
        op = node.operator
        if op == "+" and isinstance(left, str) and isinstance(right, str):
            self.produce(size_of(left) + size_of(right))
            return left + right
        if op == "+" and isinstance(left, list) and isinstance(right, list):
            self.produce(size_of(left) + size_of(right))
            return left + right
        if op == "*" and (isinstance(left, str | list | tuple) or isinstance(right, str | list | tuple)):
            _refuse("repeating a string or list with * is not allowed (it can multiply sizes)")
        if op == "%" and isinstance(left, str):
            _refuse("string formatting with % is not allowed")
        if not (_is_number(left) and _is_number(right)):
            raise TypeError(f"{op} cannot combine {_kind(left)} and {_kind(right)}")
        a, b = _number(left, op), _number(right, op)
        if isinstance(a, int) and isinstance(b, int):
            bits = max(a.bit_length(), b.bit_length()) + 1
            if op == "*":
                bits = a.bit_length() + b.bit_length()
            elif op == "**":
                if b > MAX_INT_BITS or a.bit_length() * max(b, 0) > MAX_INT_BITS:
                    _refuse(f"a power above {MAX_INT_BITS} bits is not allowed")
                bits = a.bit_length() * max(b, 0)
            if bits > MAX_INT_BITS:
                _refuse(f"an integer above {MAX_INT_BITS} bits is not allowed")
            self.budget.spend(bits)
        elif op == "**" and abs(b) > MAX_INT_BITS:
            _refuse(f"a power above {MAX_INT_BITS} is not allowed")
        return _ARITHMETIC[op](a, b)

    def unary(self, node: nodes.UnaryExpr) -> Any:
        value = _number(self.eval(node.node), node.operator)
        return -value if node.operator == "-" else +value


def _dotted(node: nodes.Node) -> str:
    if isinstance(node, nodes.Name):
        return node.name
    if isinstance(node, nodes.Getattr):
        return f"{_dotted(node.node)}.{node.attr}"
    return "value"


_COMPARE: dict[str, Callable[[Any, Any], bool]] = {
    "eq": lambda a, b: bool(a == b),
    "ne": lambda a, b: bool(a != b),
    "lt": lambda a, b: bool(a < b),
    "lteq": lambda a, b: bool(a <= b),
    "gt": lambda a, b: bool(a > b),
    "gteq": lambda a, b: bool(a >= b),
    "in": lambda a, b: a in (b if isinstance(b, Mapping) else _sequence(b, "in")),
    "notin": lambda a, b: a not in (b if isinstance(b, Mapping) else _sequence(b, "not in")),
}
_ARITHMETIC: dict[str, Callable[[Any, Any], Any]] = {
    "+": lambda a, b: a + b,
    "-": lambda a, b: a - b,
    "*": lambda a, b: a * b,
    "/": lambda a, b: a / b,
    "//": lambda a, b: a // b,
    "%": lambda a, b: a % b,
    "**": lambda a, b: a**b,
}
_DISPATCH: dict[type[nodes.Node], Callable[[_Evaluator, Any], Any]] = {
    nodes.Name: _Evaluator.name,
    nodes.Const: _Evaluator.const,
    nodes.Getattr: _Evaluator.getattr,
    nodes.Getitem: _Evaluator.getitem,
    nodes.Filter: _Evaluator.filter,
    nodes.Test: _Evaluator.test,
    nodes.Call: _Evaluator.call,
    nodes.CondExpr: _Evaluator.condexpr,
    nodes.Compare: _Evaluator.compare,
    nodes.And: _Evaluator.and_,
    nodes.Or: _Evaluator.or_,
    nodes.Not: _Evaluator.not_,
    nodes.Concat: _Evaluator.concat,
    **{kind: _Evaluator.binary for kind in (nodes.Add, nodes.Sub, nodes.Mul, nodes.Div, nodes.FloorDiv,
                                            nodes.Mod, nodes.Pow)},
    nodes.Neg: _Evaluator.unary,
    nodes.Pos: _Evaluator.unary,
}  # fmt: skip


def evaluate(expression: Expression, context: Mapping[str, Any], budget: Budget | None = None) -> str:
    """Render a compiled value.  Work is charged to ``budget`` (a fresh per-value budget when ``None``) and
    capped at :data:`VALUE_BUDGET` for this value whatever the budget has left."""
    local = Budget(VALUE_BUDGET, "one value")
    if budget is not None and budget.left < VALUE_BUDGET:
        local = Budget(max(budget.left, 0), budget.what, budget.limit)
    try:
        result = _Evaluator(context, local).render(expression.tree)
        if not storable(result):
            _refuse("the value would hold a NUL character or a lone surrogate")
        return result
    finally:
        if budget is not None:
            budget.spent += local.spent
