"""Completion from the document kind's JSON Schema (``template-engine schema``) and the org's names.

The buffer being typed is rarely valid YAML, so the place is read from the text: the keys above the cursor
with less indentation (a ``- `` starts a list item).  The schema of the file's kind (``views/schema.py``:
the models' own, and the policy's from Run:ai's rule vocabulary) then gives the field names at that place,
with Run:ai's descriptions (:mod:`.descriptions`; the schema's own where Run:ai has none), or, after
``key:``, the values it allows: an enum's values, ``true``/``false``, the names of the org's assets of the
kind a template's ``assets`` names, and, for the key of a keyed list item (``- name:``), the keys of the
items the lower layers give in the pairs this layer reaches, to override or exclude them.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import cache
from typing import Any

from template_engine.kinds import DISTRIBUTED, KINDS, TEMPLATE_KINDS
from template_engine.lsp.analysis import Analysis
from template_engine.lsp.descriptions import description, spec_part
from template_engine.lsp.locate import replicas, value_at
from template_engine.paths import Match, Path

__all__ = ["Completion", "Inherited", "completions", "inherited_items", "kind_of_file", "yaml_context"]


@dataclass(frozen=True, slots=True)
class Completion:
    label: str
    #: ``field``, ``value`` or ``name`` (an asset, template or item key).
    kind: str
    detail: str = ""
    documentation: str = ""


_ASSET_FOLDERS = {"environments": "environment", "computes": "compute", "datasources": "datasource"}


def kind_of_file(file: str) -> str | None:
    """The schema kind of a file of the templates folder (``loader/layout.py``'s places), or ``None``."""
    parts = file.split("/")
    name = parts[-1]
    if file == "org.yaml":
        return "org"
    if file == "cluster.yaml" or (len(parts) == 3 and parts[0] == "clusters" and name == "cluster.yaml"):
        return "cluster"
    if name == "defaults.yaml":
        return "defaults"
    if name == "policy.yaml":
        return "policy"
    if name in _KIND_POLICIES:
        return _KIND_POLICIES[name]
    if len(parts) >= 2 and parts[-2] == "templates":
        return "template"
    if len(parts) >= 3 and parts[-3] == "assets":
        return _ASSET_FOLDERS.get(parts[-2])
    return None


#: The schema of each kind's policy file but distributed's (``training-policy.yaml``: ``training-policy``).
_KIND_POLICIES = {
    kind.policy_file: kind.policy_file.removesuffix(".yaml") for kind in KINDS if kind is not DISTRIBUTED
}
#: A template's top-level ``kind:`` as written (its schema is ``KIND-template``).
_KIND_LINE = re.compile(r"^kind:\s*['\"]?([A-Za-z-]+)['\"]?\s*(#.*)?$")


def schema_kind(file: str, lines: Sequence[str]) -> str | None:
    """The schema of a file (:func:`kind_of_file`), a template's by its ``kind:`` (``training-template``)."""
    kind = kind_of_file(file)
    if kind != "template":
        return kind
    for text in lines:
        found = _KIND_LINE.match(text)
        if found is not None:
            named = f"{found.group(1)}-template"
            return named if named in _TEMPLATE_SCHEMAS else kind
    return kind


#: The schemas of templates of the kinds but distributed.
_TEMPLATE_SCHEMAS = frozenset(f"{kind.name}-template" for kind in TEMPLATE_KINDS)


_KEY = re.compile(r"^(\s*)(- +)?([A-Za-z_][\w.-]*)\s*:(.*)$")
_ITEM = re.compile(r"^(\s*)- ")


def yaml_context(lines: Sequence[str], line: int, column: int) -> tuple[Path, str | None, str]:
    """Where the cursor (``line`` and ``column`` from 0) is: the keys above it (a list item as ``0``), the
    key whose value is being typed (``None`` when a key is), and the text typed so far."""
    current = lines[line][:column] if 0 <= line < len(lines) else ""
    value_of: str | None = None
    match = _KEY.match(current)
    if match is not None:
        indent = len(match.group(1)) + len(match.group(2) or "")
        value_of, typed = match.group(3), match.group(4).strip()
    else:
        item = _ITEM.match(current)
        indent = len(item.group(0)) if item is not None else len(current) - len(current.lstrip())
        typed = current.strip().removeprefix("- ").strip()
    in_item = _ITEM.match(current)
    path: list[Any] = []
    limit = indent
    #: Whether ``limit`` is a list item's dash: its list's key may be at the same column (``key:\n- a``).
    dash = False
    if in_item is not None:
        path.append(0)
        limit, dash = len(in_item.group(1)), True
    for above in reversed(lines[:line]):
        if not above.strip() or above.lstrip().startswith("#"):
            continue
        found = _KEY.match(above)
        if found is None:
            item = _ITEM.match(above)
            if item is not None and len(item.group(1)) < limit:
                path.append(0)
                limit, dash = len(item.group(1)), True
            continue
        own = len(found.group(1))
        key_at = own + len(found.group(2) or "")
        if key_at < limit or (dash and key_at == limit and not found.group(2)):
            path.append(found.group(3))
            limit, dash = key_at, False
            if found.group(2):  # ``- key: ...``: the key of an item of a list
                path.append(0)
                limit, dash = own, True
        elif found.group(2) and own < limit:  # a sibling key of the same list item
            path.append(0)
            limit, dash = own, True
        if limit == 0 and not dash:
            break
    return tuple(reversed(path)), value_of, typed


@cache
def schema_of(kind: str) -> dict[str, Any]:
    from template_engine.views.schema import json_schema

    return json_schema(kind)


def _resolve(schema: Mapping[str, Any], node: Any) -> list[Mapping[str, Any]]:
    """The object or array variants of ``node`` (``$ref`` followed, ``anyOf``/``oneOf`` opened)."""
    if not isinstance(node, Mapping):
        return []
    ref = node.get("$ref")
    if isinstance(ref, str) and ref.startswith("#/$defs/"):
        return _resolve(schema, schema.get("$defs", {}).get(ref.removeprefix("#/$defs/")))
    out: list[Mapping[str, Any]] = []
    for key in ("anyOf", "oneOf", "allOf"):
        for option in node.get(key, ()):
            out += _resolve(schema, option)
    return out or [node]


def schema_at(schema: Mapping[str, Any], path: Path) -> list[Mapping[str, Any]]:
    nodes = _resolve(schema, schema)
    for segment in path:
        found: list[Mapping[str, Any]] = []
        for node in nodes:
            if isinstance(segment, int):
                found += _resolve(schema, node.get("items"))
            else:
                found += _resolve(schema, (node.get("properties") or {}).get(segment))
        nodes = found
    return nodes


def _doc(node: Mapping[str, Any]) -> str:
    return str(node.get("description") or node.get("title") or "")


def _values(schema: Mapping[str, Any], nodes: list[Mapping[str, Any]]) -> list[Completion]:
    out: list[Completion] = []
    for node in nodes:
        for value in node.get("enum", ()):
            out.append(Completion(str(value), "value", "enum", _doc(node)))
        if node.get("type") == "boolean":
            out += [Completion("true", "value", "boolean"), Completion("false", "value", "boolean")]
    return out


def _names(analysis: Analysis | None, kind: str) -> list[Completion]:
    if analysis is None:
        return []
    assets = analysis.org.assets.get(kind, {})  # type: ignore[call-overload]
    return [
        Completion(
            name,
            "name",
            f"{kind} asset ({asset.scope})",
            str(getattr(asset.doc.meta, "description", "") or ""),
        )
        for name, asset in sorted(assets.items())
    ]


@dataclass(frozen=True, slots=True)
class Inherited:
    """An item of a keyed list that a lower layer gives, as one pair composes it."""

    key: str
    item: Mapping[str, Any]
    #: The layer that gives it, and the pair it was seen in.
    source: str


def inherited_items(analysis: Analysis | None, file: str, path: Path) -> list[Inherited]:
    """The items of the keyed list at ``path`` (a document path, without an item index) that the layers
    below this file's give, in the pairs this layer reaches: what a ``- name:`` here may override or
    exclude.  By key, the first pair's item."""
    if analysis is None or not path:
        return []
    found: dict[str, Inherited] = {}
    for state in analysis.pairs.values():
        composition = state.outcome.composition
        if composition is None or file not in state.deps:
            continue
        for _, result, combined in replicas(composition):
            for here, layer in enumerate(result.layers):
                root = layer.root
                if layer.file != file or tuple(path[: len(root)]) != root:
                    continue
                where = tuple(path[len(root) :])
                items = value_at(combined, where)
                for item in items if isinstance(items, list) else ():
                    name = item.get("name") if isinstance(item, Mapping) else None
                    origin = (
                        result.origin_of((*where, Match("name", name))) if isinstance(name, str) else None
                    )
                    if origin is not None and origin.layer < here and str(name) not in found:
                        source = f"{result.layers[origin.layer].label}, in {state.name}"
                        found[str(name)] = Inherited(str(name), item, source)
    return [found[key] for key in sorted(found)]


def _scope_names(
    analysis: Analysis | None, folders: Mapping[str, Sequence[str]], path: Path
) -> list[Completion]:
    """In ``org.yaml``: a cluster's, department's or project's name, from the folders ``clusters/``,
    ``departments/`` and ``projects/`` hold (those ``org.yaml`` does not name yet first)."""
    which = {("projects", 0): "projects", ("departments", 0): "departments", ("clusters", 0): "clusters"}.get(
        tuple(path[-2:])  # type: ignore[arg-type]
    )
    if which is None or (which == "clusters" and len(path) != 2):
        return []
    org = analysis.org if analysis is not None else None
    named: set[str] = set()
    if org is not None:
        named = set({"departments": org.departments, "clusters": org.clusters}.get(which, org.projects()))
    what = which.removesuffix("s")
    found = [
        Completion(n, "name", f"{what} folder, not in org.yaml yet")
        for n in folders.get(which, ())
        if n not in named
    ]
    return found + [Completion(n, "name", f"{what} of org.yaml") for n in sorted(named)]


def completions(
    analysis: Analysis | None,
    file: str,
    lines: Sequence[str],
    line: int,
    column: int,
    folders: Mapping[str, Sequence[str]] | None = None,
) -> list[Completion]:
    """What may be written at ``line`` and ``column`` (from 0) of ``file``; ``folders``: the names of the
    folders ``clusters/``, ``departments/`` and ``projects/`` hold (for ``org.yaml``)."""
    kind = kind_of_file(file)
    if kind is None:
        return []
    schema = schema_of(schema_kind(file, lines) or kind)
    path, value_of, _ = yaml_context(lines, line, column)
    if kind == "org" and (value_of == "name" or (value_of is None and path[-2:] == ("projects", 0))):
        return _scope_names(analysis, folders or {}, path)
    if value_of is not None:
        at = (*path, value_of)
        if at == ("meta", "name") and kind in ("template", "environment", "compute", "datasource"):
            stem = file.rsplit("/", 1)[-1].rsplit(".", 1)[0]
            return [Completion(stem, "name", "the file's name: a document's name is its file's")]
        if kind == "template" and value_of in ("environment", "compute") and path[-1:] == ("assets",):
            return _names(analysis, value_of)
        if kind == "template" and value_of == "name" and path[-2:] == ("datasources", 0) and "assets" in path:
            return _names(analysis, "datasource")
        if value_of == "name" and kind in ("defaults", "template") and path[-1:] == (0,):
            inherited = inherited_items(analysis, file, path[:-1])
            if inherited:
                return [Completion(i.key, "name", f"inherited from {i.source}") for i in inherited]
        return _values(schema, schema_at(schema, at))
    out: list[Completion] = []
    seen: set[str] = set()
    inside = spec_part(path)
    for node in schema_at(schema, path):
        for name, child in (node.get("properties") or {}).items():
            if name in seen:
                continue
            seen.add(name)
            runai = description((*inside, name)) if inside is not None else None
            if runai is not None:
                out.append(Completion(name, "field", "Run:ai", runai))
                continue
            variants = _resolve(schema, child)
            out.append(
                Completion(name, "field", "", _doc(child) or next((_doc(v) for v in variants if _doc(v)), ""))
            )
    return out
