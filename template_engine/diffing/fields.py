"""Field-by-field difference of two effective outputs, with the layer that caused each change.

Combined specs are compared by path with the merge plan's identity keys, so a list item is addressed as
``environmentVariables[name=HTTP_PROXY]`` whatever its position.  When the new side's composition is known,
a removed item says which layer excluded it and a new or changed value says which layer now sets it; when
the old side's composition is known, a value that simply stopped being set says who used to set it.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, replace
from typing import Any, Literal

from template_engine.compose import Composition
from template_engine.errors import Location
from template_engine.merge.engine import MergeResult
from template_engine.merge.plan import SPEC_PLAN, PlanNode
from template_engine.paths import Match, Path, format_path
from template_engine.runnable import issue_line
from template_engine.walk import items

Kind = Literal["added", "removed", "changed", "reordered"]
#: The side of a change a layer is named on: the new composition's, or the old one's.
Side = Literal["old", "new"]

#: The sections of an effective output, in the order changes are listed.
#: ``workloadType`` is in a kind of one role's output only (a template whose ``kind:`` changed says so).
SECTIONS = ("runnable", "combinedSpec", "combinedMasterSpec", "masterSpecSameAsWorker", "workloadType")
_SPECS = ("combinedSpec", "combinedMasterSpec")
_MISSING: Any = object()
#: The longest value written inline in a text line; ``--output json`` always has the whole value.
MAX_INLINE = 160


def _with_layer(location: Location, side: Side) -> str:
    return location.with_layer()


@dataclass(frozen=True, slots=True)
class FieldChange:
    """One changed field: ``section`` (``combinedSpec``...) and the path inside it."""

    section: str
    path: Path
    kind: Kind
    old: Any = None
    new: Any = None
    #: The layer that now sets the value (added or changed).
    set_by: Location | None = None
    #: The layer that excluded the item (removed), or the item around the field.
    excluded_by: Location | None = None
    excluded_item: bool = False
    #: The layer that used to set a value that is no longer set (removed).
    was_set_by: Location | None = None
    #: The same change in ``combinedMasterSpec`` (a master that is the same as the worker), not listed twice.
    also_master: bool = False

    @property
    def field(self) -> str:
        if not self.path:
            return self.section
        inner = format_path(self.path)
        return f"{self.section}{inner}" if inner.startswith("[") else f"{self.section}.{inner}"

    def render(self) -> str:
        text = self._render()
        return f"{text}; the same in combinedMasterSpec" if self.also_master else text

    def cause(self, name: Callable[[Location, Side], str] = _with_layer) -> str:
        """The layer a change comes from, in words, each layer named by ``name`` (given the side of the change
        it is on): ``set by L`` (added or changed), ``excluded by L``, ``its item was excluded by L`` or
        ``no longer set by L`` (removed); empty when no layer names it (a reordering, the engine's own
        value).  ``diff`` lines and the service's preview (``ui/pages.why``) both say it this way."""
        if self.kind == "removed":
            if self.excluded_by is not None:
                what = "its item was excluded by" if self.excluded_item else "excluded by"
                return f"{what} {name(self.excluded_by, 'new')}"
            if self.was_set_by is not None:
                return f"no longer set by {name(self.was_set_by, 'old')}"
            return ""
        if self.kind != "reordered" and self.set_by is not None:
            return f"set by {name(self.set_by, 'new')}"
        return ""

    def _render(self) -> str:
        cause = self.cause()
        if self.kind == "removed":
            notes = [] if _is_container(self.old) else [f"was {_inline(self.old)}"]
            notes += [cause] if cause else []
            return f"{self.field}: removed" + (f" ({'; '.join(notes)})" if notes else "")
        if self.kind == "reordered":
            return f"{self.field}: order {_inline(self.old)} -> {_inline(self.new)}"
        if self.kind == "added":
            text = f"{self.field}: added {_inline(self.new)}"
        else:
            text = f"{self.field}: {_inline(self.old)} -> {_inline(self.new)}"
        return text + (f" ({cause})" if cause else "")

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"field": self.field, "change": self.kind}
        if self.kind != "added":
            out["old"] = self.old
        if self.kind != "removed":
            out["new"] = self.new
        for name, location in (
            ("setBy", self.set_by),
            ("excludedBy", self.excluded_by),
            ("wasSetBy", self.was_set_by),
        ):
            if location is not None:
                out[name] = location.to_dict()
        if self.also_master:
            out["alsoIn"] = ["combinedMasterSpec"]
        return out


def _is_container(value: Any) -> bool:
    return isinstance(value, Mapping | list)


def _inline(value: Any) -> str:
    text = json.dumps(value, sort_keys=True, ensure_ascii=False)
    return text if len(text) <= MAX_INLINE else text[: MAX_INLINE - 1] + "…"


# -- walking two values -------------------------------------------------------------------------------------


def _keyed(values: Any, node: PlanNode) -> dict[Match, Any] | None:
    """The items of a keyed list by identity, or ``None`` when it cannot be read that way."""
    if node.key is None or node.whole or not isinstance(values, list):
        return None
    out: dict[Match, Any] = {}
    for segment, item in items(values, node):
        if not isinstance(segment, Match) or segment in out:
            return None
        out[segment] = item
    return out


def same(a: Any, b: Any) -> bool:
    """Equality that tells ``true`` from ``1`` and ``1`` from ``1.0`` (plain ``==`` does not)."""
    if a is b:
        return True
    if type(a) is not type(b) or a != b:
        return False
    if isinstance(a, dict):
        return a.keys() == b.keys() and all(same(a[k], b[k]) for k in a)
    if isinstance(a, list):
        return len(a) == len(b) and all(same(x, y) for x, y in zip(a, b, strict=True))
    return bool(a == b)


def _walk(old: Any, new: Any, path: Path, node: PlanNode) -> Iterator[tuple[Kind, Path, Any, Any]]:
    if same(old, new):
        return
    if old is _MISSING or old is None:
        yield "added", path, None, new
        return
    if new is _MISSING or new is None:
        yield "removed", path, old, None
        return
    if isinstance(old, Mapping) and isinstance(new, Mapping) and not node.whole:
        for key in sorted(set(old) | set(new)):
            yield from _walk(old.get(key, _MISSING), new.get(key, _MISSING), (*path, key), node.child(key))
        return
    old_items, new_items = _keyed(old, node), _keyed(new, node)
    if old_items is None or new_items is None:
        yield "changed", path, old, new
        return
    for match, item in old_items.items():
        if match not in new_items:
            yield "removed", (*path, match), item, None
    for match, item in new_items.items():
        if match not in old_items:
            yield "added", (*path, match), None, item
    for match, item in new_items.items():
        if match in old_items:
            yield from _walk(old_items[match], item, (*path, match), node)
    kept_old = [str(m) for m in old_items if m in new_items]
    kept_new = [str(m) for m in new_items if m in old_items]
    if kept_old != kept_new:
        yield "reordered", path, kept_old, kept_new


def _issue_text(issue: Any) -> str:
    if not isinstance(issue, Mapping):
        return str(issue)
    # A recorded issue (its JSON: a snapshot, a kept answer) does not say whether its sentence names its
    # field (``RunnableIssue.names_field``), and every sentence names what it is about: the replica, then it.
    return issue_line(str(issue.get("replica") or ""), "", str(issue.get("message")))


def _runnable(old: Any, new: Any) -> Iterator[FieldChange]:
    old = old if isinstance(old, Mapping) else {}
    new = new if isinstance(new, Mapping) else {}
    # ``issue`` is the first of ``issues``: its changes show there.
    if not same(old.get("isRunnable"), new.get("isRunnable")):
        yield FieldChange(
            "runnable", ("isRunnable",), "changed", old.get("isRunnable"), new.get("isRunnable")
        )
    for key in ("issues", "warnings"):
        before = [_issue_text(i) for i in old.get(key) or ()]
        after = [_issue_text(i) for i in new.get(key) or ()]
        for text in before:
            if text not in after:
                yield FieldChange("runnable", (key,), "removed", text)
        for text in after:
            if text not in before:
                yield FieldChange("runnable", (key,), "added", None, text)


# -- provenance ---------------------------------------------------------------------------------------------


def _result(composition: Composition | None, section: str) -> MergeResult | None:
    if composition is None:
        return None
    return composition.worker if section == "combinedSpec" else composition.master


def _excluded(result: MergeResult | None, path: Path) -> tuple[Location | None, bool]:
    """Where ``path``, or the keyed item it sits in, was excluded."""
    if result is None:
        return None, False
    for end in range(len(path), 0, -1):
        origin = result.excluded.get(path[:end])
        if origin is not None:
            return result.location(origin), end < len(path)
    return None, False


def _origin(result: MergeResult | None, path: Path) -> Location | None:
    return result.locate(path) if result is not None else None


def _spec_changes(
    section: str, old: Any, new: Any, old_comp: Composition | None, new_comp: Composition | None
) -> Iterator[FieldChange]:
    new_result, old_result = _result(new_comp, section), _result(old_comp, section)
    composition = new_comp or old_comp  # the plan of the kind composed (a changed kind: the new one's)
    plan = composition.kind.plan() if composition is not None else SPEC_PLAN
    for kind, path, before, after in _walk(
        _MISSING if old is None else old, _MISSING if new is None else new, (), plan
    ):
        if kind == "removed":
            excluded_by, in_item = _excluded(new_result, path)
            yield FieldChange(
                section,
                path,
                kind,
                before,
                None,
                excluded_by=excluded_by,
                excluded_item=in_item,
                was_set_by=None if excluded_by is not None else _origin(old_result, path),
            )
        elif kind == "reordered":
            yield FieldChange(section, path, kind, before, after)
        else:
            yield FieldChange(section, path, kind, before, after, set_by=_origin(new_result, path))


def diff_outputs(
    old: Mapping[str, Any] | None,
    new: Mapping[str, Any] | None,
    new_composition: Composition | None = None,
    old_composition: Composition | None = None,
) -> list[FieldChange]:
    """Every field that differs between two effective outputs (see ``effective_output``)."""
    old = old or {}
    new = new or {}
    changes: list[FieldChange] = []
    for section in SECTIONS:
        before, after = old.get(section), new.get(section)
        if section == "runnable":
            changes += _runnable(before, after)
        elif section in _SPECS:
            changes += _spec_changes(section, before, after, old_composition, new_composition)
        elif not same(before, after):
            changes.append(FieldChange(section, (), "changed", before, after))
    if old.get("masterSpecSameAsWorker") is True and new.get("masterSpecSameAsWorker") is True:
        changes = _fold_master(changes)
    return changes


def _fold_master(changes: list[FieldChange]) -> list[FieldChange]:
    """A master that is the same as the worker changes with it: list each such change once."""

    def key(change: FieldChange) -> tuple[Any, ...]:
        return change.path, change.kind, _inline(change.old), _inline(change.new)

    master = {key(c) for c in changes if c.section == "combinedMasterSpec"}
    worker = {key(c) for c in changes if c.section == "combinedSpec"}
    out = []
    for change in changes:
        if change.section == "combinedSpec" and key(change) in master:
            out.append(replace(change, also_master=True))
        elif change.section != "combinedMasterSpec" or key(change) not in worker:
            out.append(change)
    return out
