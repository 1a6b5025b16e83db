"""The snapshot files of one pair: a short comment naming the pair, then its effective output as YAML
(``<pair id>.yaml``), and beside them, under :data:`MANIFESTS` (``manifests/<pair id>.yaml``), the cluster
objects it renders to, as a YAML list in their order (the job, then its claims).

The objects live in a folder of their own, not in ``<pair id>.manifests.yaml``: a template may be named
``x.manifests`` (names take dots) and a name may be 250 characters long, so a suffix could collide with
another pair's snapshot or exceed a file name's 255 bytes; no pair id starts with ``manifests/``.

Keys are sorted, lines are never folded and nothing depends on the machine, so the same org always gives
byte-identical files and a pull request shows a line diff a reviewer can read.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import yaml

from template_engine.diffing.pairs import Pair
from template_engine.errors import InputError, Location, Problem
from template_engine.loader.yaml_safe import load_yaml

SUFFIX = ".yaml"
UPDATE_HINT = "pytest --snapshot-update"
#: The folder, inside the snapshots folder, of every pair's objects.
MANIFESTS = "manifests"


def manifests_name(pair: Pair) -> str:
    """The snapshot name (and, with :data:`SUFFIX`, the file) of the pair's objects."""
    return f"{MANIFESTS}/{pair.id}"


def snapshot_text(pair: Pair, output: Mapping[str, Any]) -> str:
    header = (
        f"# {pair.describe()}\n# The effective spec it composes to. Written by {UPDATE_HINT}; do not edit.\n"
    )
    body = yaml.safe_dump(
        dict(output), sort_keys=True, allow_unicode=True, default_flow_style=False, width=2**31 - 1
    )
    return header + body


def manifests_text(pair: Pair, objects: Sequence[Mapping[str, Any]]) -> str:
    header = (
        f"# {pair.describe()}\n# The cluster objects it renders to (template-engine manifests). "
        f"Written by {UPDATE_HINT}; do not edit.\n"
    )
    body = yaml.safe_dump(
        [dict(obj) for obj in objects],
        sort_keys=True,
        allow_unicode=True,
        default_flow_style=False,
        width=2**31 - 1,
    )
    return header + body


def read_manifests(text: str, name: str) -> list[dict[str, Any]]:
    """The objects recorded in a manifests snapshot file (``name`` is used in error messages)."""
    data = load_yaml(text, name).data
    if not isinstance(data, list) or not all(isinstance(obj, Mapping) for obj in data):
        raise InputError([Problem("a manifests snapshot file holds a list of objects", (), Location(name))])
    return [dict(obj) for obj in data]


def read_snapshot(text: str, name: str) -> dict[str, Any]:
    """The effective output recorded in a snapshot file (``name`` is used in error messages)."""
    data = load_yaml(text, name).data
    if not isinstance(data, Mapping):
        raise InputError(
            [Problem("a snapshot file holds a mapping", (), Location(name), "runnable, combinedSpec...")]
        )
    return dict(data)
