"""Provenance: which layer and file set each field and list item, and which layer excluded what."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any, Literal

from template_engine.compose import SPEC_PLAN, Composition
from template_engine.errors import Location
from template_engine.merge.engine import MergeResult
from template_engine.merge.plan import PlanNode, item_key
from template_engine.paths import Path, format_path, is_prefix

Action = Literal["set", "added", "excluded", "derived"]


@dataclass(frozen=True, slots=True)
class Entry:
    """One line of an explanation."""

    replica: Literal["worker", "master"]
    path: Path
    action: Action
    value: Any
    location: Location | None

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "replica": self.replica,
            "field": format_path(self.path),
            "action": self.action,
        }
        if self.action in ("set", "derived"):
            out["value"] = self.value
        if self.location is not None:
            out["layer"] = self.location.layer
            out["file"] = self.location.file
            if self.location.line is not None:
                out["line"] = self.location.line
        return out

    def render(self) -> str:
        where = f"{self.location.layer}, {self.location.file}" if self.location else "no layer"
        if self.location is not None and self.location.line is not None:
            where += f":{self.location.line}"
        field = f"{self.replica:6} {format_path(self.path)}"
        if self.action == "excluded":
            return f"{field}  excluded by {where}"
        if self.action == "added":
            return f"{field}  item added by {where}"
        return f"{field} = {_show(self.value)}  ({where})"


def _show(value: Any) -> str:
    import json

    return json.dumps(value, sort_keys=True)


def _leaves(value: Any, path: Path, node: PlanNode) -> Iterator[tuple[Path, Any, bool]]:
    """``(path, value, is_item)`` for every scalar, whole-replaced value and keyed item under ``value``."""
    if node.whole or (isinstance(value, list) and node.key is None):
        yield path, value, False
    elif isinstance(value, Mapping):
        for key in sorted(value):
            yield from _leaves(value[key], (*path, key), node.child(key))
    elif isinstance(value, list):
        for index, item in enumerate(value):
            match = item_key(item, node.key) if node.key is not None else None
            here = (*path, match if match is not None else index)
            yield here, None, True
            yield from _leaves(item, here, node)
    else:
        yield path, value, False


def _entries(
    replica: Literal["worker", "master"],
    spec: Mapping[str, Any] | None,
    result: MergeResult | None,
    derived: bool,
) -> list[Entry]:
    if spec is None or result is None:
        return []
    excluded = dict(result.excluded)
    out = []
    for path, value, is_item in _leaves(spec, (), SPEC_PLAN):
        if is_item:
            gone = excluded.pop(path, None)
            if gone is not None:  # excluded below, then given again above: tell it in that order
                out.append(Entry(replica, path, "excluded", None, result.location(gone)))
            origin = result.set_by.get(path)
            out.append(Entry(replica, path, "added", None, result.location(origin) if origin else None))
        else:
            origin = result.origin_of(path)
            location = result.location(origin) if origin is not None else None
            out.append(Entry(replica, path, "derived" if derived else "set", value, location))
    for path, origin in excluded.items():
        out.append(Entry(replica, path, "excluded", None, result.location(origin)))
    return out


def explain(composition: Composition, field: Path = ()) -> list[Entry]:
    """Every entry of both replicas, narrowed to ``field`` and what is below it."""
    entries = _entries("worker", composition.combined_spec, composition.worker, False)
    entries += _entries(
        "master", composition.combined_master_spec, composition.master, composition.master_same_as_worker
    )
    found = [e for e in entries if is_prefix(field, e.path)]
    if not found and field:
        # A value set but omitted from the output (an empty list or mapping replaces the lower value).
        for replica, result in (("worker", composition.worker), ("master", composition.master)):
            origin = result.set_by.get(field) if result is not None else None
            if result is not None and origin is not None:
                found.append(Entry(replica, field, "set", [], result.location(origin)))  # type: ignore[arg-type]
    return found
