"""The hover text of a place in a file of the org (Markdown).

On a field of a defaults file, template or asset: its effective value in each pair this layer reaches, the
layer that set it (``file:line``), what this value overrode, whether a higher layer overrides it
(``overridden by projects/vision/defaults.yaml:12 in 3 of 4 pairs``), every layer that writes the field
(lowest first) and the policy rules that govern it.  Pairs that say the same are one line.  On an asset's
or template's name: what it is and where it is used.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from template_engine.lsp.analysis import Analysis
from template_engine.lsp.descriptions import description
from template_engine.lsp.fields import Contribution, FieldInPair, fields_at
from template_engine.lsp.locate import Document, Spot, document_at, spot
from template_engine.org import Asset, Template
from template_engine.paths import format_path

__all__ = ["field_hover", "hover_spot", "hover_text", "name_at", "name_hover"]

#: Pair names listed in one line of a hover before ``and N more``.
SHOWN = 4


def _show(value: Any) -> str:
    text = json.dumps(value, sort_keys=True)
    return f"`{text if len(text) <= 80 else text[:77] + '...'}`"


def _names(names: Sequence[str]) -> str:
    shown = ", ".join(names[:SHOWN])
    return shown + (f" and {len(names) - SHOWN} more" if len(names) > SHOWN else "")


def _layer(c: Contribution) -> str:
    return f"{c.label} (`{c.location.place()}`)"


def _pair_line(found: FieldInPair) -> str:
    composition = found.state.outcome.composition
    lacks = composition is not None and any(n.field == found.path[:1][0] for n in composition.not_applied)
    if not found.present and lacks:
        assert composition is not None
        text = f"not applied: Run:ai's {composition.kind.noun} spec has no field {found.path[0]!r}"
    elif not found.present:
        text = "not in the result"
        if found.chain and found.chain[-1].excluded:
            text += f", excluded by {_layer(found.chain[-1])}"
    else:
        text = _show(found.value)
    here = [c for c in found.chain if c.layer == found.here]
    if here and here[0].excluded:
        text = f"excluded here; {text}"
        if found.overridden_by is not None:
            text += f", given again by {_layer(found.overridden_by)}"
    elif found.overridden_by is not None:
        text += f", overridden by {_layer(found.overridden_by)}"
    elif found.setter is not None:
        text += f", set by {found.setter.layer or 'this layer'} (`{found.setter.place()}`)"
    overrode = found.overrode
    if overrode is not None and not (here and here[0].excluded):
        what = "an exclusion" if overrode.excluded else _show(overrode.value)
        text += f"; overrode {what} of {_layer(overrode)}"
    return text


def field_hover(found: Sequence[FieldInPair]) -> str | None:
    """The hover of a written value from what it does in each pair (:func:`~.fields.fields_at`)."""
    if not found:
        return None
    first = found[0]
    total = len({f.state.pair.id for f in found})
    lines = [f"**`{format_path(first.path)}`** ({_label(found)})", ""]
    runai = description(first.path)
    if runai:
        lines += [f"*{runai}*", ""]
    groups: dict[str, list[str]] = {}
    said: dict[str, str] = {}  # each pair's worker line: its master's is shown only when it differs
    for item in found:
        text = _pair_line(item)
        if item.replica == "master":
            if said.get(item.state.pair.id) == text:
                continue
            text = f"(master) {text}"
        said.setdefault(item.state.pair.id, text)
        groups.setdefault(text, []).append(item.state.name)
    for text, names in groups.items():
        lines.append(f"- {_names(names)} ({len(names)} of {total}): {text}")
    over: dict[str, list[str]] = {}
    for item in found:
        winner = item.overridden_by
        if winner is not None and not any(c.layer == item.here and c.excluded for c in item.chain):
            over.setdefault(winner.location.place(), []).append(item.state.name)
    for place, names in over.items():
        lines += ["", f"Overridden by `{place}` in {len(set(names))} of {total} pairs."]
    chains: dict[tuple[str, ...], None] = {}
    for item in found:
        if item.chain:  # a pair whose kind lacks the field has none (its line says "not applied")
            chains[tuple(_layer(c) + (" (excludes)" if c.excluded else "") for c in item.chain)] = None
    lines += ["", "Layers, lowest first:"]
    for chain in list(chains)[:3]:
        lines.append("- " + " → ".join(chain))
    rules = sorted({rule for item in found for rule in item.rules})
    if rules:
        lines += ["", "Governed by: " + "; ".join(rules)]
    return "\n".join(lines)


def _label(found: Sequence[FieldInPair]) -> str:
    item = found[0]
    here = [c for c in item.chain if c.layer == item.here]
    return here[0].label if here else "this layer"


def name_at(analysis: Analysis, where: Spot) -> tuple[str, str] | None:
    """The asset (``(kind, name)``) or template (``("template", name)``) named at ``where``: a template's
    ``assets`` entry or ``meta.name``, an asset's ``meta.name``."""
    document, path = where.document, where.path
    if path == ("meta", "name"):
        if isinstance(document, Template):
            return "template", document.name
        return (document.kind, document.name) if isinstance(document, Asset) else None
    if not isinstance(document, Template):
        return None
    for root in (("assets",), ("master", "assets")):
        if tuple(path[: len(root)]) != root:
            continue
        rest = path[len(root) :]
        assets = (
            document.doc.assets
            if root == ("assets",)
            else (document.doc.master.assets if document.doc.master else None)
        )
        if assets is None:
            return None
        if rest in (("environment",), ("compute",)):
            name = getattr(assets, rest[0])
            return (rest[0], name) if name else None
        if len(rest) >= 2 and rest[0] == "datasources" and isinstance(rest[1], int):
            items = assets.datasources or []
            return ("datasource", items[rest[1]].name) if rest[1] < len(items) else None
    return None


def _name_hover(analysis: Analysis, kind: str, name: str) -> str:
    org = analysis.org
    if kind == "template":
        users = [s.name for s in analysis.pairs.values() if s.pair.template.name == name]
        files = sorted(
            {s.pair.template.file for s in analysis.pairs.values() if s.pair.template.name == name}
        )
        return "\n".join(
            [
                f"**template `{name}`**: {', '.join(f'`{f}`' for f in files)}",
                "",
                f"Used in {len(users)} pairs: {_names(users)}",
            ]
        )
    asset: Asset | None = org.assets.get(kind, {}).get(name)  # type: ignore[call-overload]
    if asset is None:
        return f"**{kind} asset `{name}`**: no such asset in the org"
    description = getattr(asset.doc.meta, "description", None) if getattr(asset.doc, "meta", None) else None
    templates = sorted(
        f"{t.name} ({t.scope})"
        for by_name in org.templates.values()
        for t in by_name.values()
        if (asset.kind, asset.name) in t.asset_refs()
    )
    pairs = [s.name for s in analysis.pairs.values() if asset.file in s.deps]
    lines = [f"**{kind} asset `{name}`** ({asset.scope}), `{asset.file}`"]
    if description:
        lines += ["", str(description)]
    lines += ["", f"Used by {len(templates)} templates: {_names(templates)}"]
    lines += [f"In {len(pairs)} pairs: {_names(pairs)}"]
    return "\n".join(lines)


def hover_spot(analysis: Analysis, file: str, line: int, column: int) -> Spot | None:
    """The value written at ``line`` and ``column`` (from 1) of ``file``, in a document of the org."""
    document: Document | None = document_at(analysis.org, file)
    return spot(document, line, column) if document is not None else None


def name_hover(analysis: Analysis, where: Spot) -> str | None:
    """The hover of an asset's or template's name at ``where``, if one is named there."""
    named = name_at(analysis, where)
    return _name_hover(analysis, *named) if named is not None else None


def hover_text(analysis: Analysis, file: str, line: int, column: int) -> str | None:
    """The hover at ``line`` and ``column`` (from 1) of ``file``, or ``None`` when there is nothing to say
    (at once: the server goes through the pairs in steps, :mod:`.server`)."""
    where = hover_spot(analysis, file, line, column)
    if where is None:
        return None
    named = name_hover(analysis, where)
    if named is not None:
        return named
    return field_hover(list(fields_at(analysis, where.document.file, where.path)))
