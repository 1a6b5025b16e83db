"""The app factory shares its routes and its OpenAPI document between the apps of a process
(:func:`template_engine.service.app._shared_routes`): apps built in one process stay independent, and the
document is the one FastAPI builds for an app that includes the routers itself."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from conftest import TEMPLATES, bearer, open_client
from fastapi import FastAPI

from template_engine.service.app import DESCRIPTION, _document, _shared_routes, _version, create_app
from template_engine.service.routes import ROUTERS
from template_engine.service.settings import Settings

DEPARTMENTS = "/api/v1/org-unit/departments"
TEMPLATES_URL = "/api/v1/workload-templates/distributed"


def _auth_file(folder: Path, subject: str, token: str) -> Path:
    path = folder / f"{subject}.yaml"
    path.write_text(f"tokens:\n  - {{subject: {subject}, token: {token}, role: system-admin}}\n")
    return path


def test_two_apps_in_one_process_answer_from_their_own_state(tmp_path: Path, seeded_sqlite: Path) -> None:
    shutil.copyfile(seeded_sqlite, tmp_path / "seeded.db")
    seeded = create_app(
        Settings(
            database_url=f"sqlite:///{tmp_path / 'seeded.db'}", auth_file=_auth_file(tmp_path, "ann", "ann-t")
        )
    )
    empty = create_app(
        Settings(
            database_url=f"sqlite:///{tmp_path / 'empty.db'}",
            auth_file=_auth_file(tmp_path, "ben", "ben-t"),
            cache_bytes=0,
        )
    )
    assert seeded.state.store is not empty.state.store
    with open_client(seeded, "ann-t") as ann, open_client(empty, "ben-t") as ben:
        # Each app knows its own auth file's tokens only.
        assert ann.get(DEPARTMENTS, headers=bearer("ben-t")).status_code == 401
        assert ben.get(DEPARTMENTS, headers=bearer("ann-t")).status_code == 401
        # Each answers from its own database.
        assert [d["name"] for d in ann.get(DEPARTMENTS).json()["departments"]] == ["research", "applied"]
        assert ben.get(DEPARTMENTS).json()["departments"] == []
        assert ann.get(TEMPLATES_URL).json()["entries"]
        assert ben.get(TEMPLATES_URL).json()["entries"] == []
        # Writes reach their own app only, by their own principal.
        by_ann = ann.post(DEPARTMENTS, json={"name": "platform"})
        by_ben = ben.post(DEPARTMENTS, json={"name": "platform"})
        assert (by_ann.status_code, by_ben.status_code) == (201, 201)
        assert (by_ann.json()["createdBy"], by_ben.json()["createdBy"]) == ("ann", "ben")
        assert [d["name"] for d in ann.get(DEPARTMENTS).json()["departments"]] == [
            "research",
            "applied",
            "platform",
        ]
        assert [d["name"] for d in ben.get(DEPARTMENTS).json()["departments"]] == ["platform"]
        # 405's Allow comes from each app's own list of methods.
        assert ben.delete(DEPARTMENTS).headers["Allow"] == ann.delete(DEPARTMENTS).headers["Allow"]
    # Both were built on the very same route objects.
    for app in (seeded, empty):
        assert all(route in app.router.routes for route in _shared_routes())


def test_an_app_made_later_in_the_process_works_alone(tmp_path: Path, auth_file: Path) -> None:
    first = create_app(Settings(database_url=f"sqlite:///{tmp_path / 'a.db'}", auth_file=auth_file))
    with open_client(first) as client:
        assert client.get("/health").status_code == 200
    # The first app is gone (its lifespan ended, its engine disposed of); the next one builds on its routes.
    second = create_app(
        Settings(database_url=f"sqlite:///{tmp_path / 'b.db'}", auth_file=auth_file, seed=TEMPLATES)
    )
    with open_client(second) as client:
        assert client.get(TEMPLATES_URL).json()["entries"]


def _included_fresh() -> FastAPI:
    """An app that includes the routers itself, as ``create_app`` did before it shared them."""
    app = FastAPI(title="template-engine", version=_version(), description=DESCRIPTION)
    for router in ROUTERS:
        app.include_router(router)
    return app


def test_the_openapi_document_is_the_one_of_a_freshly_built_app(tmp_path: Path, auth_file: Path) -> None:
    apps = [
        create_app(Settings(database_url=f"sqlite:///{tmp_path / f'{name}.db'}", auth_file=auth_file))
        for name in ("a", "b")
    ]
    fresh = _document(_included_fresh())
    first, second = (app.openapi() for app in apps)
    assert first == fresh and second == fresh
    assert first is not second  # each app its own copy: a change to one is no other's
    with open_client(apps[1], token=None) as client:
        assert client.get("/openapi.json").json() == fresh
    for app in apps:
        app.state.store.engine.dispose()


def test_dependency_overrides_are_refused(tmp_path: Path, auth_file: Path) -> None:
    app = create_app(Settings(database_url=f"sqlite:///{tmp_path / 'a.db'}", auth_file=auth_file))
    with pytest.raises(NotImplementedError, match="shared"):
        app.dependency_overrides[_version] = _version
    app.state.store.engine.dispose()
