"""What one written value does in each pair its layer reaches: the effective value, who set it, what it
overrode, what overrides it, every layer that writes the field and the policy rules that govern it.

The facts come from the compositions the analysis holds: the merge's provenance (``MergeResult.set_by``,
``excluded``), and explain's matching of a field to the rules that govern it and its ``defaultFrom``
origins.  :mod:`.hover` words them; :mod:`.navigate` turns the layers into locations.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, replace
from typing import Any

from template_engine.errors import Location

# explain's own matching of a field to the rules that govern it (``explain()`` computes every entry of both
# replicas to answer one field: too much for a hover over every pair).  explain.py is left as it is while
# another change to it is under way; a public name for it there would be better.
from template_engine.explain import _governing
from template_engine.lsp.analysis import Analysis, PairState
from template_engine.lsp.locate import Replica, layer_index, missing, replicas, value_at
from template_engine.merge.plan import SPEC_PLAN
from template_engine.paths import Path
from template_engine.policy.document import origin_text
from template_engine.walk import keyed_path

__all__ = ["Contribution", "FieldInPair", "fields_at"]


@dataclass(frozen=True, slots=True)
class Contribution:
    """One layer that writes the field (or excludes it), in merge order."""

    layer: int
    label: str
    location: Location
    value: Any
    excluded: bool


@dataclass(frozen=True, slots=True)
class FieldInPair:
    """The written value at one place, in one pair and replica."""

    state: PairState
    replica: Replica
    #: The field as the merge names it (``labels[name=tier].value``).
    path: Path
    #: The layer of this file (its position in the merge).
    here: int
    #: The effective value (rendered), or ``None`` when the field is not in the result.
    value: Any
    present: bool
    #: Where the effective value was set (``None``: no layer sets it).
    setter: Location | None
    setter_layer: int | None
    #: Every layer that writes the field, lowest first.
    chain: tuple[Contribution, ...]
    #: The policy rules that govern it (``explain``'s words).
    rules: tuple[str, ...]

    @property
    def overrode(self) -> Contribution | None:
        """The highest layer below this one that writes the field."""
        below = [c for c in self.chain if c.layer < self.here]
        return below[-1] if below else None

    @property
    def overridden_by(self) -> Contribution | None:
        """The layer above this one whose value wins (``None`` when this one's does)."""
        above = [c for c in self.chain if c.layer > self.here]
        return above[-1] if above else None


def fields_at(analysis: Analysis, file: str, raw: Path) -> Iterator[FieldInPair]:
    """The value written at ``raw`` (a path in the document of ``file``) in every pair and replica whose
    composition has ``file`` as a layer that holds it."""
    for state in analysis.pairs.values():
        composition = state.outcome.composition
        if composition is None or file not in state.deps:
            continue
        for replica, result, combined in replicas(composition):
            for here, layer in enumerate(result.layers):
                root = layer.root
                if layer.file != file or tuple(raw[: len(root)]) != root or len(raw) <= len(root):
                    continue
                path = keyed_path(layer.spec, raw[len(root) :], SPEC_PLAN)
                if path and path[-1] == "exclude":
                    path = path[:-1]
                chain = []
                for number, other in enumerate(result.layers):
                    at = layer_index(other).raw(path)
                    if at is None:
                        continue
                    written = value_at(other.spec, at)
                    excluded = isinstance(written, dict) and written.get("exclude") is True
                    shown = None if missing(written) else written
                    chain.append(Contribution(number, other.label, other.location(at), shown, excluded))
                origin = result.origin_of(path)
                value = value_at(combined, path)
                rules = _governing(composition, replica, path)
                setter = result.location(origin) if origin is not None else None
                policy = composition.policy_origins.get((replica, path))
                if policy is not None:  # set by the policy (defaultFrom, attribute default), as explain says
                    setter = replace(policy.location, layer=origin_text(policy, path), kind="policy")
                yield FieldInPair(
                    state,
                    replica,
                    path,
                    here,
                    None if missing(value) else value,
                    not missing(value),
                    setter,
                    origin.layer if origin is not None else None,
                    tuple(chain),
                    rules,
                )
