"""A hardened YAML reader that keeps line numbers.

Only the safe scalar types are constructed; duplicate keys are errors naming both lines; alias expansion is
bounded (a "billion laughs" document is refused) and recursive aliases are refused; a file holds at most one
document.  Numbers are finite (``.inf`` and ``.nan`` are refused) and integers have at most
:data:`MAX_INT_DIGITS` digits.  Alongside the data it returns a line map from every field path to its
1-based line and column.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import yaml
from yaml.nodes import MappingNode, Node, ScalarNode, SequenceNode

from template_engine.errors import InputError, Location, Problem
from template_engine.paths import Path

_Loader: Any = getattr(yaml, "CSafeLoader", yaml.SafeLoader)

#: The most nodes a document may expand to, aliases included.
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


@dataclass(frozen=True, slots=True)
class Loaded:
    """A parsed document and where each of its values was written."""

    data: Any
    lines: dict[Path, tuple[int, int]]


class _Builder:
    def __init__(self, file: str) -> None:
        self.file = file
        self.count = 0
        self.lines: dict[Path, tuple[int, int]] = {}
        self.active: set[int] = set()
        self.constructor = yaml.SafeLoader("")

    def fail(self, message: str, node: Node, path: Path, expected: str | None = None) -> InputError:
        mark = node.start_mark
        return InputError(
            [Problem(message, path, Location(self.file, mark.line + 1, mark.column + 1), expected)]
        )

    def build(self, node: Node, path: Path) -> Any:
        self.count += 1
        if self.count > MAX_NODES:
            raise self.fail(
                f"document expands to more than {MAX_NODES} values (alias expansion is bounded)",
                node,
                path,
                f"at most {MAX_NODES} values, aliases expanded",
            )
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
                return str(node.value)  # dates stay text: no field of the schema is a date
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
            raise self.fail(
                f"{shown} is not a finite number",
                node,
                path,
                f"a finite number (to mean the text, quote it: '{shown}')",
            )
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
            if key in seen:
                first = seen[key].start_mark
                mark = key_node.start_mark
                raise InputError(
                    [
                        Problem(
                            f"duplicate key {key!r} (first at line {first.line + 1})",
                            (*path, key),
                            Location(self.file, mark.line + 1, mark.column + 1),
                            "each key once per mapping",
                            (Location(self.file, first.line + 1, first.column + 1),),
                        )
                    ]
                )
            seen[key] = key_node
            out[key] = self.build(value_node, (*path, key))
            mark = key_node.start_mark
            self.lines[(*path, key)] = (mark.line + 1, mark.column + 1)  # a field is where its key is
        return out


def _tab_in_indentation(text: str, line: int | None) -> tuple[int, int] | None:
    """The 1-based line and column of a tab in the indentation of the 0-based ``line``, if it has one."""
    lines = text.splitlines()
    if line is None or not 0 <= line < len(lines):
        return None
    content = lines[line]
    indentation = content[: len(content) - len(content.lstrip(" \t"))]
    return (line + 1, indentation.index("\t") + 1) if "\t" in indentation else None


def load_yaml(text: str, file: str) -> Loaded:
    """Parse ``text`` (the contents of ``file``, used only in messages); an empty document is ``None``."""
    try:
        loader = _Loader(text)
        try:
            node = loader.get_single_node()
        finally:
            loader.dispose()
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        tab = _tab_in_indentation(text, mark.line if mark else None)
        if tab is not None:
            raise InputError(
                [
                    Problem(
                        "tabs are not allowed for indentation in YAML; use spaces",
                        (),
                        Location(file, tab[0], tab[1]),
                        "spaces for indentation",
                    )
                ]
            ) from None
        where = Location(file, mark.line + 1, mark.column + 1) if mark else Location(file)
        what = " ".join(str(x) for x in (exc.context, exc.problem) if x)
        context = exc.context_mark
        # "while parsing a flow sequence" points where the unfinished construct started: show that too.
        related = (
            (Location(file, context.line + 1, context.column + 1),)
            if context is not None and exc.problem_mark is not None and context.line != exc.problem_mark.line
            else ()
        )
        raise InputError(
            [Problem(f"invalid YAML: {what}", (), where, "one well-formed YAML document", related)]
        ) from None
    except yaml.YAMLError as exc:
        raise InputError(
            [Problem(f"invalid YAML: {exc}", (), Location(file), "one well-formed YAML document")]
        ) from None
    if node is None:
        return Loaded(None, {})
    builder = _Builder(file)
    data = builder.build(node, ())
    return Loaded(data, builder.lines)
