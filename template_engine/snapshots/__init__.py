"""Effective-spec snapshots: the pairs of an org, what each composes to, and how two compositions differ.

The modules re-exported here are pure and need nothing beyond the engine.  ``extension`` (the syrupy
extension) imports syrupy and is only loaded by the pytest plugin.
"""

from template_engine.snapshots.document import SUFFIX, read_snapshot, snapshot_text
from template_engine.snapshots.fields import FieldChange, diff_outputs, problem_lines
from template_engine.snapshots.pairs import (
    Outcome,
    Pair,
    compose_pair,
    dependencies,
    effective_output,
    pair_id,
    pairs,
    sources,
)

__all__ = [
    "SUFFIX",
    "FieldChange",
    "Outcome",
    "Pair",
    "compose_pair",
    "dependencies",
    "diff_outputs",
    "effective_output",
    "pair_id",
    "pairs",
    "problem_lines",
    "read_snapshot",
    "snapshot_text",
    "sources",
]
