"""A scope's versions never go back (issue 17, item 6: 0 lost updates): a DELETE of a scope's defaults or
policy leaves a tombstone that reads as no document with an ETag of its own, and the next write goes on from
it, so a writer holding an ETag from before the delete cannot overwrite a document re-created since."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from conftest import ADMIN, TEMPLATES, Ids, MakeApp, open_client
from fastapi.testclient import TestClient

from template_engine.service.exporter import export_folder
from template_engine.service.importer import import_folder
from template_engine.service.storage.database import create_db_engine, transaction
from template_engine.service.storage.repository import Repository

P = "/api/v2/policy/distributed"


def _variables(policy: dict[str, Any]) -> set[str]:
    worker = ((policy.get("policy") or {}).get("defaults") or {}).get("worker") or {}
    return {v["name"] for v in (worker.get("environmentVariables") or {}).get("instances") or []}


def _policy(name: str) -> dict[str, Any]:
    return {"defaults": {"worker": {"environmentVariables": {"instances": [{"name": name, "value": "x"}]}}}}


def test_a_stale_if_match_after_a_delete_and_a_re_creation_of_defaults_is_a_412(
    make_app: MakeApp, database_url: str
) -> None:
    with open_client(make_app(database_url)) as client:
        url = f"/api/v1/defaults/projects/{Ids(client).projects['vision']}"
        read = client.get(url)
        stale = read.headers["ETag"]
        assert stale == '"1"' and read.json()
        assert client.delete(url, headers={"If-Match": stale}).status_code == 204
        gone = client.get(url)
        assert gone.json() == {} and gone.headers["ETag"] not in (stale, '"0"')
        # The reviewer's re-creation, If-Match "0" as for a scope that never had defaults: refused, since
        # this one had; a writer that read the deleted scope re-creates it from the ETag it was given.
        assert client.put(url, json={"spec": {"tty": True}}, headers={"If-Match": '"0"'}).status_code == 412
        made = client.put(url, json={"spec": {"tty": True}}, headers={"If-Match": gone.headers["ETag"]})
        assert made.status_code == 200
        tags = [stale, gone.headers["ETag"], made.headers["ETag"]]
        assert len(set(tags)) == 3, tags
        # The stale writer's PUT, PATCH and DELETE: 412 with the current ETag, nothing overwritten.
        for write in (
            lambda h: client.put(url, json={"spec": {"backoffLimit": 9}}, headers=h),
            lambda h: client.patch(url, json={"spec": {"backoffLimit": 9}}, headers=h),
            lambda h: client.delete(url, headers=h),
        ):
            refused = write({"If-Match": stale})
            assert refused.status_code == 412 and refused.headers["ETag"] == made.headers["ETag"]
        after = client.get(url)
        assert (after.json(), after.headers["ETag"]) == ({"spec": {"tty": True}}, made.headers["ETag"])


def test_a_stale_if_match_after_a_delete_and_a_re_creation_of_a_policy_is_a_412(
    make_app: MakeApp, database_url: str
) -> None:
    with open_client(make_app(database_url)) as client:
        recsys = Ids(client).projects["recsys"]
        scope = {"scope": "project", "projectId": recsys}
        meta = {"name": "recsys", "scope": "project", "projectId": int(recsys)}
        read = client.get(P, params=scope)
        stale = read.headers["ETag"]
        assert "policy" in read.json()
        assert client.delete(P, params=scope, headers={"If-Match": stale}).status_code == 204
        gone = client.get(P, params=scope)
        assert "policy" not in gone.json() and gone.headers["ETag"] not in (stale, '"0"')
        first = {"meta": meta, "policy": _policy("FIRST")}
        assert client.put(P, json=first, headers={"If-Match": '"0"'}).status_code == 412
        made = client.put(P, json=first, headers={"If-Match": gone.headers["ETag"]})
        assert made.status_code == 200, made.json()
        tags = [stale, gone.headers["ETag"], made.headers["ETag"]]
        assert len(set(tags)) == 3, tags
        late = {"meta": meta, "policy": _policy("STALE")}
        for write in (
            lambda h: client.put(P, json=late, headers=h),
            lambda h: client.patch(P, json=late, headers=h),
            lambda h: client.delete(P, params=scope, headers=h),
        ):
            refused = write({"If-Match": stale})
            assert refused.status_code == 412 and refused.headers["ETag"] == made.headers["ETag"]
        after = client.get(P, params=scope)
        assert after.headers["ETag"] == made.headers["ETag"] and _variables(after.json()) == {"FIRST"}
        # Deleting only the defaults half moves the policy's ETag on too, never back.
        assert client.delete(f"/api/v1/defaults/projects/{recsys}").status_code == 204
        assert client.get(P, params=scope).headers["ETag"] not in tags


def test_a_deleted_scope_reads_and_exports_as_one_with_no_documents(
    make_app: MakeApp, database_url: str, tmp_path: Path
) -> None:
    with open_client(make_app(database_url)) as client:
        recsys = Ids(client).projects["recsys"]
        url = f"/api/v1/defaults/projects/{recsys}"
        assert client.delete(url).status_code == 204
        assert client.delete(P, params={"scope": "project", "projectId": recsys}).status_code == 204
        assert client.get(url).json() == {}
        # An impact over the stored org with tombstones in it: the deleted scope is a scope with no defaults.
        dry = client.put(url, json={"spec": {"tty": True}}, params={"validateOnly": True})
        assert dry.status_code == 200 and dry.json()["affectedTemplates"], dry.json()
        assert client.get(url).json() == {}
    engine = create_db_engine(database_url)
    with transaction(engine, write=False) as connection:
        repo = Repository(connection)
        key = f"project:{recsys}"
        assert key not in repo.defaults([key]) and key not in repo.policies([key])
        assert key not in {row.scope_key for row in repo.all_defaults() + repo.all_policies()}
        assert repo.defaults_at(key)[0] is None and repo.defaults_at(key)[1] == 2
    report = export_folder(engine, tmp_path / "out")
    assert (tmp_path / "out/projects/vision/defaults.yaml").is_file()  # the others are written
    assert not (tmp_path / "out/projects/recsys/defaults.yaml").exists()
    assert not (tmp_path / "out/projects/recsys/policy.yaml").exists()
    assert report is not None
    engine.dispose()


def test_a_database_holding_only_tombstones_is_empty_and_its_seed_goes_on_from_them(
    make_app: MakeApp, database_url: str
) -> None:
    with open_client(make_app(database_url, seed=False)) as client:
        system = "/api/v1/defaults/system"
        assert client.get(system).headers["ETag"] == '"0"'  # never had any
        assert client.put(system, json={"spec": {"tty": True}}).headers["ETag"] == '"1"'
        assert client.delete(system).status_code == 204
        assert client.get(system).headers["ETag"] == '"2"'
    engine = create_db_engine(database_url)
    report = import_folder(engine, TEMPLATES, only_if_empty=True)
    assert report is not None and report.added["defaults"] >= 1
    engine.dispose()
    with open_client(make_app(database_url, seed=False)) as client:
        seeded = client.get("/api/v1/defaults/system")
        assert seeded.json() and seeded.headers["ETag"] == '"3"'


def _sign_in(browser: TestClient) -> str:
    page = browser.get("/ui/sign-in")
    nonce = re.search(r'name="nonce" value="([^"]*)"', page.text)
    assert nonce is not None, page.text
    form = {"nonce": nonce[1], "token": ADMIN, "next": "/ui/"}
    assert browser.post("/ui/sign-in", data=form, follow_redirects=False).status_code == 303
    csrf = re.search(r'name="csrf" value="([^"]*)"', browser.get("/ui/").text)
    assert csrf is not None
    return csrf[1]


def test_the_ui_form_of_a_deleted_document_goes_on_from_its_version(client: Any, app: Any) -> None:
    recsys = Ids(client).projects["recsys"]
    url, page = f"/api/v1/defaults/projects/{recsys}", f"/ui/scope/project:{recsys}/edit/defaults"
    with TestClient(app, base_url="http://localhost") as browser:
        csrf = _sign_in(browser)
        before = re.search(r'name="version" value="([0-9]+)"', browser.get(page).text)
        assert before is not None and before[1] == "1"
        assert client.delete(url).status_code == 204
        after = re.search(r'name="version" value="([0-9]+)"', browser.get(page).text)
        assert after is not None and after[1] == "2"
        text = "spec:\n  tty: true\n"
        for stale in (before[1], "0"):  # read before the delete, or as if the scope never had defaults
            form = {"csrf": csrf, "version": stale, "text": text, "action": "save"}
            assert browser.post(page, data=form, follow_redirects=False).status_code == 412
        assert client.get(url).json() == {}
        form = {"csrf": csrf, "version": after[1], "text": text, "action": "save"}
        assert browser.post(page, data=form, follow_redirects=False).status_code == 303
    saved = client.get(url)
    assert (saved.json(), saved.headers["ETag"]) == ({"spec": {"tty": True}}, '"3"')
