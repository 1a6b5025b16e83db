"""Go to definition and find references: the places of the org a place leads to.

* a field of a defaults file, template or asset: every layer that writes it, in any pair this layer
  reaches, lowest first (an ``exclude`` leads to the item it removes: the layers below that write it);
* an asset's or template's name: its file (definition) and the templates that name it (references);
* a rule of a policy file: the values it governs, in every pair of its scope, where each is written.
"""

from __future__ import annotations

from collections.abc import Iterable

from template_engine.errors import Location
from template_engine.explain import explain
from template_engine.lsp.analysis import Analysis
from template_engine.lsp.fields import fields_at
from template_engine.lsp.hover import name_at
from template_engine.lsp.locate import Spot, document_at, spot
from template_engine.org import Org, Template
from template_engine.paths import Match, Path, is_prefix
from template_engine.policy.document import FieldRules

__all__ = ["definitions", "references"]


def _unique(locations: Iterable[Location]) -> list[Location]:
    seen: dict[tuple[str, int | None], Location] = {}
    for location in locations:
        seen.setdefault((location.file, location.line), location)
    return list(seen.values())


def _named_file(org: Org, kind: str, name: str) -> list[Location]:
    if kind == "template":
        files = sorted({t.file for by in org.templates.values() for t in by.values() if t.name == name})
        return [_meta_line(org, file) for file in files]
    asset = org.assets.get(kind, {}).get(name)  # type: ignore[call-overload]
    return [_meta_line(org, asset.file)] if asset is not None else []


def _meta_line(org: Org, file: str) -> Location:
    document = document_at(org, file)
    line = document.source.lines.get(("meta", "name")) if document is not None else None
    return Location(file, line[0] if line else 1, line[1] if line else 1)


def _users(org: Org, kind: str, name: str) -> list[Location]:
    """Where templates name the asset (or, for a template, where it is defined)."""
    if kind == "template":
        return _named_file(org, kind, name)
    found = []
    for by_name in org.templates.values():
        for template in by_name.values():
            for path, value in _asset_names(template):
                if value == name and _kind_of(path) == kind:
                    line, column = template.source.lines.get(path, (1, 1))
                    found.append(Location(template.file, line, column))
    return found


def _asset_names(template: Template) -> Iterable[tuple[Path, str]]:
    for root, assets in (
        (("assets",), template.doc.assets),
        (
            ("master", "assets"),
            template.doc.master.assets if template.doc.master else None,
        ),
    ):
        if assets is None:
            continue
        if assets.environment:
            yield (*root, "environment"), assets.environment
        if assets.compute:
            yield (*root, "compute"), assets.compute
        for index, ref in enumerate(assets.datasources or ()):
            yield (*root, "datasources", index, "name"), ref.name


def _kind_of(path: Path) -> str:
    return "datasource" if "datasources" in path else str(path[-1])


def _field_layers(analysis: Analysis, file: str, raw: Path, below_only: bool) -> list[Location]:
    """Every layer that writes the field at ``raw`` of ``file``, lowest first; ``below_only``: those below
    this file's layer (what an exclusion removes)."""
    ordered: list[tuple[int, int, Location]] = []
    for number, found in enumerate(fields_at(analysis, file, raw)):
        for contribution in found.chain:
            if below_only and contribution.layer >= found.here:
                continue
            ordered.append((contribution.layer, number, contribution.location))
    ordered.sort(key=lambda item: (item[0], item[1]))
    return _unique(location for _, _, location in ordered)


def _rule_at(analysis: Analysis, file: str, line: int) -> FieldRules | None:
    for policy in (*analysis.org.policies.values(), *analysis.org.kind_policies.values()):
        if policy.file != file:
            continue
        before = [r for r in policy.rules if r.location.line is not None and r.location.line <= line]
        exact = [r for r in before if r.location.line == line]
        nearest = exact or sorted(before, key=lambda r: r.location.line or 0)[-1:]
        found: FieldRules | None = nearest[0] if nearest else None
        return found
    return None


def _governed(analysis: Analysis, rules: FieldRules) -> list[Location]:
    """Where each value the rule governs is written, in every pair whose policy has this rule."""
    found: list[Location] = []
    path: Path = tuple(rules.path)
    for state in analysis.pairs.values():
        composition = state.outcome.composition
        if composition is None or not any(
            r.location == rules.location for r in composition.policy.for_replica(rules.replica)
        ):
            continue
        for entry in explain(composition, path):
            if entry.replica != rules.replica or entry.location is None or entry.action == "unset":
                continue
            rest = entry.path[len(path) :]
            if rules.attribute and not (
                len(rest) >= 1 and isinstance(rest[0], Match) and tuple(rest[1:]) == rules.attribute
            ):
                continue
            if rules.instances and not (len(rest) == 1 and isinstance(rest[0], Match)):
                continue
            if is_prefix(path, entry.path):
                found.append(entry.location)
    return _unique(found)


def _target(
    analysis: Analysis, file: str, line: int, column: int
) -> FieldRules | tuple[Spot, tuple[str, str] | None] | None:
    """What is at ``line`` and ``column`` (from 1) of ``file``: a policy rule (first), else the place in a
    document and the asset or template it names (``None`` when none); ``None`` when nothing is there."""
    rules = _rule_at(analysis, file, line)
    if rules is not None:
        return rules
    document = document_at(analysis.org, file)
    where = spot(document, line, column) if document is not None else None
    if where is None:
        return None
    return where, name_at(analysis, where)


def definitions(analysis: Analysis, file: str, line: int, column: int) -> list[Location]:
    """Where the thing at ``line`` and ``column`` (from 1) of ``file`` is defined (see the module)."""
    target = _target(analysis, file, line, column)
    if target is None:
        return []
    if isinstance(target, FieldRules):
        return _governed(analysis, target)
    where, named = target
    if named is not None:
        return _named_file(analysis.org, *named)
    excluding = where.path and where.path[-1] == "exclude"
    return _field_layers(analysis, file, where.path, below_only=bool(excluding))


def references(analysis: Analysis, file: str, line: int, column: int) -> list[Location]:
    """Where the thing at ``line`` and ``column`` of ``file`` is used: the templates that name an asset, the
    layers that write a field, the values a rule governs."""
    target = _target(analysis, file, line, column)
    if target is None:
        return []
    if isinstance(target, FieldRules):
        return _governed(analysis, target)
    where, named = target
    if named is not None:
        return _users(analysis.org, *named)
    return _field_layers(analysis, file, where.path, below_only=False)
