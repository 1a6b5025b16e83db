"""The objects as block YAML, in the order the mapping builds their keys, with a comment at the end of a line.

PyYAML cannot write a comment, so ``template-engine manifests --annotate`` writes its YAML here: mappings and
lists in block style as ``yaml.safe_dump(..., default_flow_style=False)`` lays them out (a list under a key
is not indented; an item's first key shares the ``- `` line), empty ones as ``{}`` and ``[]``, and every
scalar (and key) exactly as ``yaml.safe_dump`` writes it alone (``'32'``, ``'yes'``, ``null``, ``.inf``).
The one exception: a string that ``safe_dump`` would spread over several lines (it holds a line break,
``\\x85`` or ``\\u2028`` included) is written double-quoted on one line, so that a comment can follow it.
The text parses back (``yaml.safe_load_all``) to the objects, with or without comments.

``comment(path)`` gives the comment of the line that holds the scalar at ``path`` (or an empty mapping or
list); line breaks in it become spaces and a character no YAML stream may hold becomes ``\\uXXXX``.
"""

from __future__ import annotations

import functools
import math
import re
from collections.abc import Callable, Iterable, Mapping
from typing import Any

import yaml

from template_engine.cluster.problems import ObjectPath

__all__ = ["Comment", "dump_documents", "dump_object", "scalar"]

#: The comment for the line of the value at a path, or ``None``.
Comment = Callable[[ObjectPath], str | None]

INDENT = "  "
_DUMPER: Any = getattr(yaml, "CSafeDumper", yaml.SafeDumper)
#: No line is folded (libyaml takes a width as an integer only).
_NO_WRAP = 2**30
#: What YAML reads as a line break inside a comment.
_BREAKS = re.compile("[\r\n\x85\u2028\u2029]+")
#: What a YAML stream may not hold at all (PyYAML's reader refuses it, in a comment too).
_UNPRINTABLE = re.compile("[^\x09\x0a\x0d\x20-\x7e\x85\xa0-\ud7ff\ue000-\ufffd\U00010000-\U0010ffff]")


def scalar(value: Any) -> str:
    """``value`` (a string, number, boolean or ``None``) as one line of YAML, quoted as PyYAML quotes it.

    Remembered by value and type (the same keys and values recur in every object of an org, and asking
    PyYAML costs a writer each time; ``True`` and ``1`` are equal, so the type is part of the key).
    """
    return _scalar(type(value).__name__, value)


@functools.lru_cache(maxsize=1 << 14)
def _scalar(kind: str, value: Any) -> str:
    del kind  # part of the cache key only
    text = yaml.safe_dump(value, allow_unicode=True, width=math.inf)
    text = text.removesuffix("\n...\n").removesuffix("\n")
    if _BREAKS.search(text):
        text = yaml.safe_dump(value, allow_unicode=True, width=math.inf, default_style='"').rstrip("\n")
    return text


def _tail(comment: Comment | None, path: ObjectPath) -> str:
    if comment is None:
        return ""
    text = comment(path)
    if not text:
        return ""
    text = _UNPRINTABLE.sub(lambda found: f"\\u{ord(found.group()):04x}", _BREAKS.sub(" ", text))
    return "  # " + text.strip()


def _is_block(value: Any) -> bool:
    """A non-empty mapping or list: written over lines of its own."""
    return isinstance(value, Mapping | list | tuple) and len(value) > 0


def _leaf(value: Any) -> str:
    if isinstance(value, Mapping):
        return "{}"
    if isinstance(value, list | tuple):
        return "[]"
    return scalar(value)


def _lines(value: Any, path: ObjectPath, indent: str, comment: Comment | None) -> Iterable[str]:
    """The lines of a non-empty mapping or list, each key or item starting at ``indent``."""
    if isinstance(value, Mapping):
        for key, item in value.items():
            at = (*path, key)
            head = f"{indent}{scalar(key)}:"
            if not _is_block(item):
                yield f"{head} {_leaf(item)}{_tail(comment, at)}"
                continue
            yield head
            # A list under a key is not indented (PyYAML's layout); a mapping is.
            yield from _lines(
                item, at, indent if isinstance(item, list | tuple) else indent + INDENT, comment
            )
        return
    for index, item in enumerate(value):
        at = (*path, index)
        if not _is_block(item):
            yield f"{indent}- {_leaf(item)}{_tail(comment, at)}"
            continue
        inner = list(_lines(item, at, indent + INDENT, comment))
        if isinstance(item, Mapping):
            # The first key shares the item's line: ``- name: x``.
            yield f"{indent}- {inner[0][len(indent) + len(INDENT) :]}"
            yield from inner[1:]
        else:
            yield f"{indent}-"
            yield from inner


def dump_object(obj: Any, comment: Comment | None = None) -> str:
    """One document: ``obj`` as block YAML, each line ending in a newline.

    Without comments, PyYAML's own writer (libyaml's when installed) writes it: the layout is its layout
    (a test checks the two agree on every object of the example org and on generated values), at a
    fraction of the cost of one PyYAML call per scalar.
    """
    if comment is None and _is_block(obj) and not _has_break(obj):
        return yaml.dump(
            obj,
            Dumper=_DUMPER,
            sort_keys=False,
            allow_unicode=True,
            width=_NO_WRAP,
            default_flow_style=False,
        )
    if not _is_block(obj):
        return f"{_leaf(obj)}{_tail(comment, ())}\n"
    return "".join(f"{line}\n" for line in _lines(obj, (), "", comment))


def _has_break(value: Any) -> bool:
    """Whether a string in ``value`` holds a line break (written double-quoted on one line here, where
    PyYAML would write it over several)."""
    if isinstance(value, str):
        return _BREAKS.search(value) is not None
    if isinstance(value, Mapping):
        return any(_has_break(k) or _has_break(v) for k, v in value.items())
    if isinstance(value, list | tuple):
        return any(_has_break(v) for v in value)
    return False


def dump_documents(objects: Iterable[Any], comments: Iterable[Comment | None] | None = None) -> str:
    """Every object as a document of its own, each starting with ``---``."""
    objects = list(objects)
    found = list(comments) if comments is not None else [None] * len(objects)
    return "".join(f"---\n{dump_object(obj, c)}" for obj, c in zip(objects, found, strict=True))
