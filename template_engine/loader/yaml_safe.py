"""A hardened YAML reader that keeps line numbers.

Only the safe scalar types are constructed; duplicate keys are errors naming both lines; the values of a
document are bounded, each alias counted every time it is used (a "billion laughs" document is refused), and
recursive aliases are refused; a file holds at most one
document.  Numbers are finite (``.inf``, ``.nan`` and a number too large for a float, such as ``1.0e+400`` or
the plain ``1e400`` that YAML 1.1 reads as text, are refused) and integers have at most :data:`MAX_INT_DIGITS`
digits.  Text (keys included) holds no NUL character and no lone surrogate (``"\\udfff"``): no database
stores them.  Every such problem of a file is reported at once, each with its field path and line; alongside
the data it returns a line map from every field path to its 1-based line and column.

Speed (docs/performance.md): a document is first built by a lean pass that records no paths and no lines and
only *detects* that something needs saying; any doubt (an anchor, a problem, an unusual node) sends it through
the full builder, which finds and words every problem exactly as before.  The line map of a document that
built cleanly is made on first use, by the full builder over the same text (most maps are never read: they
serve error messages and provenance).
"""

from __future__ import annotations

import math
import re
import zlib
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from sys import intern
from typing import Any, cast

import yaml
from yaml.composer import Composer, ComposerError
from yaml.events import AliasEvent
from yaml.nodes import MappingNode, Node, ScalarNode, SequenceNode

from template_engine.errors import InputError, Location, Problem, TooLargeError
from template_engine.loader.yaml_errors import EXPECTED, syntax_problem
from template_engine.paths import Path
from template_engine.storable import BAD_TEXT, KEY_EXPECTED, TEXT_EXPECTED, text_problem

_Loader: Any = getattr(yaml, "CSafeLoader", yaml.SafeLoader)

_STR = "tag:yaml.org,2002:str"
_MAP = "tag:yaml.org,2002:map"
_SEQ = "tag:yaml.org,2002:seq"
_TIMESTAMP = "tag:yaml.org,2002:timestamp"


def _by_first_character(loader: Any) -> dict[str, list[tuple[str, Any]]] | None:
    """The loader's implicit resolvers by the first character they apply to (``""``: the empty scalar);
    ``None`` when the loader has path resolvers (then :func:`_resolve` is not used)."""
    if loader.yaml_path_resolvers:  # pragma: no cover - the safe loaders have none
        return None
    table = loader.yaml_implicit_resolvers
    return {first: list(found) for first, found in table.items() if first is not None}


_IMPLICIT = _by_first_character(_Loader)


def _resolve(self: Any, kind: Any, value: Any, implicit: Any) -> Any:
    """``Resolver.resolve`` of the safe loader (no path resolvers), without its per-call list building (its
    twin: PyYAML's ``Resolver.resolve``, see :class:`_FastLoader`)."""
    if kind is ScalarNode:
        if implicit[0]:
            for tag, regexp in _IMPLICIT.get(value[:1], ()):  # type: ignore[union-attr]
                if regexp.match(value):
                    return tag
        return _STR
    return _SEQ if kind is SequenceNode else _MAP


class _FastLoader(_Loader):  # type: ignore[misc]
    """The same parser and resolver, with the resolver's per-node bookkeeping skipped: the safe loader has no
    path resolvers, so ``descend_resolver``/``ascend_resolver`` do nothing (see ``_parse``).

    Twin of the loader it derives from (``CSafeLoader``; :func:`_resolve` of ``Resolver.resolve``,
    docs/architecture.md, "Fast paths and their twins"): ``tests/test_twins.py::
    test_the_fast_loader_equals_the_safe_loader`` proves the documents it reads equal."""

    if _IMPLICIT is not None and not _Loader.yaml_implicit_resolvers.get(None):
        resolve = _resolve  # without wildcard resolvers, only the first character's are tried


#: The most nodes (mappings, lists and scalars) a document may hold, each alias counted every time it is used.
MAX_NODES = 200_000
#: The deepest nesting accepted.
MAX_DEPTH = 64
#: The most digits an integer may have (Python's own limit for converting text, whatever it is set to).
MAX_INT_DIGITS = 4300

_SCALAR = yaml.SafeLoader.yaml_constructors
_SAFE_TAGS = {
    "tag:yaml.org,2002:null",
    "tag:yaml.org,2002:bool",
    "tag:yaml.org,2002:int",
    "tag:yaml.org,2002:float",
    "tag:yaml.org,2002:str",
}


_BAD_TEXT = BAD_TEXT
#: A plain scalar YAML 1.1 leaves as text but that reads as a number anywhere else (``1e400``, ``-.5E+9``);
#: one digit run before the dot, so no backtracking.
_NUMERAL = re.compile(r"[-+]?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)[eE][-+]?[0-9]+")
#: libyaml's refusal of a ``\u`` escape that is a surrogate (or beyond U+10FFFF); it says no field.
_BAD_ESCAPE = "found invalid Unicode character escape code"


_TEXT_EXPECTED = TEXT_EXPECTED


@dataclass(frozen=True, slots=True)
class Loaded:
    """A parsed document and where each of its values was written."""

    data: Any
    #: A dict, or a :class:`LazyLines` that makes one on first use.
    lines: Mapping[Path, tuple[int, int]]


class _Builder:
    """The full builder: a node tree into data, with every value's path and line, and every problem worded
    (the rules of the module docstring).

    Twin: :class:`_Lean` builds the same data without paths or lines and hands this builder every document
    it doubts (docs/architecture.md, "Fast paths and their twins"); a rule changed here is changed there, and
    ``tests/test_twins.py::test_the_lean_yaml_builder_equals_the_full_builder`` proves the two equal on
    generated documents.
    """

    def __init__(
        self, file: str, anchors: bool = True, bound: int = MAX_NODES, expected: str | None = None
    ) -> None:
        self.file = file
        #: What a document over the bound was expected to hold (the door's own words).
        self.expected = expected or f"at most {bound} values in one file"
        #: The most values built (:data:`MAX_NODES`, or a door's smaller bound: the UI's form).
        self.bound = bound
        #: Whether the document may hold anchors (and so aliases): only then does the count include them.
        self.anchors = anchors
        self.count = 0
        self.lines: dict[Path, tuple[int, int]] = {}
        self.active: set[int] = set()
        self.constructor = yaml.SafeLoader("")
        #: Problems that do not stop the reading (a non-finite number, unstorable text): all are reported.
        self.problems: list[Problem] = []

    def problem(self, message: str, node: Node, path: Path, expected: str | None = None) -> Problem:
        mark = node.start_mark
        return Problem(message, path, Location(self.file, mark.line + 1, mark.column + 1), expected)

    def note(self, message: str, node: Node, path: Path, expected: str | None = None) -> None:
        self.problems.append(self.problem(message, node, path, expected))

    def fail(self, message: str, node: Node, path: Path, expected: str | None = None) -> InputError:
        """The error that stops the reading, after the problems noted so far."""
        return InputError([*self.problems, self.problem(message, node, path, expected)])

    def too_many(self) -> str:
        """The message of a document over its bound: what was counted (the file is its location)."""
        return too_many_nodes(self.bound, self.anchors)

    def build(self, node: Node, path: Path) -> Any:
        self.count += 1
        if self.count > self.bound:
            raise TooLargeError([*self.problems, self.problem(self.too_many(), node, path, self.expected)])
        if len(path) > MAX_DEPTH:
            raise self.fail(
                f"document is nested deeper than {MAX_DEPTH} levels",
                node,
                path,
                f"at most {MAX_DEPTH} levels",
            )
        self.lines[path] = (node.start_mark.line + 1, node.start_mark.column + 1)
        if isinstance(node, ScalarNode):
            if node.tag == "tag:yaml.org,2002:timestamp":
                return str(node.value)  # dates stay text: no field of the schema is a date (and hold no NUL)
            if node.tag not in _SAFE_TAGS:
                raise self.fail(f"unsupported YAML tag {node.tag!r}", node, path, "a plain scalar")
            return self._scalar(node, path)
        if id(node) in self.active:
            raise self.fail("recursive alias", node, path, "an anchor used only after its own value")
        self.active.add(id(node))
        try:
            if isinstance(node, SequenceNode):
                if node.tag != "tag:yaml.org,2002:seq":
                    raise self.fail(f"unsupported YAML tag {node.tag!r}", node, path, "a plain list")
                return [self.build(child, (*path, i)) for i, child in enumerate(node.value)]
            if isinstance(node, MappingNode):
                if node.tag != "tag:yaml.org,2002:map":
                    raise self.fail(f"unsupported YAML tag {node.tag!r}", node, path, "a plain mapping")
                return self._mapping(node, path)
            raise self.fail("unsupported YAML node", node, path)  # pragma: no cover - parser never yields it
        finally:
            self.active.discard(id(node))

    def _scalar(self, node: ScalarNode, path: Path) -> Any:
        text = str(node.value)
        if node.tag == "tag:yaml.org,2002:int":
            body = text.lstrip("+-")
            body = body[2:] if body[:2].lower() in ("0x", "0o", "0b") else body
            digits = sum(c.isalnum() for c in body)
            if digits > MAX_INT_DIGITS:
                raise self.fail(
                    f"integer has {digits} digits, more than {MAX_INT_DIGITS}",
                    node,
                    path,
                    f"a number of at most {MAX_INT_DIGITS} digits",
                )
        shown = text if len(text) <= 20 else text[:17] + "..."
        try:
            value = _SCALAR[node.tag](self.constructor, node)
        except ValueError:  # a lower limit of Python's own (PYTHONINTMAXSTRDIGITS)
            raise self.fail(f"number {shown} is too long", node, path, "a shorter number") from None
        if isinstance(value, float) and not math.isfinite(value):
            if text.lstrip("+-").lower() in (".inf", ".nan"):
                self.note(f"{shown} is not a finite number", node, path, _finite(shown))
            else:  # 1.0e+400
                self.note(
                    f"the number {shown} is too large (it would be infinite)", node, path, _finite(shown)
                )
        elif isinstance(value, str):
            if not node.style and _NUMERAL.fullmatch(text) and not math.isfinite(float(text)):
                # YAML 1.1 reads a plain 1e400 as text (its floats need a dot and a signed exponent), so it
                # would reach a number field as "not a valid number": say what is wrong with it.
                self.note(
                    f"the number {shown} is too large (it would be infinite)", node, path, _finite(shown)
                )
            why = text_problem(value)
            if why is not None:
                self.note(f"the text {why}", node, path, _TEXT_EXPECTED)
        return value

    def _mapping(self, node: MappingNode, path: Path) -> dict[str, Any]:
        out: dict[str, Any] = {}
        seen: dict[str, Node] = {}
        for key_node, value_node in node.value:
            if key_node.tag == "tag:yaml.org,2002:merge":
                raise self.fail("YAML merge keys (<<) are not supported", key_node, path, "explicit keys")
            if not isinstance(key_node, ScalarNode) or key_node.tag != "tag:yaml.org,2002:str":
                raise self.fail("mapping keys must be plain strings", key_node, path, "a field name")
            key = str(key_node.value)
            why = text_problem(key)
            if why is not None:  # at the mapping, as the service says it: the key itself would garble a path
                self.note(f"the key {key!r} {why}", key_node, path, KEY_EXPECTED)
                continue
            if key in seen:
                first = seen[key].start_mark
                mark = key_node.start_mark
                raise InputError(
                    [
                        *self.problems,
                        Problem(
                            f"duplicate key {key!r} (first at line {first.line + 1})",
                            (*path, key),
                            Location(self.file, mark.line + 1, mark.column + 1),
                            "each key once per mapping",
                            (Location(self.file, first.line + 1, first.column + 1),),
                        ),
                    ]
                )
            seen[key] = key_node
            out[key] = self.build(value_node, (*path, key))
            mark = key_node.start_mark
            self.lines[(*path, key)] = (mark.line + 1, mark.column + 1)  # a field is where its key is
        return out


def too_many_nodes(bound: int, anchors: bool = True) -> str:
    """The message of a document of more than ``bound`` values (nodes), as the builders count them."""
    aliases = ", each alias as often as it is used" if anchors else " (it has no aliases)"
    return f"the document holds more than {bound} values, counting every mapping, list and scalar{aliases}"


def _finite(shown: str) -> str:
    return f"a finite number (to mean the text, quote it: '{shown}')"


def _tab_in_indentation(text: str, line: int | None) -> tuple[int, int] | None:
    """The 1-based line and column of a tab in the indentation of the 0-based ``line``, if it has one."""
    lines = text.splitlines()
    if line is None or not 0 <= line < len(lines):
        return None
    content = lines[line]
    indentation = content[: len(content) - len(content.lstrip(" \t"))]
    return (line + 1, indentation.index("\t") + 1) if "\t" in indentation else None


_NO_PATHS: dict[Any, Any] = {}


def _fast(loader_class: Any) -> Any:
    """:class:`_FastLoader` in place of the loader it derives from (tests may swap ``_Loader``)."""
    return _FastLoader if loader_class is _FastLoader.__base__ else loader_class


class _TooMany(Exception):
    """The counting composer passed its bound at ``mark``."""

    def __init__(self, mark: Any) -> None:
        super().__init__()
        self.mark = mark


class _CountingComposer(Composer):
    """PyYAML's own composer (in Python), over the loader's parser, counting the values it makes *as it makes
    them* and stopping past ``bound``: each mapping, list and scalar once, each alias as often as it is used
    (the count of the node it names), a mapping's keys not at all (as :class:`_Builder` counts).

    The C composer of :data:`_Loader` makes every node of a text before anything is counted (a 371 KB list:
    60,000 nodes, 0.1 CPU-s); this one never makes more than ``bound`` + 1, whatever the text's length.  It
    is slower per node, so only a door with a bound well under :data:`MAX_NODES` uses it (the UI's form,
    :func:`load_yaml`'s ``bound``); ``tests/test_twins.py::test_the_counting_composer_equals_the_c_composer``
    proves its nodes equal to the C composer's (its twin)."""

    bound = MAX_NODES
    count = 0
    sizes: dict[int, int]
    #: Whether the parser is libyaml's (``CParser``): its composer's words are used.
    c_words = False

    def compose_node(self, parent: Node | None, index: Any) -> Node | None:
        parser: Any = self  # the parser's methods come from the loader this class is mixed into
        event = parser.peek_event()
        anchor = event.anchor
        # Over libyaml's parser, worded as its C composer words them (PyYAML's adds the anchor's name).
        alias = isinstance(event, AliasEvent)
        if self.c_words and alias and anchor not in self.anchors:
            raise ComposerError(None, None, "found undefined alias", event.start_mark)
        if self.c_words and not alias and anchor is not None and anchor in self.anchors:
            first = self.anchors[anchor].start_mark
            raise ComposerError(
                "found duplicate anchor; first occurrence", first, "second occurrence", event.start_mark
            )
        if alias:
            mark = event.start_mark
            node = super().compose_node(parent, index)
            # A node still being composed (a recursive alias) counts once: the builder refuses it.
            self.count += self.sizes.get(id(node), 1)
            if self.count > self.bound:
                raise _TooMany(mark)
            return node
        if isinstance(parent, MappingNode) and index is None and isinstance(event, yaml.ScalarEvent):
            return super().compose_node(parent, cast(Any, index))  # a key: not a value
        self.count += 1
        start = self.count
        if start > self.bound:
            raise _TooMany(event.start_mark)
        node = super().compose_node(parent, index)
        self.sizes[id(node)] = self.count - start + 1
        return node


_COUNTING: dict[Any, Any] = {}
_C_PARSER: Any = getattr(getattr(yaml, "cyaml", None), "CParser", ())


def _counting(loader_class: Any, text: str, bound: int) -> Any:
    """A loader of ``loader_class``'s parser and resolver whose composer is :class:`_CountingComposer`."""
    found = _COUNTING.get(loader_class)
    if found is None:
        found = _COUNTING[loader_class] = type(
            "_Counting",
            (_CountingComposer, loader_class),
            {"__init__": loader_class.__init__, "c_words": issubclass(loader_class, _C_PARSER)},
        )
    loader = found(text)
    loader.anchors, loader.sizes, loader.count, loader.bound = {}, {}, 0, bound
    return loader


def _parse(text: str, loader_class: Any, bound: int = MAX_NODES) -> Node | None:
    loader = loader_class(text) if bound >= MAX_NODES else _counting(loader_class, text, bound)
    if loader_class is _FastLoader and not loader.yaml_path_resolvers:
        # Both are no-ops without path resolvers; C-level callables save a Python call per node.
        loader.descend_resolver = _NO_PATHS.get
        loader.ascend_resolver = _NO_PATHS.clear
    try:
        node: Node | None = loader.get_single_node()
    except ValueError:  # the pure-Python parser's chr() of an escape beyond U+10FFFF
        mark = loader.get_mark() if hasattr(loader, "get_mark") else None
        raise yaml.MarkedYAMLError("while parsing a quoted scalar", None, _BAD_ESCAPE, mark) from None
    finally:
        loader.dispose()
    return node


def _parse_error(exc: yaml.YAMLError, text: str, file: str) -> InputError:
    if not isinstance(exc, yaml.MarkedYAMLError):
        return InputError([Problem(f"invalid YAML: {exc}", (), Location(file), EXPECTED)])
    mark = exc.problem_mark or exc.context_mark
    tab = _tab_in_indentation(text, mark.line if mark else None)
    if tab is not None:
        return InputError(
            [
                Problem(
                    "tabs are not allowed for indentation in YAML; use spaces",
                    (),
                    Location(file, tab[0], tab[1]),
                    "spaces for indentation",
                )
            ]
        )
    return InputError([syntax_problem(exc, text, file, _fast(_Loader))])  # the line to change, in words


def load_yaml(text: str, file: str, bound: int = MAX_NODES, expected: str | None = None) -> Loaded:
    """Parse ``text`` (the contents of ``file``, used only in messages); an empty document is ``None``.

    ``bound``: the most values (mappings, lists and scalars, each alias as often as it is used) the document
    may hold; past it, :class:`~template_engine.errors.TooLargeError`.  Under :data:`MAX_NODES` (a door's
    own bound: the UI's form takes what an API body may, ``MAX_VALUES``) the bound is applied while the
    nodes are made (:class:`_CountingComposer`), so no more than ``bound`` of them are ever made; ``expected``
    words what it was expected to hold (by default, ``at most <bound> values in one file``)."""
    refused: yaml.MarkedYAMLError | None = None
    try:
        try:
            node = _parse(text, _fast(_Loader), bound)
        except yaml.MarkedYAMLError as exc:
            if _Loader is yaml.SafeLoader or exc.problem != _BAD_ESCAPE:
                raise
            # libyaml refuses "\udfff" without saying in which field: the pure-Python parser reads it, and
            # the builder below names the field of the lone surrogate.
            refused = exc
            node = _parse(text, yaml.SafeLoader, bound)
    except yaml.YAMLError as exc:
        raise _parse_error(exc, text, file) from None
    except _TooMany as exc:
        where = Location(file, exc.mark.line + 1, exc.mark.column + 1)
        expected = expected or f"at most {bound} values in one file"
        raise TooLargeError([Problem(too_many_nodes(bound, "&" in text), (), where, expected)]) from None
    if node is None:
        return Loaded(None, {})
    if refused is None and "&" not in text:  # no anchor, so no alias: every node is built once
        try:
            data = _Lean(text, bound).build(node, 0)
        except _Doubt:
            pass
        else:
            return Loaded(data, LazyLines(text))
    builder = _Builder(file, refused is not None or "&" in text, bound, expected)
    data = builder.build(node, ())
    if builder.problems:
        raise InputError(builder.problems)
    if refused is not None:  # pragma: no cover - libyaml refuses only the escapes the builder reports
        raise _parse_error(refused, text, file)
    return Loaded(data, builder.lines)


def _lines_of(text: str) -> dict[Path, tuple[int, int]]:
    """The line map of a document that :func:`load_yaml` built cleanly (so it parses and builds again)."""
    node = _parse(text, _fast(_Loader))
    if node is None:  # pragma: no cover - a document with lines is not empty
        return {}
    builder = _Builder("")
    builder.build(node, ())
    return builder.lines


class LazyLines(Mapping[Path, tuple[int, int]]):
    """The line map of a document, made from its text on first use (the full builder's map, exactly).

    Until then it holds only the text, compressed (zlib, level 1: a generated org's files shrink to about a
    fifth): most maps are never read (they serve error messages and provenance), and the text was a sixth of
    a loaded org's memory (docs/performance.md, "Both org shapes")."""

    __slots__ = ("_lines", "_packed")

    def __init__(self, text: str) -> None:
        self._packed = zlib.compress(text.encode("utf-8", "surrogatepass"), 1)
        self._lines: dict[Path, tuple[int, int]] | None = None

    @property
    def text(self) -> str:
        """The document's text, exactly as it was given."""
        return zlib.decompress(self._packed).decode("utf-8", "surrogatepass")

    def _map(self) -> dict[Path, tuple[int, int]]:
        lines = self._lines
        if lines is None:
            lines = self._lines = _lines_of(self.text)
        return lines

    def __getitem__(self, path: Path) -> tuple[int, int]:
        return self._map()[path]

    def get(self, path: Path, default: Any = None) -> Any:
        return self._map().get(path, default)

    def __contains__(self, path: object) -> bool:
        return path in self._map()

    def __iter__(self) -> Iterator[Path]:
        return iter(self._map())

    def __len__(self) -> int:
        return len(self._map())

    def __eq__(self, other: object) -> bool:
        if isinstance(other, LazyLines) and other._packed == self._packed:
            return True  # the same text (the same bytes, compressed alike in one process) has the same lines
        return Mapping.__eq__(self, other)

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return f"LazyLines({self._map()!r})"


class _Doubt(Exception):
    """The lean pass met something the full builder must look at (and word, if it is a problem)."""


#: A plain scalar that :data:`_NUMERAL` can match shows a digit or a dot right before an exponent.
_EXPONENT = re.compile(r"[0-9.][eE][-+]?[0-9]")


class _Lean:
    """The data of a document without anchors, or :class:`_Doubt` wherever :class:`_Builder` could have
    something to say (it then builds the document again and says it).  No paths, no line map.

    Twin of :class:`_Builder` (docs/architecture.md, "Fast paths and their twins"): each rule there (tags,
    duplicate keys, finite numbers, digits, text, depth, size) is here only as a *doubt*, never worded;
    ``tests/test_twins.py::test_the_lean_yaml_builder_equals_the_full_builder`` proves the two equal.
    """

    __slots__ = ("bound", "check_text", "count", "exponent")

    def __init__(self, text: str, bound: int = MAX_NODES) -> None:
        self.count = 0
        self.bound = bound
        # Without a backslash no escape can make a NUL or a lone surrogate (libyaml refuses raw ones).
        self.check_text = (
            "\\" in text or "\x00" in text or (not text.isascii() and _BAD_TEXT.search(text) is not None)
        )
        self.exponent = _EXPONENT.search(text) is not None

    def build(self, node: Node, depth: int) -> Any:
        self.count += 1
        if self.count > self.bound or depth > MAX_DEPTH:
            raise _Doubt
        kind = node.__class__
        tag = node.tag
        if kind is ScalarNode:
            scalar = cast(ScalarNode, node)
            value = scalar.value
            if tag == _STR:
                if self.check_text and _BAD_TEXT.search(value) is not None:
                    raise _Doubt
                if self.exponent and not scalar.style and _NUMERAL.fullmatch(value) is not None:
                    raise _Doubt
                return value
            return _lean_scalar(scalar, tag, value)
        if kind is MappingNode and tag == _MAP:
            out: dict[str, Any] = {}
            build = self.build
            check_text = self.check_text
            below = depth + 1
            for key_node, value_node in node.value:
                if key_node.__class__ is not ScalarNode or key_node.tag != _STR:
                    raise _Doubt
                key = intern(key_node.value)  # one object per field name, however many documents use it
                if key in out or (check_text and _BAD_TEXT.search(key) is not None):
                    raise _Doubt
                out[key] = build(value_node, below)
            return out
        if kind is SequenceNode and tag == _SEQ:
            build = self.build
            below = depth + 1
            return [build(child, below) for child in node.value]
        raise _Doubt


_LEAN_SCALAR = _SCALAR
_LEAN_CONSTRUCTOR = yaml.SafeLoader("")


def _lean_scalar(node: ScalarNode, tag: str, text: str) -> Any:
    """A scalar other than text, as :meth:`_Builder._scalar` builds it when it has nothing to say (its twin:
    the same constructors, and :class:`_Doubt` wherever ``_scalar`` notes or fails)."""
    if tag == _TIMESTAMP:
        return str(text)
    if tag not in _SAFE_TAGS:
        raise _Doubt
    if tag == "tag:yaml.org,2002:int" and len(text) > MAX_INT_DIGITS:
        raise _Doubt  # perhaps too long: the full builder counts the digits
    try:
        value = _LEAN_SCALAR[tag](_LEAN_CONSTRUCTOR, node)
    except ValueError:
        raise _Doubt from None
    if value.__class__ is float and not math.isfinite(value):
        raise _Doubt
    return value
