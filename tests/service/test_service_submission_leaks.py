"""A submission's error does not name a template the caller cannot read (issue 30): a template of another
department or project is answered exactly as a template that does not exist."""

from __future__ import annotations

import uuid
from typing import Any

from conftest import ADMIN, CLUSTER, NLP, VISION, Ids, bearer

W = "/api/v1/workloads/distributed"
T = "/api/v1/workload-templates/distributed"


def _answer(client: Any, token: str, project: str, template: str) -> tuple[int, Any]:
    body = {"name": "probe", "projectId": project, "clusterId": CLUSTER, "templateId": template}
    response = client.post(W, json=body, headers=bearer(token))
    shown = response.json()
    return response.status_code, shown


def test_a_template_the_caller_cannot_read_is_an_unknown_template(client: Any, ids: Ids) -> None:
    hidden = {}
    for token, project in ((VISION, "vision"), (NLP, "nlp")):
        for key, template in ids.templates.items():
            name = key[1]
            if client.get(ids.urls[key], headers=bearer(token)).status_code in (403, 404):
                hidden[(token, template)] = (project, name)
    assert len(hidden) >= 2, hidden
    for (token, template), (project, name) in hidden.items():
        project_id = ids.projects[project]
        status, shown = _answer(client, token, project_id, template)
        missing = str(uuid.uuid4())
        expected_status, expected = _answer(client, token, project_id, missing)
        assert status == expected_status == 400, shown
        assert name not in str(shown), shown
        assert str(shown).replace(template, "ID") == str(expected).replace(missing, "ID"), (shown, expected)
    # A template the caller reads but cannot use from this project is still named (it is no secret to them).
    vision_templates = [
        t for (s, n), t in ids.templates.items() if (VISION, t) not in hidden and s == "project"
    ]
    status, shown = _answer(client, ADMIN, ids.projects["nlp"], vision_templates[0])
    assert status == 400 and "is not visible from this project" in str(shown), shown
