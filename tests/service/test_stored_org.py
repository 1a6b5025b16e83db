"""One builder of an ``Org`` from database rows: a composition's few rows and the whole stored org (impact,
validateOnly, the UI) read a stored document alike, broken documents included (issue 17, item 1)."""

from __future__ import annotations

from fastapi import FastAPI

from template_engine.service.auth import Principal
from template_engine.service.composer import org_for
from template_engine.service.context import Placement
from template_engine.service.impact import stored_org

ADMIN = Principal("probe", "system-admin")


def test_a_stored_document_is_broken_alike_for_a_composition_and_the_whole_org(app: FastAPI) -> None:
    store = app.state.store
    with store.write(ADMIN) as ctx:
        current = ctx.repo.defaults(["system"])["system"]
        # A document the engine no longer accepts, written past the API (as an older or newer version might).
        ctx.repo.put_defaults("system", {"spec": {"numWorkers": "many"}}, current.audit.version, "probe")
    with store.read(ADMIN) as ctx:
        whole = stored_org(ctx).org
        one = org_for(ctx, Placement("system"), None)
    file = "db:defaults/system"
    assert file in whole.broken and file in one.broken
    assert whole.broken[file] == one.broken[file]
    assert "no longer valid" in whole.broken[file][0].message
    assert whole.broken[file][0].path == ("spec", "numWorkers")
    # The layer counts as empty in both, as a broken defaults file of a folder does.
    system = next(scope for scope in whole.defaults if scope.type == "system")
    assert whole.defaults[system].doc == one.defaults[system].doc
    assert whole.defaults[system].doc.spec is None
