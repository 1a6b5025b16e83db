"""Issue 30's schemathesis run: the four development roles of ``serve --dev --seed templates``, stateful.

The recipe of the issue's "Done when" (schemathesis over the four roles, stateful, long enough to matter,
0 server errors), run by ``benchmarks/fuzz_api.py`` with ``--dev``: the service app built in this process on
an SQLite file seeded from ``templates/`` as ``serve --seed templates`` seeds it, with the development tokens
of ``serve --dev`` (``dev-admin``, a system admin; ``dev-research``, the ``research`` department's admin;
``dev-vision``, the ``vision`` project's editor; ``dev-viewer``, a viewer), each role on its own copy of the
seeded file.  For each role: positive and negative requests on every operation, then schemathesis' state
machine over the links between the operations; every answer checked for a 5xx, by schemathesis'
conformance checks (status, content type, headers, body against the service's own OpenAPI document) and
against Run:ai's schemas.  The output ends with the 5xx (each with its reproduction), the non-conforming
answers grouped by check and operation, and one JSON line of the figures.

``nice python benchmarks/hostile_schemathesis.py`` runs the issue's length (about 57,000 requests, 26
minutes on one core of the shared 2-core machine, 630 CPU-s); any ``fuzz_api.py`` option after it
overrides the defaults (``--examples 5 --stateful-examples 20`` for a quick look, ``--seed N`` for other
draws).  The exit status is ``fuzz_api.py``'s: 1 on any 5xx, 2 when only a conformance check failed, 0
otherwise.
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import fuzz_api

#: The issue's run: every mode, stateful scenarios of up to 20 steps, a fixed seed (the same draws).
DEFAULTS = [
    "--dev",
    "--modes",
    "positive,negative,stateful",
    "--examples",
    "40",
    "--stateful-examples",
    "400",
    "--stateful-steps",
    "20",
    "--seed",
    "30",
]


def main(argv: list[str] | None = None) -> int:
    return fuzz_api.main([*DEFAULTS, *(sys.argv[1:] if argv is None else argv)])


if __name__ == "__main__":
    sys.exit(main())
