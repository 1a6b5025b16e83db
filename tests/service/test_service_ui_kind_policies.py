"""The UI's pages of the policy of every kind (issue 32): each kind's policy file in the change form
(``/ui/scope/{key}/edit/training-policy``...), stored by the very write of the API's policy routes of that
kind, and the effective policy of each kind (``/ui/scope/{key}/policy?kind=training``).

Each browser signs in through the sign-in form, as a browser does (``http://localhost``: the session cookie's
development exception to ``Secure``); the API is read with a system admin's token.
"""

from __future__ import annotations

import html
import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import yaml
from conftest import ADMIN, NLP, VIEWER, VISION, Ids, ui_sign_in
from fastapi import FastAPI
from fastapi.testclient import TestClient

from template_engine import load_org
from template_engine.kinds import DISTRIBUTED, KIND_BY_NAME, KINDS, WorkloadKind

TRAINING = KIND_BY_NAME["training"]
LEADER_WORKER = KIND_BY_NAME["distributed-inference"]
API = "/api/v2/policy"


class Browser:
    """A signed-in browser: its client (cookie jar) and the CSRF token of its forms."""

    def __init__(self, client: TestClient, csrf: str) -> None:
        self.client = client
        self.csrf = csrf

    def form(self, url: str) -> dict[str, str]:
        """The change form of ``url``: its CSRF token, version and text."""
        page = self.client.get(url)
        assert page.status_code == 200, page.text
        text = re.search(r"<textarea[^>]*>(.*?)</textarea>", page.text, re.S)
        assert text is not None
        return {"csrf": _field(page.text, "csrf"), "version": _field(page.text, "version"), "text": text[1]}

    def post(self, url: str, data: dict[str, str]) -> Any:
        return self.client.post(url, data=data, follow_redirects=False)


def _field(text: str, name: str) -> str:
    found = re.search(rf'name="{name}" value="([^"]*)"', text)
    assert found is not None, f"no {name} field"
    return html.unescape(found[1])


@pytest.fixture
def browser_for(app: FastAPI) -> Iterator[Any]:
    opened: list[TestClient] = []

    def make(token: str = ADMIN) -> Browser:
        client = TestClient(app, base_url="http://localhost")
        client.__enter__()
        opened.append(client)
        return Browser(client, ui_sign_in(client, token))

    yield make
    for client in opened:
        client.__exit__(None, None, None)


def _document(kind: WorkloadKind) -> str:
    """The form's name of ``kind``'s policy: its policy file without ``.yaml``."""
    return kind.policy_file.removesuffix(".yaml")


@dataclass(frozen=True)
class Vision:
    """Project vision: its UI key, the API's query and body ``meta`` of its policies, and the URL of its
    training policy's form."""

    key: str
    query: dict[str, Any]
    meta: dict[str, Any]
    url: str


@pytest.fixture
def vision(ids: Ids) -> Vision:
    project = ids.projects["vision"]
    key = f"project:{project}"
    meta = {"name": "vision", "scope": "project", "projectId": int(project)}
    url = f"/ui/scope/{key}/edit/{_document(TRAINING)}"
    return Vision(key, {"scope": "project", "projectId": project}, meta, url)


def _problems(page: Any) -> list[str]:
    """The problems a refused form lists, as text."""
    items = re.findall(r"<li[^>]*>(.*?)</li>", page.text.split('id="problem-list"', 1)[1].split("</ul>")[0])
    return [html.unescape(re.sub(r"<a [^>]*>line \d+</a>: ", "", item)) for item in items]


def _api_lines(answer: Any) -> list[str]:
    """An API refusal's problems as the form words them: ``field: message (expected ...)``, the field
    without the body's ``policy.``."""
    out = []
    for problem in answer.json()["problems"]:
        field = problem["field"].removeprefix("policy.")
        expected = f" (expected {problem['expected']})" if problem.get("expected") else ""
        out.append(f"{field}: {problem['message']}{expected}")
    return out


def _rules(page: str) -> dict[tuple[str, str], tuple[list[str], str]]:
    """The effective policy page's rules: (replica, field) -> (the rule's phrases, its source scope)."""
    out = {}
    for replica, field, source, body in re.findall(
        r'<tr data-replica="([^"]*)" data-field="([^"]*)" data-source="([^"]*)">(.*?)</tr>', page, re.S
    ):
        out[(replica, field)] = (re.findall(r"<li>(.*?)</li>", body), html.unescape(source))
    return out


# -- save in the form, read over the API, see in the effective view ---------------------------------------


def test_a_training_policy_saved_in_the_form_is_the_api_s_and_the_effective_view_s(
    browser_for: Any, client: TestClient, ids: Ids, vision: Vision
) -> None:
    key, query, url = vision.key, vision.query, vision.url
    editor = browser_for(VISION)
    form = editor.form(url)
    assert form["version"] == "0" and form["text"] == ""  # vision has no training policy yet
    distributed_before = client.get(f"{API}/distributed", params=query).json()
    text = "defaults:\n  backoffLimit: 5\nrules:\n  backoffLimit:\n    max: 9\nimposedAssets:\n- datasets\n"

    # Preview: the training template of vision would get the project's default; nothing is stored.
    preview = editor.post(url, {**form, "text": text, "action": "preview"})
    assert preview.status_code == 200, preview.text
    assert 'data-template="hpo-sweep"' in preview.text
    assert "compared with version 0 of the training policy of project vision" in html.unescape(preview.text)
    row = re.search(
        r'<tr data-field="combinedSpec.backoffLimit" data-change="changed">(.*?)</tr>', preview.text
    )
    assert row is not None
    assert re.findall(r"<td[^>]*>(.*?)</td>", row[1])[2:] == [
        "<code>2</code>",  # the system training policy's default
        "<code>5</code>",
        "set by your edit",
    ]
    assert client.get(f"{API}/trainings", params=query).headers["ETag"] == '"0"'

    saved = editor.post(url, {**form, "text": text, "action": "save"})
    assert saved.status_code == 303, saved.text
    assert saved.headers["location"] == f"{url}?saved=1"
    got = client.get(f"{API}/trainings", params=query)
    assert got.status_code == 200 and got.headers["ETag"] == '"1"'
    assert got.json()["policy"] == {
        "defaults": {"backoffLimit": 5},
        "rules": {"backoffLimit": {"max": 9}},
        "imposedAssets": [ids.assets[("datasource", "datasets")]],
    }
    assert got.json()["effective"]["defaults"]["backoffLimit"] == 5
    # The distributed policy of the project is another policy: as it was.
    assert client.get(f"{API}/distributed", params=query).json() == distributed_before
    # The form shows what was saved, at the version the save made.
    again = editor.client.get(saved.headers["location"])
    assert 'id="saved"' in again.text and _field(again.text, "version") == "1"
    assert yaml.safe_load(
        html.unescape(re.search(r"<textarea[^>]*>(.*?)</textarea>", again.text, re.S)[1])
    ) == (  # type: ignore[index]
        yaml.safe_load(text)
    )

    # The effective training policy: the project's rule and default beside the system training policy's.
    page = editor.client.get(f"/ui/scope/{key}/policy?kind={TRAINING.name}")
    assert page.status_code == 200, page.text
    rules = _rules(page.text)
    assert rules[("worker", "backoffLimit")] == (["at most 9"], "project vision")
    assert rules[("worker", "parallelism")] == (["at most 8"], "system")  # system/training-policy.yaml
    defaults = re.search(r'<pre id="worker-defaults">(.*?)</pre>', page.text, re.S)
    assert defaults is not None and yaml.safe_load(html.unescape(defaults[1]))["backoffLimit"] == 5
    imposed = re.findall(r'<li data-replica="worker" data-asset="([^"]*)">', page.text)
    assert sorted(imposed) == ["datasets", "passwd"]
    assert 'id="master-defaults"' not in page.text  # a training has no master
    # The distributed effective policy has none of it.
    distributed = editor.client.get(f"/ui/scope/{key}/policy")
    assert ("worker", "backoffLimit") not in _rules(distributed.text)
    shared = re.search(r'<pre id="worker-defaults">(.*?)</pre>', distributed.text, re.S)
    assert shared is not None and yaml.safe_load(html.unescape(shared[1]))["backoffLimit"] == 6


def test_a_distributed_inference_policy_takes_its_imposed_assets_per_role_by_name(
    browser_for: Any, client: TestClient, ids: Ids
) -> None:
    url = f"/ui/scope/system/edit/{_document(LEADER_WORKER)}"
    admin = browser_for(ADMIN)
    form = admin.form(url)
    text = "rules:\n  leader:\n    image: {required: true}\nimposedAssets:\n  leader: [datasets]\n"
    saved = admin.post(url, {**form, "text": text, "action": "save"})
    assert saved.status_code == 303, saved.text
    got = client.get(f"{API}/{LEADER_WORKER.policy_segment}", params={"scope": "tenant"}).json()
    assert got["policy"] == {
        "rules": {"leader": {"image": {"required": True}}},
        "imposedAssets": {"leader": [ids.assets[("datasource", "datasets")]]},
    }
    page = admin.client.get(f"/ui/scope/system/policy?kind={LEADER_WORKER.name}")
    assert _rules(page.text)[("leader", "image")] == (["required"], "system")
    assert re.search(r'<li data-replica="leader" data-asset="datasets">', page.text)
    # An unknown data source name is refused and stores nothing.
    refused = admin.post(
        url, {**admin.form(url), "text": "imposedAssets:\n  worker: [nosuch]\n", "action": "save"}
    )
    assert refused.status_code == 400
    assert _problems(refused) == [
        "imposedAssets.worker[0]: unknown data source asset 'nosuch' "
        "(expected the name of a data source asset)"
    ]


# -- the API's and the loader's words ---------------------------------------------------------------------


def test_a_training_policy_ruling_num_workers_is_refused_with_the_api_s_words(
    browser_for: Any, client: TestClient, vision: Vision
) -> None:
    query, url = vision.query, vision.url
    editor = browser_for(VISION)
    form = editor.form(url)
    text = "rules:\n  numWorkers:\n    max: 4\n"
    meta = vision.meta
    api = client.put(f"{API}/trainings", json={"meta": meta, "policy": yaml.safe_load(text)})
    assert api.status_code == 400
    assert (
        "a training has no such field (a distributed training has it)" in api.json()["problems"][0]["message"]
    )
    for action in ("preview", "save"):
        page = editor.post(url, {**form, "text": text, "action": action})
        assert page.status_code == 400 and 'id="problems"' in page.text, action
        assert _problems(page) == _api_lines(api)
        assert 'data-line="2"' in page.text  # numWorkers is on the text's second line
    assert client.get(f"{API}/trainings", params=query).headers["ETag"] == '"0"'  # nothing stored


#: Documents a training policy file may not be, each with one problem of the policy's reader.
_BROKEN = {
    "an unknown section": "rulez:\n  tty: {canEdit: false}\n",
    "a role in a flat policy": "rules:\n  worker:\n    tty: {canEdit: false}\n",
    "a value default of the wrong type": "defaults:\n  backoffLimit: many\n",
    "a value default the kind lacks": "defaults:\n  distributedFramework: PyTorch\n",
    "imposed assets per role": "imposedAssets:\n  worker: [datasets]\n",
}


@pytest.mark.parametrize("case", sorted(_BROKEN))
def test_a_broken_kind_policy_gets_the_problems_of_its_file_word_for_word(
    browser_for: Any, tmp_path: Path, case: str
) -> None:
    """The form's problems are the loader's reading the same text as a folder's ``training-policy.yaml``:
    the same field, message and expectation."""
    root = tmp_path / "org"
    (root / "system").mkdir(parents=True)
    (root / "org.yaml").write_text("departments: []\n")
    (root / "system" / TRAINING.policy_file).write_text(_BROKEN[case])
    from_file = load_org(root).broken[f"system/{TRAINING.policy_file}"]
    assert from_file, case
    url = f"/ui/scope/system/edit/{_document(TRAINING)}"
    admin = browser_for(ADMIN)
    form = admin.form(url)
    page = admin.post(url, {**form, "text": _BROKEN[case], "action": "preview"})
    assert page.status_code == 400, page.text
    assert _problems(page) == [
        f"{'.'.join(map(str, p.path)).replace('.[', '[')}: {p.message}"
        + (f" (expected {p.expected})" if p.expected else "")
        for p in from_file
    ]


# -- who may, and a stale form ----------------------------------------------------------------------------


def test_a_viewer_or_another_project_s_editor_cannot_open_or_post_the_form(
    browser_for: Any, client: TestClient, vision: Vision
) -> None:
    key, query, url = vision.key, vision.query, vision.url
    form = browser_for(VISION).form(url)
    for token in (VIEWER, NLP):
        other = browser_for(token)
        assert other.client.get(url).status_code == 403, token
        for action in ("preview", "save"):
            posted = other.post(
                url, {**form, "csrf": other.csrf, "text": "rules: {tty: {canEdit: false}}", "action": action}
            )
            assert posted.status_code == 403, (token, action)
    # A viewer reads the effective policy, and is offered no form.
    viewer = browser_for(VIEWER)
    page = viewer.client.get(f"/ui/scope/{key}/policy?kind={TRAINING.name}")
    assert page.status_code == 200 and 'id="edit-policy-link"' not in page.text
    assert client.get(f"{API}/trainings", params=query).headers["ETag"] == '"0"'


def test_a_form_read_before_an_api_write_is_refused_as_stale(
    browser_for: Any, client: TestClient, vision: Vision
) -> None:
    query, url = vision.query, vision.url
    editor = browser_for(VISION)
    form = editor.form(url)
    meta = vision.meta
    written = client.put(
        f"{API}/trainings", json={"meta": meta, "policy": {"rules": {"tty": {"canEdit": False}}}}
    )
    assert written.status_code == 200 and written.headers["ETag"] == '"1"'
    text = "rules:\n  stdin:\n    canEdit: false\n"
    for action in ("preview", "save"):
        stale = editor.post(url, {**form, "text": text, "action": action})
        assert stale.status_code == 412 and 'id="stale"' in stale.text, action
        assert "has changed since it was read (version 1, not 0)" in html.unescape(stale.text)
        assert html.escape(text, quote=False) in stale.text  # the text stays in the form
    got = client.get(f"{API}/trainings", params=query)
    assert got.headers["ETag"] == '"1"' and got.json()["policy"] == {"rules": {"tty": {"canEdit": False}}}
    # Read again, the form saves.
    saved = editor.post(url, {**editor.form(url), "text": text, "action": "save"})
    assert saved.status_code == 303 and saved.headers["location"] == f"{url}?saved=2"


def test_a_form_without_the_csrf_token_stores_nothing(
    browser_for: Any, client: TestClient, vision: Vision
) -> None:
    query, url = vision.query, vision.url
    editor = browser_for(VISION)
    form = editor.form(url)
    posted = editor.post(
        url, {**form, "csrf": "forged", "text": "rules: {tty: {canEdit: false}}", "action": "save"}
    )
    assert posted.status_code == 403
    assert client.get(f"{API}/trainings", params=query).headers["ETag"] == '"0"'


# -- links --------------------------------------------------------------------------------------------------


def test_the_scope_page_links_each_kind_s_policy_and_form(browser_for: Any, vision: Vision) -> None:
    key = vision.key
    editor = browser_for(VISION)
    page = editor.client.get(f"/ui/scope/{key}").text
    viewer_page = browser_for(VIEWER).client.get(f"/ui/scope/{key}").text
    for kind in KINDS:
        effective = f'href="/ui/scope/{key}/policy?kind={kind.name}" data-link="policy-of-kind"'
        edit = f'href="/ui/scope/{key}/edit/{_document(kind)}" data-link="edit-kind-policy"'
        assert effective in page and edit in page, kind.name
        assert effective in viewer_page and edit not in viewer_page, kind.name
        shown = editor.client.get(f"/ui/scope/{key}/policy?kind={kind.name}")
        assert shown.status_code == 200, kind.name
        assert f'id="policy-kind" data-kind="{kind.name}"' in shown.text
        assert f'href="/ui/scope/{key}/edit/{_document(kind)}" id="edit-policy-link"' in shown.text
        # Each role of the kind has its merged defaults (or says it has none).
        for role in kind.roles:
            heading = f"<h3>{role.capitalize()}"
            assert heading in shown.text, (kind.name, role)
        form = editor.client.get(f"/ui/scope/{key}/edit/{_document(kind)}")
        assert form.status_code == 200, kind.name
        assert f"<code>{kind.policy_file}</code>" in form.text
    # The distributed policy is the page without a kind, and its form the one it always was.
    assert _document(DISTRIBUTED) == "policy"
    plain = editor.client.get(f"/ui/scope/{key}/policy").text
    assert f'id="policy-kind" data-kind="{DISTRIBUTED.name}"' in plain
    assert 'id="worker-defaults"' in plain
    assert editor.client.get(f"/ui/scope/{key}/policy?kind=batch").status_code == 404
    assert editor.client.get(f"/ui/scope/{key}/edit/batch-policy").status_code == 404
