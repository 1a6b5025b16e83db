"""The snapshot file of one pair: a short comment naming the pair, then its effective output as YAML.

Keys are sorted, lines are never folded and nothing depends on the machine, so the same org always gives
byte-identical files and a pull request shows a line diff a reviewer can read.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import yaml

from template_engine.diffing.pairs import Pair
from template_engine.errors import InputError, Location, Problem
from template_engine.loader.yaml_safe import load_yaml

SUFFIX = ".yaml"
UPDATE_HINT = "pytest --snapshot-update"


def snapshot_text(pair: Pair, output: Mapping[str, Any]) -> str:
    header = (
        f"# {pair.describe()}\n# The effective spec it composes to. Written by {UPDATE_HINT}; do not edit.\n"
    )
    body = yaml.safe_dump(
        dict(output), sort_keys=True, allow_unicode=True, default_flow_style=False, width=2**31 - 1
    )
    return header + body


def read_snapshot(text: str, name: str) -> dict[str, Any]:
    """The effective output recorded in a snapshot file (``name`` is used in error messages)."""
    data = load_yaml(text, name).data
    if not isinstance(data, Mapping):
        raise InputError(
            [Problem("a snapshot file holds a mapping", (), Location(name), "runnable, combinedSpec...")]
        )
    return dict(data)
