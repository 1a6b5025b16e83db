"""The example org's effective specs, snapshot-tested with the plugin's own checks.

Every pair of ``templates/`` is compared with its file in the top-level ``snapshots/`` exactly as
``pytest --template-root=templates`` would compare it.  After an intended change to the example org, run
``pytest tests/test_example_org_snapshots.py --snapshot-update`` and review the snapshot diff.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from syrupy.assertion import SnapshotAssertion

from template_engine.diffing.pairs import Pair
from template_engine.errors import TemplateEngineError
from template_engine.pytest_plugin import OrgSnapshots

REPO = Path(__file__).resolve().parents[1]
SUITE = OrgSnapshots(REPO / "templates", REPO / "snapshots")


@pytest.mark.parametrize("pair", SUITE.params())
def test_example_org(pair: Pair | TemplateEngineError, snapshot: SnapshotAssertion) -> None:
    SUITE.check(pair, snapshot)


def test_every_file_of_the_example_org_is_valid() -> None:
    SUITE.check_files()


def test_every_snapshot_belongs_to_a_pair() -> None:
    assert SUITE.orphans() == []
    # Two files per pair: its effective spec, and its cluster objects under manifests/.
    assert 2 * len(SUITE.pairs()) == len(list((REPO / "snapshots").rglob("*.yaml")))
    assert len(SUITE.pairs()) == len(list((REPO / "snapshots" / "manifests").rglob("*.yaml")))
