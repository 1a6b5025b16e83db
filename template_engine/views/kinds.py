"""The report's "Where kinds differ" page of one project: every field where the policy sides of the workload
kinds differ (:func:`template_engine.across_kinds.differing_fields`), a column per kind, as ``template-engine
kinds`` prints them."""

from __future__ import annotations

import json
from dataclasses import dataclass

from template_engine.across_kinds import FieldAcrossKinds, KindSide, article, differing_fields
from template_engine.kinds import TEMPLATE_KINDS
from template_engine.org import Org, View
from template_engine.views.model import seen_from

__all__ = ["KindCell", "KindRow", "KindsPage", "kinds_page"]


@dataclass(frozen=True, slots=True)
class KindCell:
    """One kind at one field: a short summary, then the lines that explain it."""

    summary: str
    lines: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class KindRow:
    field: str
    cells: tuple[KindCell, ...]
    #: The kinds that are alike, group by group (``training, workspace: 1 item; imposed passwd``).
    alike: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class KindsPage:
    """Where the kinds differ, seen from one view."""

    project: str
    seen_from: str
    kinds: tuple[str, ...]
    rows: tuple[KindRow, ...]

    @property
    def title(self) -> str:
        return f"Where kinds differ in {self.seen_from}"


def _cell(side: KindSide) -> KindCell:
    lines: list[str] = []
    if side.problems:
        lines += [p.one_line() for p in side.problems]
    elif not side.has_field:
        lines += [f"{n.message()} ({n.location.with_layer()})" for n in side.not_applied]
    else:
        if side.is_set:
            value = json.dumps(side.value, sort_keys=True, ensure_ascii=False)
            where = "; ".join(place.with_layer() for place in side.locations)
            where = f" ({where})" if where else ""
            lines.append(f"= {value}{where}")
        lines += [f"imposed: {line}" for line in side.imposed_lines()]
        lines += [f"rule: {line}" for line in side.rule_lines()]
    summary = (
        side.summary() if side.has_field or side.problems else f"not a field of {article(side.kind.noun)}"
    )
    return KindCell(summary, tuple(lines))


def _row(across: FieldAcrossKinds) -> KindRow:
    alike = tuple(f"{', '.join(s.name for s in group)}: {text}" for group, text in across.groups())
    return KindRow(across.field, tuple(_cell(side) for side in across.sides), alike)


def kinds_page(org: Org, view: View) -> KindsPage:
    """The page of ``view`` (a project's): its fields where the kinds differ."""
    rows = tuple(_row(across) for across in differing_fields(org, view))
    return KindsPage(view.project or "", seen_from(view), tuple(kind.name for kind in TEMPLATE_KINDS), rows)
