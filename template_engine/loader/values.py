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

#: Field path (``*``: any list item) -> the rule its value keeps in Run:ai's schema.
RULES: dict[tuple[str, ...], Check] = {
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
    children, and only containers are walked.

    The loader asks it of every file (:func:`~template_engine.loader.rules.document_rules`), so the walk
    dispatches on the exact type first (a parsed document holds ``dict``, ``list`` and scalars) and asks
    ``isinstance`` only of anything else; leaves are never pushed."""
    count = 1
    stack = [data]
    pop, push, leaves = stack.pop, stack.append, _LEAVES
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
            if type(child) not in leaves:
                push(child)
    return count


def _expression(value: Any) -> bool:
    return isinstance(value, str) and ("{{" in value or "{%" in value)


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
            where = locate(file, lines or {}, full)
            problems.append(
                Problem(f"invalid value {value!r} (Run:ai's API refuses it)", full, where, expected)
            )
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
