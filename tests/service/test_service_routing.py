"""Routing answers honestly, on every route of the API: a segment a parameter does not accept is no path
(404), a method a path does not take is a 405 whose ``Allow`` names the methods it does take, and
``OPTIONS`` advertises only those.

The routes are read from the app (every :class:`~template_engine.service.routes.common.JsonRoute` of
:data:`~template_engine.service.routes.ROUTERS`), so a new route is swept without a line here.
"""

from __future__ import annotations

import re
from collections import defaultdict
from typing import Any

import pytest

from template_engine.service.routes import ROUTERS
from template_engine.service.routes.common import JsonRoute

METHODS = ("GET", "HEAD", "POST", "PUT", "PATCH", "DELETE")
UUID = "0f0e0d0c-0b0a-4908-8706-050403020100"
PARAMETER = re.compile(r"{(\w+):(\w+)}")
#: A value each kind of parameter accepts (so the path exists), and values it does not.
VALID = {"uuid": UUID, "orgid": "1"}
INVALID = {
    "uuid": ["not-a-uuid", "trainings", "123", UUID + "0", UUID.replace("0f", "zz", 1)],
    "orgid": ["count", "abc", "-1", "1e3", "1.0", "1" * 19],
}


def _templates() -> dict[str, set[str]]:
    """Each path of the API (with its convertors: ``/distributed/{templateId:uuid}``) and its methods."""
    out: dict[str, set[str]] = defaultdict(set)
    for router in ROUTERS:
        for route in router.routes:
            if isinstance(route, JsonRoute):
                out[route.path] |= route.methods
    return dict(sorted(out.items()))


TEMPLATES = _templates()
WITH_PARAMETERS = [t for t in TEMPLATES if "{" in t]


def _allow(methods: set[str]) -> set[str]:
    return methods | {"OPTIONS"} | ({"HEAD"} if "GET" in methods else set())


def _sample(template: str) -> str:
    return PARAMETER.sub(lambda m: VALID[m[2]], template)


def test_every_path_parameter_of_the_api_is_typed() -> None:
    """Every parameter has a convertor, and a route whose parameter could take any segment cannot be built."""
    # 14, the manifests of a template and of a workload (issue 18), the resources of a department and of a
    # project, and each data source kind at its own path (issue 19: nfs, pvc, git, s3, host-path, config-map
    # and secrets instead of one datasource path), the workload paths of each other kind (issue 32: read
    # and delete of trainings, workspaces, inferences; suspend and resume of trainings and workspaces) and a
    # template of each other kind (trainings, workspaces, inferences: one, its explain and its manifests),
    # and a cluster and a cluster's defaults (issue 33)
    assert len(WITH_PARAMETERS) == 42
    for template in WITH_PARAMETERS:
        assert re.sub(r"{\w+:\w+}", "", template).count("{") == 0, template

    def endpoint(name: str) -> None:
        return None

    with pytest.raises(TypeError, match=r"path parameter .name. must be a uuid\.UUID or an id"):
        JsonRoute("/api/v1/things/{name}", endpoint)


@pytest.mark.parametrize("template", WITH_PARAMETERS)
def test_a_segment_the_parameter_does_not_accept_is_no_path(client: Any, template: str) -> None:
    methods = sorted(_allow(TEMPLATES[template]) - {"OPTIONS"})
    for parameter in PARAMETER.finditer(template):
        for junk in INVALID[parameter[2]]:
            path = _sample(template.replace(parameter[0], junk))
            if any(re.fullmatch(_regex(other), path) for other in TEMPLATES):
                continue  # a path of its own (``/workload-templates/count``): answered by that route
            for method in methods:
                response = client.request(
                    method, path, json={} if method in ("POST", "PUT", "PATCH") else None
                )
                assert response.status_code == 404, (method, path, response.text)
                if method != "HEAD":
                    assert response.json() == {"code": 404, "message": "No such endpoint."}


def _regex(template: str) -> str:
    parts = re.split(r"({\w+:\w+})", template)
    return "".join(
        {"uuid": "[0-9a-fA-F-]{32,36}", "orgid": "[0-9]{1,18}"}[p.split(":")[1][:-1]]
        if p.startswith("{")
        else re.escape(p)
        for p in parts
    )


@pytest.mark.parametrize("template", list(TEMPLATES))
def test_a_method_the_path_does_not_take_is_a_405_naming_those_it_takes(client: Any, template: str) -> None:
    path = _sample(template)
    others = [t for t in TEMPLATES if t != template and re.fullmatch(_regex(t), path)]
    assert not others, f"{path} is the path of {template} and of {others}"
    allow = _allow(TEMPLATES[template])
    options = client.options(path)
    assert options.status_code == 204
    assert set(options.headers["Allow"].split(", ")) == allow
    for method in sorted(set(METHODS) - allow):
        response = client.request(method, path)
        assert response.status_code == 405, (method, path)
        assert set(response.headers["Allow"].split(", ")) == allow, (method, path)
        assert response.content == b"" if method == "HEAD" else response.json()["code"] == 405


@pytest.mark.parametrize(
    ("method", "path", "status", "allow"),
    [
        ("GET", "/api/v1/org-unit/projects/telemetry", 404, None),
        ("GET", "/api/v1/org-unit/departments/telemetry", 404, None),
        ("GET", "/api/v1/workload-templates/distributed-inferences", 404, None),
        ("GET", "/api/v1/workloads/trainings", 405, "POST, OPTIONS"),  # issue 32: trainings are submitted
        ("OPTIONS", "/api/v1/workloads/distributed", 204, "POST, OPTIONS"),
        ("GET", "/api/v1/workloads/distributed", 405, "POST, OPTIONS"),
        ("PUT", "/api/v1/workload-templates/distributed/preview", 405, "POST, OPTIONS"),
        ("GET", "/api/v1/workload-templates/distributed/preview", 405, "POST, OPTIONS"),
    ],
)
def test_the_issues_paths(client: Any, method: str, path: str, status: int, allow: str | None) -> None:
    """The answers issue 17 found wrong: 400 "must be an id" for no path, GET advertised where none is."""
    response = client.request(method, path, json={} if method == "PUT" else None)
    assert response.status_code == status
    assert response.headers.get("Allow") == allow
