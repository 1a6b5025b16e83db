"""Run:ai's rules for the values of a spec, beyond the engine's schema: what Run:ai's API refuses, every
door refuses too (a folder's files, a git revision, ``db import``, the API's bodies, the UI's forms and
workload submissions), so that a green ``check`` is not followed by a refused submission.

The engine's models take any text where Run:ai's schema has a pattern (a template value may be a Jinja2
expression, rendered later), so these rules are checked with the document's other rules
(:func:`template_engine.loader.rules.document_rules`).  A value that holds an expression (``{{`` or ``{%``)
is left to its rendering.  Each rule names a field by its path in a spec, ``*`` standing for any item of a
list.  Quantities are read by the one grammar of :mod:`template_engine.quantity`, which accepts a subset of
Run:ai's quantity pattern (``tests/test_quantity.py`` checks it).
"""

from __future__ import annotations

import re
import uuid
from collections.abc import Callable, Collection, Iterator, Mapping
from typing import Any

from template_engine.errors import Problem
from template_engine.loader.validate import locate
from template_engine.paths import Path
from template_engine.quantity import is_quantity_text, nearest_quantities
from template_engine.suggest import did_you_mean

#: A Kubernetes object name (a DNS label): Run:ai's pattern for the names of secrets, config maps...
DNS_LABEL = re.compile(r"^[a-z0-9]([a-z0-9-]*[a-z0-9])?$")
_HTTP_PATH = re.compile(r"^(/[a-zA-Z0-9\-_./]*)?$")
_ATTRIBUTE_KEY = re.compile(r"^([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]$")

#: The most values one document may hold, at every door: objects, arrays, strings, numbers, booleans and
#: nulls (an object's keys are not counted).  A template or a workload holds a few hundred; a document of
#: 1 MiB can hold about 200,000, whose validation and composition would cost seconds and hundreds of MB, and
#: a stored document the API could not take back in a PUT.
MAX_VALUES = 20_000
MAX_VALUES_EXPECTED = f"at most {MAX_VALUES} values (objects, arrays, strings, numbers, true, false and null)"

#: The most characters of any text of a document that no row of :data:`TEXT_BOUNDS` names: Linux's
#: ``PATH_MAX`` (4,096), the longest of the paths, names, references and expressions a spec holds (an
#: expression's text is bounded alike, ``expressions.MAX_TEXT``).
LONGEST_TEXT = 4096
#: Linux's ``MAX_ARG_STRLEN``: the most bytes of one argument or environment string ``execve`` takes.
_ARG_TEXT = 131_072
_ARG_WHY = "Linux's MAX_ARG_STRLEN: the longest argument or environment string a process is started with"

#: The bounds of text fields, in one table: field path in a spec (``*``: any list item) -> the most
#: characters its text may have and where that bound comes from.  Any other text of a document holds at
#: most :data:`LONGEST_TEXT`; ``docs/concepts.md`` ("Bounds of a document") lists them all.  A bound under
#: :data:`LONGEST_TEXT` is Run:ai's or Kubernetes' bound of the *rendered* value, so a text that holds an
#: expression is held to :data:`LONGEST_TEXT` there (its rendering is checked by Run:ai).
TEXT_BOUNDS: dict[tuple[str, ...], tuple[int, str]] = {
    ("image",): (
        520,
        "an image reference: a name of at most 255 characters, ':' and a tag of at most 128, '@' and a "
        "sha512 digest (the OCI distribution reference grammar)",
    ),
    ("command",): (_ARG_TEXT, _ARG_WHY),
    ("args",): (_ARG_TEXT, _ARG_WHY),
    ("environmentVariables", "*", "value"): (_ARG_TEXT, _ARG_WHY),
    ("environmentVariables", "*", "name"): (253, "an environment variable name (a Kubernetes name's 253)"),
    ("labels", "*", "name"): (63, "Run:ai's Label.name"),
    ("labels", "*", "value"): (63, "a Kubernetes label value"),
    ("annotations", "*", "name"): (63, "Run:ai's Annotation.name"),
    ("annotations", "*", "value"): (
        65_536,
        "a quarter of Kubernetes' 256 KiB for all the annotations of an object",
    ),
    ("nodePools", "*"): (63, "a Kubernetes name (a node pool)"),
    ("nodeType",): (63, "a Kubernetes label value (the node type)"),
    ("priorityClass",): (253, "a Kubernetes name (a priority class)"),
}

Check = Callable[[Any], str | None]
Lines = Mapping[Path, tuple[int, int]]


def _text(pattern: re.Pattern[str], words: str, longest: int = 1024) -> Check:
    """The length is checked before the pattern runs, so no value costs more than ``longest`` characters of
    matching (Run:ai's quantity pattern backtracks quadratically on a long run of digits)."""

    def check(value: Any) -> str | None:
        fits = isinstance(value, str) and len(value) <= longest and pattern.match(value)
        return None if fits else words

    return check


def _uuid(value: Any) -> str | None:
    try:
        uuid.UUID(value)
    except (TypeError, ValueError, AttributeError):
        return "a UUID"
    return None


_NAME = _text(
    DNS_LABEL,
    "a Kubernetes name: lowercase letters, digits and '-', starting and ending with a letter or digit",
)


def _quantity(value: Any) -> str | None:
    """A quantity: text in the one grammar, or a whole number where the model takes one (an extended
    resource's ``quantity: 2``, as Run:ai's own example writes it)."""
    whole = isinstance(value, int) and not isinstance(value, bool) and value >= 0
    if whole or (isinstance(value, str) and is_quantity_text(value)):
        return None
    near = nearest_quantities(value) if isinstance(value, str) else ()
    return "a quantity written as text, such as '512Mi', '20M' or '1Gi'" + did_you_mean(near)


_QUANTITY = _quantity


def _not_empty(value: Any) -> str | None:
    """Run:ai's ``minLength: 1`` of a spec's container texts (``Image``, ``Command``, ``Args``,
    ``WorkingDir``): an empty text is no value, and Run:ai refuses it (and its answers never hold one)."""
    fits = isinstance(value, str) and value != ""
    return None if fits else "at least one character (leave the field out for no value)"


#: Field path (``*``: any list item) -> the rule its value keeps in Run:ai's schema.
RULES: dict[tuple[str, ...], Check] = {
    **{(field,): _not_empty for field in ("image", "command", "args", "workingDir")},
    ("environmentVariables", "*", "secret", "name"): _NAME,
    ("environmentVariables", "*", "configMap", "name"): _NAME,
    ("imagePullSecrets", "*", "name"): _NAME,
    ("storage", "configMapVolume", "*", "configMap"): _NAME,
    ("storage", "pvc", "*", "claimInfo", "storageClass"): _NAME,
    ("storage", "s3", "*", "accessKeySecret"): _NAME,
    ("compute", "cpuMemoryRequest"): _QUANTITY,
    ("compute", "cpuMemoryLimit"): _QUANTITY,
    ("compute", "gpuMemoryRequest"): _QUANTITY,
    ("compute", "gpuMemoryLimit"): _QUANTITY,
    ("compute", "extendedResources", "*", "quantity"): _QUANTITY,
    ("storage", "emptyDirVolume", "*", "sizeLimit"): _QUANTITY,
    ("storage", "pvc", "*", "claimInfo", "size"): _QUANTITY,
    ("probes", "readiness", "handler", "httpGet", "path"): _text(_HTTP_PATH, "a URL path starting with '/'"),
    ("storage", "dataVolume", "*", "id"): _uuid,
    ("storage", "pvc", "*", "claimInfo", "addedAttrValues", "*", "key"): _text(
        _ATTRIBUTE_KEY,
        "at most 63 letters, digits, '-', '_' and '.', starting and ending with a letter or digit",
        63,
    ),
}


def too_many_values(count: int) -> Problem:
    """The problem of a document of ``count`` values, more than :data:`MAX_VALUES`."""
    return Problem(f"the document holds {count} values", (), None, MAX_VALUES_EXPECTED)


#: The types of a parsed document's leaves: a value of one of them is counted and never looked into.
_LEAVES = frozenset({str, int, float, bool, type(None)})


def count_values(data: Any) -> int:
    """The values of ``data`` (keys not counted), counted without recursion: each container adds its
    children, and only containers are walked (:func:`measure_values`)."""
    return measure_values(data)[0]


def measure_values(data: Any) -> tuple[int, bool]:
    """The values of ``data`` (keys not counted), and whether any text of it is longer than
    :data:`LONGEST_TEXT`, without recursion: each container adds its children, and only containers are
    walked.

    The loader asks it of every file (:func:`~template_engine.loader.rules.document_rules`), so the walk
    dispatches on the exact type first (a parsed document holds ``dict``, ``list`` and scalars) and asks
    ``isinstance`` only of anything else; leaves are never pushed, and a text's only cost is its ``len``."""
    count = 1
    long = type(data) is str and len(data) > LONGEST_TEXT
    stack = [data]
    pop, push, leaves, longest = stack.pop, stack.append, _LEAVES, LONGEST_TEXT
    while stack:
        value = pop()
        kind = type(value)
        children: Collection[Any]
        if kind is dict:
            children = value.values()
        elif kind is list:
            children = value
        elif kind in leaves:
            continue
        elif isinstance(value, Mapping):
            children = value.values()
        elif isinstance(value, list):
            children = value
        else:
            continue
        count += len(children)
        for child in children:
            kind = type(child)
            if kind is str:
                if len(child) > longest:
                    long = True
            elif kind not in leaves:
                push(child)
    return count, long


def _expression(value: Any) -> bool:
    return isinstance(value, str) and "{" in value and ("{{" in value or "{%" in value)


Trie = dict[str, Any]


def _trie(rules: Mapping[tuple[str, ...], Check]) -> Trie:
    """:data:`RULES` as a tree of field names (``*``: any list item) whose leaves are the checks, so that a
    spec is walked only along the fields some rule names."""
    root: Trie = {}
    for shape, check in rules.items():
        node = root
        for part in shape[:-1]:
            node = node.setdefault(part, {})
        node[shape[-1]] = check
    return root


_RULE_TREE = _trie(RULES)


def _ruled(spec: Any, node: Trie, path: Path) -> Iterator[tuple[Path, Any, Check]]:
    """Each scalar value of ``spec`` a rule names, with its path and the rule's check.  (Asked of every file:
    a ``dict`` is told by its exact type before ``isinstance`` asks the ABC.)"""
    if type(spec) is dict or isinstance(spec, Mapping):
        for name, value in spec.items():  # in the document's order, as every other problem is
            below = node.get(name) if name != "*" else None
            if below is None:
                continue
            if callable(below):
                if type(value) in _LEAVES or not isinstance(value, Mapping | list):
                    yield (*path, name), value, below
            else:
                yield from _ruled(value, below, (*path, name))
    elif isinstance(spec, list) and "*" in node:
        below = node["*"]
        for index, item in enumerate(spec):
            if callable(below):
                if not isinstance(item, Mapping | list):
                    yield (*path, index), item, below
            else:
                yield from _ruled(item, below, (*path, index))


def spec_value_problems(
    spec: Any, root: Path, file: str = "request body", lines: Lines | None = None
) -> list[Problem]:
    """Every value of ``spec`` (found at ``root`` in the document ``file``, whose ``lines`` locate its
    fields) that Run:ai's schema refuses."""
    problems = []
    for path, value, check in _ruled(spec, _RULE_TREE, ()):
        if value is None or _expression(value):
            continue
        expected = check(value)
        if expected is not None:
            full = (*root, *path)
            where = locate(file, {} if lines is None else lines, full)
            problems.append(
                Problem(f"invalid value {value!r} (Run:ai's API refuses it)", full, where, expected)
            )
    return problems


def _within(bound: int, why: str) -> Check:
    def check(value: Any) -> str | None:
        return None if not isinstance(value, str) or len(value) <= bound else _at_most(bound, why)

    return check


def _at_most(bound: int, why: str) -> str:
    return f"at most {bound:,} characters ({why})"


#: The rows of :data:`TEXT_BOUNDS` under :data:`LONGEST_TEXT`, walked along their fields as :data:`RULES`.
_SHORT_TREE = _trie(
    {shape: _within(bound, why) for shape, (bound, why) in TEXT_BOUNDS.items() if bound < LONGEST_TEXT}
)
_LONGEST_WHY = "the longest text of any other field: Linux's PATH_MAX"


def _long_texts(data: Any, path: Path) -> Iterator[tuple[Path, str]]:
    """Each text of ``data`` longer than :data:`LONGEST_TEXT`, with its path (asked only of a document that
    holds one: :func:`measure_values` says so)."""
    if isinstance(data, str):
        if len(data) > LONGEST_TEXT:
            yield path, data
    elif isinstance(data, Mapping):
        for key, value in data.items():
            yield from _long_texts(value, (*path, key))
    elif isinstance(data, list):
        for index, item in enumerate(data):
            yield from _long_texts(item, (*path, index))


def text_bound(path: Path, roots: tuple[tuple[str, ...], ...]) -> tuple[int, str] | None:
    """The row of :data:`TEXT_BOUNDS` of the text at ``path`` of a document whose specs sit at ``roots``
    (``None``: no row, :data:`LONGEST_TEXT`)."""
    for root in roots:
        if path[: len(root)] == root:
            shape = tuple(part if isinstance(part, str) else "*" for part in path[len(root) :])
            row = TEXT_BOUNDS.get(shape)
            if row is not None:
                return row
    return None


def _too_long(text: str) -> str:
    return f"the text is {len(text):,} characters long"


def text_problem_at(text: str, path: Path, bound: int, why: str, file: str, lines: Lines) -> Problem:
    """The problem of ``text`` at ``path``, longer than ``bound`` characters: the same words at every door."""
    return Problem(_too_long(text), path, locate(file, lines, path), _at_most(bound, why))


def text_length_problems(
    data: Any,
    roots: tuple[tuple[str, ...], ...],
    long: bool,
    file: str = "request body",
    lines: Lines | None = None,
) -> list[Problem]:
    """Every text of a document longer than its bound (:data:`TEXT_BOUNDS`, else :data:`LONGEST_TEXT`).
    ``long``: whether :func:`measure_values` saw a text longer than :data:`LONGEST_TEXT` (only then is the
    whole document walked; the rows under it are walked along their fields)."""
    found = {} if lines is None else lines  # not `lines or {}`: the truth of a LazyLines builds its map
    problems: list[Problem] = []
    for root, spec in specs_of(data, roots):
        for path, value, check in _ruled(spec, _SHORT_TREE, ()):
            expected = None if _expression(value) else check(value)
            if expected is not None:
                full = (*root, *path)
                problems.append(Problem(_too_long(value), full, locate(file, found, full), expected))
    if long:
        for path, text in _long_texts(data, ()):
            row = text_bound(path, roots)
            if row is not None and row[0] < LONGEST_TEXT and not _expression(text):
                continue  # its own row said it above
            bound, why = row if row is not None and row[0] > LONGEST_TEXT else (LONGEST_TEXT, _LONGEST_WHY)
            if len(text) > bound:
                problems.append(text_problem_at(text, path, bound, why, file, found))
    return problems


def specs_of(data: Any, roots: tuple[tuple[str, ...], ...]) -> Iterator[tuple[tuple[str, ...], Any]]:
    """Each spec a document holds at one of ``roots`` (``spec``, ``master.spec``...), with its root."""
    for root in roots:
        spec: Any = data
        for part in root:
            spec = spec.get(part) if isinstance(spec, Mapping) else None
        if spec is not None:
            yield root, spec


def document_value_problems(
    data: Any, roots: tuple[tuple[str, ...], ...], file: str = "request body", lines: Lines | None = None
) -> list[Problem]:
    """:func:`spec_value_problems` of each spec of a document (``spec``, ``master.spec``...)."""
    return [p for root, spec in specs_of(data, roots) for p in spec_value_problems(spec, root, file, lines)]


def quantities_as_text(value: Any) -> Any:
    """``value`` (a document or a request body) with every whole-number quantity written as text, as Run:ai's
    schema types it (``compute.extendedResources[*].quantity: 2`` becomes ``"2"``); a copy where anything
    changes, ``value`` itself otherwise.  A file may write ``quantity: 2`` (the contract's own cases do);
    what the service stores and answers is Run:ai's shape."""
    if isinstance(value, Mapping):
        out = {key: quantities_as_text(item) for key, item in value.items()}
        compute = out.get("compute")
        if isinstance(compute, Mapping) and isinstance(compute.get("extendedResources"), list):
            items = [_quantity_text(item) for item in compute["extendedResources"]]
            out["compute"] = {**compute, "extendedResources": items}
        return out if any(out[k] is not value[k] for k in out) else value
    if isinstance(value, list):
        items = [quantities_as_text(item) for item in value]
        return items if any(a is not b for a, b in zip(items, value, strict=True)) else value
    return value


def _quantity_text(item: Any) -> Any:
    number = item.get("quantity") if isinstance(item, Mapping) else None
    if isinstance(number, int) and not isinstance(number, bool) and number >= 0:
        return {**item, "quantity": str(number)}
    return item
