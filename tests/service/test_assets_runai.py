"""Assets as Run:ai has them (issue 19, item 2): the translation of a spec between the templates folder's form
(stored) and Run:ai's (answered and accepted), every kind through the real SDK, every answer checked against
Run:ai's whole OpenAPI document, and an asset made through the SDK composing as the same asset written as a
file of a templates folder does.
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Iterator
from functools import cache
from pathlib import Path
from typing import Any

import httpx
import pytest
import yaml
from conftest import ADMIN, TEMPLATES, bearer
from hypothesis import given, settings
from hypothesis import strategies as st
from sdk_helpers import Lazy, LiveServer, RealSchemas, bearer_client, install, parsed, runapy, serve
from waiting import LIVE_TIMEOUT

from template_engine import load_org
from template_engine.compose import compose
from template_engine.models.documents import ASSET_MODELS
from template_engine.paths import format_path
from template_engine.service.app import create_app
from template_engine.service.asset_shapes import (
    BY_KIND,
    CONNECTION_TOOLS,
    KINDS,
    SECURITY_FIELDS,
    RunaiKind,
    ShapeProblem,
    from_runai,
    to_runai,
)
from template_engine.service.settings import Settings

install()
m = Lazy("runai.models")

FIXTURE = Path(__file__).resolve().parents[1] / "fixtures" / "runai" / "runai-openapi-1.224.0.json"


@cache
def whole() -> RealSchemas:
    """Run:ai's whole document: the tests' copy when there is one, else the shared reference."""
    return RealSchemas(FIXTURE)


def conforms(method: str, path: str, status: int, body: Any) -> None:
    """``body`` is what Run:ai's document declares for ``status`` of the operation at ``path``."""
    found = whole().operation(method, path)
    assert found is not None, (method, path)
    schema = whole().response_schema(found[1], status)
    assert schema is not None, f"Run:ai declares no {status} for {method} {found[0]}"
    assert whole().errors(schema, body) == [], (method, path, body)


# -- the translation, both ways -----------------------------------------------------------------------------

_text = st.text("abcxyz/-_.019", min_size=1, max_size=12)
_name = st.from_regex(r"[a-z][a-z0-9-]{0,8}[a-z0-9]", fullmatch=True)
_bool = st.booleans()
_int32 = st.integers(0, 2**31 - 1)
_port_number = st.integers(1, 65535)
_SECURITY = {
    "uidGidSource": st.sampled_from(["fromTheImage", "fromIdpToken", "custom"]),
    "capabilities": st.lists(st.sampled_from(["CHOWN", "KILL", "NET_ADMIN"]), max_size=3, unique=True),
    "seccompProfileType": st.sampled_from(["RuntimeDefault", "Unconfined", "Localhost"]),
    "runAsNonRoot": _bool,
    "readOnlyRootFilesystem": _bool,
    "runAsUid": _int32,
    "runAsGid": _int32,
    "supplementalGroups": st.just("1000,2000"),
    "allowPrivilegeEscalation": _bool,
    "hostIpc": _bool,
    "hostNetwork": _bool,
}
_variable = st.one_of(
    st.fixed_dictionaries({"name": _name, "value": _text}),
    st.fixed_dictionaries({"name": _name, "configMap": st.fixed_dictionaries({"name": _name, "key": _name})}),
    st.fixed_dictionaries({"name": _name, "secret": st.fixed_dictionaries({"name": _name, "key": _name})}),
    st.fixed_dictionaries(
        {"name": _name, "podFieldRef": st.fixed_dictionaries({"path": st.just("metadata.name")})}
    ),
)
#: A port Run:ai's connections can say, and one they cannot (ClusterIP, an external port, a tool's name).
_connection_port = st.fixed_dictionaries(
    {
        "name": _name,
        "container": _port_number,
        "serviceType": st.sampled_from(["LoadBalancer", "NodePort"]),
        "toolType": st.sampled_from(sorted(CONNECTION_TOOLS)),
    }
)
_other_port = st.fixed_dictionaries(
    {"name": _name, "container": _port_number, "serviceType": st.just("ClusterIP")},
    optional={"external": _port_number, "toolName": _text},
)


def _unique(items: list[dict[str, Any]]) -> list[dict[str, Any]]:
    seen: set[str] = set()
    return [i for i in items if not (i["name"] in seen or seen.add(i["name"]))]  # type: ignore[func-returns-value]


_ENVIRONMENT = {
    "image": _text,
    "imagePullPolicy": st.sampled_from(["Always", "Never", "IfNotPresent"]),
    "workingDir": _text,
    "createHomeDir": _bool,
    "command": _text,
    "args": _text,
    "stdin": _bool,
    "tty": _bool,
    "environmentVariables": st.lists(_variable, min_size=1, max_size=3).map(_unique),
    "relatedUrls": st.lists(st.fixed_dictionaries({"name": _name, "url": _text}), min_size=1, max_size=2).map(
        _unique
    ),
    "exposedUrls": st.lists(
        st.fixed_dictionaries({"name": _name, "container": _port_number, "url": _text}),
        min_size=1,
        max_size=2,
    ).map(_unique),
    "probes": st.fixed_dictionaries(
        {"readiness": st.fixed_dictionaries({}, optional={"periodSeconds": st.integers(1, 60)})}
    ),
}
folder_environments = st.fixed_dictionaries(
    {},
    optional={
        **_ENVIRONMENT,
        "security": st.fixed_dictionaries({}, optional=_SECURITY).filter(bool),
        "ports": st.one_of(
            st.lists(_connection_port, min_size=1, max_size=3),
            st.lists(st.one_of(_connection_port, _other_port), min_size=1, max_size=3).filter(
                lambda ports: any(p["serviceType"] == "ClusterIP" for p in ports)
            ),
        ).map(_unique),
    },
)
runai_environments = st.fixed_dictionaries(
    {},
    optional={
        **{k: v for k, v in _ENVIRONMENT.items() if k not in ("relatedUrls", "exposedUrls")},
        **_SECURITY,
        "connections": st.lists(_connection_port, min_size=1, max_size=3)
        .map(_unique)
        .map(lambda ports: to_runai(BY_KIND["environment"], {"ports": ports})["connections"]),
    },
)
_quantity = st.sampled_from(["1", "500m", "16Gi", "2.5"])
_COMPUTE = {
    "cpuCoreRequest": st.floats(0, 64, allow_nan=False),
    "cpuCoreLimit": st.floats(0, 64, allow_nan=False),
    "cpuMemoryRequest": _quantity,
    "cpuMemoryLimit": _quantity,
    "gpuDevicesRequest": st.integers(0, 8),
    "gpuRequestType": st.sampled_from(["portion", "memory"]),
    "gpuPortionRequest": st.floats(0, 1, allow_nan=False),
    "gpuMemoryRequest": _quantity,
    "largeShmRequest": _bool,
    "extendedResources": st.lists(
        st.fixed_dictionaries({"resource": _name, "quantity": _quantity}), min_size=1, max_size=2
    ),
}
runai_computes = st.fixed_dictionaries({}, optional=_COMPUTE)
folder_computes = st.fixed_dictionaries(
    {},
    optional={"compute": st.fixed_dictionaries({}, optional={**_COMPUTE, "migProfile": _text}).filter(bool)},
)
_mode = st.sampled_from(["0644", "0400"])
#: The fields of each data source kind's item, Run:ai's and (after them) the folder's own.
_ITEMS: dict[str, tuple[dict[str, Any], dict[str, Any]]] = {
    "nfs": ({"server": _text, "path": _text, "mountPath": _text, "readOnly": _bool}, {}),
    "pvc": (
        {
            "claimName": _name,
            "path": _text,
            "existingPvc": _bool,
            "readOnly": _bool,
            "ephemeral": _bool,
            "dataSharing": _bool,
            "claimInfo": st.fixed_dictionaries(
                {},
                optional={
                    "size": _quantity,
                    "storageClass": _name,
                    "volumeMode": st.sampled_from(["Filesystem", "Block"]),
                    "accessModes": st.fixed_dictionaries({}, optional={"readWriteOnce": _bool}),
                },
            ),
        },
        {},
    ),
    "git": (
        {"repository": _text, "branch": _text, "revision": _text, "path": _text},
        {"passwordSecret": _name, "secretKeyOfUser": _name, "secretKeyOfPassword": _name},
    ),
    "s3": (
        {"bucket": _name, "path": _text, "url": _text},
        {"accessKeySecret": _name, "secretKeyOfAccessKeyId": _name, "secretKeyOfSecretKey": _name},
    ),
    "hostPath": (
        {"path": _text, "mountPath": _text, "readOnly": _bool, "mountPropagation": st.sampled_from(["None"])},
        {},
    ),
    "config-map": ({"configMap": _name, "mountPath": _text, "subPath": _text, "defaultMode": _mode}, {}),
    "secret-volume": ({"mountPath": _text, "defaultMode": _mode}, {"secret": _name}),
}
DATASOURCES = [k for k in KINDS if k.storage is not None]


def _folder_valid(kind: RunaiKind, spec: dict[str, Any]) -> None:
    ASSET_MODELS[kind.folder].model_validate({"meta": {"name": "x"}, "spec": spec})


def _runai_valid(kind: RunaiKind, spec: dict[str, Any]) -> None:
    """``spec`` is a valid ``kind.schema`` of Run:ai's whole document (extension fields included)."""
    assert whole().errors(whole().schema(kind.schema), spec) == [], spec


@settings(max_examples=150, deadline=None)
@given(folder_environments)
def test_an_environment_file_reads_back_exactly(spec: dict[str, Any]) -> None:
    kind = BY_KIND["environment"]
    _folder_valid(kind, spec)
    runai = to_runai(kind, spec)
    _runai_valid(kind, runai)
    assert "security" not in runai and set(spec.get("security", {})) <= set(runai)
    assert ("connections" in runai) == (
        "ports" in spec and all(p["serviceType"] != "ClusterIP" for p in spec["ports"])
    )
    assert from_runai(kind, runai) == spec


@settings(max_examples=150, deadline=None)
@given(runai_environments)
def test_a_runai_environment_reads_back_exactly(spec: dict[str, Any]) -> None:
    kind = BY_KIND["environment"]
    folder = from_runai(kind, spec)
    _folder_valid(kind, folder)
    assert set(folder.get("security", {})) == set(spec) & set(SECURITY_FIELDS)
    assert to_runai(kind, folder) == spec


@settings(max_examples=100, deadline=None)
@given(folder_computes, runai_computes)
def test_compute_reads_back_exactly_both_ways(folder: dict[str, Any], runai: dict[str, Any]) -> None:
    kind = BY_KIND["compute"]
    _folder_valid(kind, folder)
    _runai_valid(kind, to_runai(kind, folder))
    assert from_runai(kind, to_runai(kind, folder)) == folder
    assert to_runai(kind, folder) == folder.get("compute", {})  # flat, as ComputeAssetSpec
    assert to_runai(kind, from_runai(kind, runai)) == runai


def test_a_plain_integer_quantity_of_a_file_answers_as_runai_s_string() -> None:
    """Run:ai's ``quantity`` is a string; a file may write ``2``: it answers ``"2"`` (the one value of a file
    that does not read back as written; it means the same)."""
    spec = {"compute": {"extendedResources": [{"resource": "a/b", "quantity": 2}]}}
    assert to_runai(BY_KIND["compute"], spec) == {"extendedResources": [{"resource": "a/b", "quantity": "2"}]}


@st.composite
def _items(draw: st.DrawFn, kind: RunaiKind, own: bool) -> dict[str, Any]:
    runai_fields, folder_fields = _ITEMS[kind.kind]
    fields = {**runai_fields, **(folder_fields if own else {})}
    if own:
        fields |= {"name": _name, "exclude": _bool}
    return draw(st.fixed_dictionaries({}, optional=fields))


@pytest.mark.parametrize("kind", DATASOURCES, ids=lambda k: k.kind)
@settings(max_examples=60, deadline=None)
@given(data=st.data())
def test_a_data_source_reads_back_exactly_both_ways(kind: RunaiKind, data: st.DataObject) -> None:
    assert kind.storage is not None
    item = data.draw(_items(kind, own=True))
    folder = {"storage": {kind.storage: [item]}}
    _folder_valid(kind, folder)
    _runai_valid(kind, to_runai(kind, folder))
    assert to_runai(kind, folder) == item  # the item itself is Run:ai's spec
    assert from_runai(kind, to_runai(kind, folder)) == folder
    runai = data.draw(_items(kind, own=False))
    assert to_runai(kind, from_runai(kind, runai)) == runai


@pytest.mark.parametrize(
    ("kind", "spec", "field"),
    [
        (
            "git",
            {"repository": "r", "passwordAssetId": "0f0e0d0c-0b0a-4908-8706-050403020100"},
            "spec.passwordAssetId",
        ),
        ("git", {"credentialId": "0f0e0d0c-0b0a-4908-8706-050403020100"}, "spec.credentialId"),
        ("s3", {"accessKeyAssetId": "0f0e0d0c-0b0a-4908-8706-050403020100"}, "spec.accessKeyAssetId"),
        (
            "secret-volume",
            {"credentialAssetId": "0f0e0d0c-0b0a-4908-8706-050403020100"},
            "spec.credentialAssetId",
        ),
        ("environment", {"overrideUidGidInWorkspace": True}, "spec.overrideUidGidInWorkspace"),
        ("environment", {"security": {"runAsUid": 1}}, "spec.security"),
        (
            "environment",
            {"environmentVariables": [{"name": "A", "credential": {"assetId": "x", "key": "k"}}]},
            "spec.environmentVariables[0].credential",
        ),
        (
            "environment",
            {"connections": [{"name": "w", "externalToolInfo": {"toolType": "wandb", "externalUrl": "u"}}]},
            "spec.connections[0].externalToolInfo",
        ),
        (
            "environment",
            {
                "connections": [
                    {
                        "name": "u",
                        "internalToolInfo": {
                            "toolType": "custom",
                            "connectionType": "ExternalUrl",
                            "containerPort": 80,
                        },
                    }
                ]
            },
            "spec.connections[0].internalToolInfo.connectionType",
        ),
        ("environment", {"connections": [], "ports": []}, "spec.ports"),
        ("compute", {"compute": {"gpuDevicesRequest": 1}}, "spec.compute"),
    ],
)
def test_what_the_folder_cannot_hold_is_refused_with_its_field(
    kind: str, spec: dict[str, Any], field: str
) -> None:
    with pytest.raises(ShapeProblem) as refused:
        from_runai(BY_KIND[kind], spec)
    (problem,) = [p for p in refused.value.problems if format_path(p.path) == field]
    assert any(why in problem.message for why in ("is not served: ", "folder's form", "given together"))


def test_a_bad_connection_is_refused_on_the_field_the_client_sent(http: httpx.Client) -> None:
    info = {"toolType": "custom", "connectionType": "NodePort", "containerPort": "80"}
    body = {
        "meta": {"name": "x", "scope": "tenant"},
        "spec": {"connections": [{"name": 3, "internalToolInfo": info}]},
    }
    response = http.post("/api/v1/asset/environment", json=body)
    assert response.status_code == 400
    assert sorted(p["field"] for p in response.json()["problems"]) == [
        "spec.connections[0].internalToolInfo.containerPort",
        "spec.connections[0].name",
    ]
    pvc = {"meta": {"name": "x", "scope": "tenant"}, "spec": {"claimInfo": {"size": 5}}}
    (problem,) = http.post("/api/v1/asset/datasource/pvc", json=pvc).json()["problems"]
    assert problem["field"] == "spec.claimInfo.size"  # not the folder's spec.storage.pvc[0].claimInfo.size


def test_override_uid_gid_false_is_run_ai_s_default_and_not_stored() -> None:
    assert from_runai(BY_KIND["environment"], {"image": "x", "overrideUidGidInWorkspace": False}) == {
        "image": "x"
    }


# -- the service, through the real SDK ----------------------------------------------------------------------

#: Each Run:ai kind: the SDK's API class, its method stem, the stem of its request models, its answer models,
#: and a spec as a client writes it (Run:ai's form).
SDK_ROWS: dict[str, tuple[str, str, str, str, str, dict[str, Any]]] = {
    "environment": (
        "EnvironmentApi",
        "environment",
        "Environment",
        "EnvironmentAsset",
        "EnvironmentListResponse",
        {
            "image": "nvcr.io/acme/train:1",
            "command": "python",
            "args": "train.py",
            "runAsUid": 1000,
            "runAsNonRoot": True,
            "environmentVariables": [{"name": "A", "value": "1"}],
            "connections": [
                {
                    "name": "notebook",
                    "internalToolInfo": {
                        "toolType": "jupyter-notebook",
                        "connectionType": "NodePort",
                        "containerPort": 8888,
                    },
                }
            ],
        },
    ),
    "compute": (
        "ComputeApi",
        "compute",
        "Compute",
        "ComputeAsset",
        "ComputeListResponse",
        {
            "gpuDevicesRequest": 2,
            "cpuCoreRequest": 4.0,
            "cpuMemoryRequest": "16Gi",
            "extendedResources": [{"resource": "rdma/hca", "quantity": "1"}],
        },
    ),
    "nfs": (
        "NFSApi",
        "nfs",
        "NFS",
        "NFSAsset",
        "NFSListResponse",
        {"server": "nfs.acme", "path": "/export/x", "mountPath": "/x", "readOnly": True},
    ),
    "pvc": (
        "PVCApi",
        "pvc",
        "PVC",
        "PVCAsset",
        "PVCListResponse",
        {"claimName": "claim-a", "path": "/data/a", "existingPvc": True, "readOnly": True},
    ),
    "git": (
        "GitApi",
        "git",
        "Git",
        "GitAsset",
        "GitListResponse",
        {"repository": "https://github.com/acme/code", "branch": "main", "path": "/code"},
    ),
    "s3": (
        "S3Api",
        "s3",
        "S3",
        "S3Asset",
        "S3ListResponse",
        {"bucket": "b", "path": "/s3", "url": "https://s3"},
    ),
    "hostPath": (
        "HostPathApi",
        "host_path",
        "HostPath",
        "HostPathAsset",
        "HostPathListResponse",
        {"path": "/mnt/h", "mountPath": "/h", "readOnly": True, "mountPropagation": "None"},
    ),
    "config-map": (
        "ConfigMapApi",
        "config_map",
        "ConfigMap",
        "ConfigMapAsset",
        "ConfigMapListResponse",
        {"configMap": "cm-a", "mountPath": "/etc/cm", "defaultMode": "0644"},
    ),
    "secret-volume": (
        "SecretApi",
        "secret",
        "SecretAsset",
        "SecretAsset",
        "SecretAssetListResponse",
        {"mountPath": "/etc/s", "defaultMode": "0400"},
    ),
}
#: A change of each kind's spec, for the update: of the one field Run:ai's PVCUpdateRequest has, and of no
#: field for config maps and secrets (their update requests have no spec: only the name changes).
CHANGES: dict[str, dict[str, Any]] = {
    "environment": {"image": "nvcr.io/acme/train:2"},
    "compute": {"gpuDevicesRequest": 4},
    "nfs": {"server": "nfs2.acme"},
    "pvc": {"path": "/data/b"},
    "git": {"branch": "dev"},
    "s3": {"bucket": "c"},
    "hostPath": {"path": "/mnt/i"},
    "config-map": {},
    "secret-volume": {},
}


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory, auth_file: Path) -> Iterator[LiveServer]:
    folder = tmp_path_factory.mktemp("assets")
    settings = Settings(database_url=f"sqlite:///{folder / 'db.sqlite'}", auth_file=auth_file, seed=TEMPLATES)
    with serve(create_app(settings)) as live:
        yield live


@pytest.fixture(scope="module")
def http(server: LiveServer) -> Iterator[httpx.Client]:
    with httpx.Client(base_url=server.url, headers=bearer(ADMIN), timeout=LIVE_TIMEOUT) as client:
        yield client


@pytest.fixture(scope="module")
def units(http: httpx.Client) -> dict[str, str]:
    projects = http.get("/api/v1/org-unit/projects").json()["projects"]
    departments = http.get("/api/v1/org-unit/departments").json()["departments"]
    return {p["name"]: p["id"] for p in projects} | {d["name"]: d["id"] for d in departments}


def _method(api: Any, verb: str, stem: str) -> Any:
    """The SDK's method of ``verb`` for a kind (``create_nfs_asset``; host paths drop ``_asset``)."""
    suffix = "_by_id" if verb in ("get", "update", "delete") else ""
    names = (
        [f"{verb}_{stem}_assets"]
        if verb == "list"
        else [f"{verb}_{stem}_asset{suffix}", f"{verb}_{stem}{suffix}"]
    )
    return next(getattr(api, n) for n in names if hasattr(api, n))


def _path(kind: RunaiKind, asset_id: str | None = None) -> str:
    return f"/api/v1/asset/{kind.path}" + (f"/{asset_id}" if asset_id else "")


@pytest.mark.parametrize("kind", KINDS, ids=lambda k: k.kind)
def test_the_sdk_creates_reads_lists_updates_and_deletes_every_kind(
    kind: RunaiKind, server: LiveServer, units: dict[str, str]
) -> None:
    api_name, stem, request_stem, model, list_model, spec = SDK_ROWS[kind.kind]
    api = getattr(runapy, api_name)(bearer_client(server.url, ADMIN))
    vision = int(units["vision"])
    meta = {"name": f"sdk-{stem.replace('_', '-')}", "scope": "project", "projectId": vision}
    request = getattr(m, f"{request_stem}CreationRequest").from_dict({"meta": meta, "spec": spec})
    sent = request.spec.to_dict()

    created = _method(api, "create", stem)(request)
    assert created.status_code == 202
    conforms("POST", _path(kind), 202, created.data)
    asset = parsed(model, created.data)
    asset_id = str(asset.meta.id)
    assert (asset.meta.kind, asset.meta.scope, asset.meta.project_id) == (kind.kind, "project", vision)
    assert asset.spec.to_dict() == sent  # what the SDK sent, read back in its own model

    got = _method(api, "get", stem)(asset_id)
    conforms("GET", _path(kind, asset_id), 200, got.data)
    assert parsed(model, got.data).spec.to_dict() == sent

    listed = _method(api, "list", stem)(scope="project", project_id=vision)
    conforms("GET", _path(kind), 200, listed.data)
    assert [e.meta.name for e in parsed(list_model, listed.data).entries] == [meta["name"]]
    by_name = parsed(list_model, _method(api, "list", stem)(name=meta["name"]).data)
    assert [str(e.meta.id) for e in by_name.entries] == [asset_id]

    changed = getattr(m, f"{request_stem}UpdateRequest").from_dict(
        {"meta": {"name": meta["name"] + "-2"}, "spec": spec | CHANGES[kind.kind]}
    )
    updated = _method(api, "update", stem)(asset_id, changed)
    assert updated.status_code == 202
    conforms("PUT", _path(kind, asset_id), 202, updated.data)
    again = parsed(model, updated.data)
    assert again.meta.name == meta["name"] + "-2" and again.meta.scope == "project"  # the scope stays
    assert again.spec.to_dict() == parsed(model, got.data).spec.to_dict() | CHANGES[kind.kind]

    if kind.storage is not None:
        every = runapy.DatasourcesApi(bearer_client(server.url, ADMIN)).list_datasource_assets(
            project_id=vision
        )
        conforms("GET", "/api/v1/asset/datasource", 200, every.data)
        entries = parsed("DatasourceListResponse", every.data).entries
        (entry,) = [e for e in entries if str(e.meta.id) == asset_id]
        assert entry.meta.kind == kind.kind

    deleted = _method(api, "delete", stem)(asset_id)
    assert deleted.status_code == 202
    conforms("DELETE", _path(kind, asset_id), 202, deleted.data)
    with pytest.raises(Lazy("runai.exceptions").NotFoundException):
        _method(api, "get", stem)(asset_id)


def test_the_example_org_s_assets_answer_in_run_ai_s_shapes(http: httpx.Client) -> None:
    """The seeded assets (written as folder files) conform too, extensions and all; each data source is at its
    kind's path, and the list of every data source names Run:ai's kinds."""
    for kind in KINDS:
        response = http.get(_path(kind))
        assert response.status_code == 200
        conforms("GET", _path(kind), 200, response.json())
    every = http.get("/api/v1/asset/datasource").json()
    conforms("GET", "/api/v1/asset/datasource", 200, every)
    assert {e["meta"]["name"]: e["meta"]["kind"] for e in every["entries"]}.items() >= {
        "code": "git",
        "datasets": "nfs",
        "imagenet": "pvc",
    }.items()
    pytorch = next(
        e for e in http.get("/api/v1/asset/environment").json()["entries"] if e["meta"]["name"] == "pytorch"
    )
    # ClusterIP is no connection of Run:ai: the ports stay the folder's, an extension of the spec.
    assert pytorch["spec"]["ports"] == [{"name": "c10d", "container": 29400, "serviceType": "ClusterIP"}]
    assert pytorch["spec"]["relatedUrls"][0]["name"] == "docs" and "connections" not in pytorch["spec"]


@pytest.mark.parametrize(
    ("meta", "field", "words"),
    [
        ({"scope": "system"}, "meta.scope", "system assets are Run:ai's own"),
        ({"scope": "cluster"}, "meta.clusterId", "needs its clusterId"),
        ({"scope": "department", "departmentId": "999"}, "meta.departmentId", "unknown department"),
        ({"scope": "department"}, "meta.departmentId", "needs its departmentId"),
        ({"scope": "project", "projectId": 999}, "meta.projectId", "unknown project"),
        ({"scope": "tenant", "projectId": 1}, "meta.projectId", "takes no projectId"),
        ({"scope": "tenant", "colour": "red"}, "meta.colour", "unknown field"),
    ],
)
def test_a_scope_that_cannot_be_stored_is_a_400_naming_its_field(
    http: httpx.Client, meta: dict[str, Any], field: str, words: str
) -> None:
    response = http.post("/api/v1/asset/compute", json={"meta": {"name": "scoped", **meta}, "spec": {}})
    assert response.status_code == 400, response.text
    (problem,) = response.json()["problems"]
    assert problem["field"] == field and words in problem["message"], problem


def test_list_filters_follow_run_ai_s_scopes(http: httpx.Client, units: dict[str, str]) -> None:
    research, vision, speech = units["research"], int(units["vision"]), int(units["speech"])
    made = {}
    for name, meta in (
        ("f-tenant", {"scope": "tenant"}),
        ("f-research", {"scope": "department", "departmentId": research}),
        ("f-vision", {"scope": "project", "projectId": vision}),
        ("f-speech", {"scope": "project", "projectId": speech}),
    ):
        created = http.post("/api/v1/asset/compute", json={"meta": {"name": name, **meta}, "spec": {}})
        assert created.status_code == 202, created.text
        made[name] = created.json()["meta"]["id"]

    def names(**query: Any) -> set[str]:
        response = http.get("/api/v1/asset/compute", params=query)
        assert response.status_code == 200, response.text
        return {e["meta"]["name"] for e in response.json()["entries"]} & set(made)

    assert names() == set(made)
    assert names(scope="tenant") == {"f-tenant"}
    assert names(scope="department", departmentId=research) == {"f-research"}
    assert names(scope="project", projectId=vision) == {"f-vision"}
    # Without scope, a project's filter answers what it sees: its own, its department's, the tenant's.
    vision_department = next(
        p for p in http.get("/api/v1/org-unit/projects").json()["projects"] if p["id"] == str(vision)
    )
    expected = {"f-tenant", "f-vision"} | (
        {"f-research"} if vision_department["parentId"] == research else set()
    )
    assert names(projectId=vision) == expected
    assert names(departmentId=research) == {"f-tenant", "f-research"}
    assert names(assetIds=f"{made['f-speech']},{made['f-tenant']}") == {"f-speech", "f-tenant"}
    for query, field in (
        ({"usageInfo": "true"}, "usageInfo"),
        ({"colour": "red"}, "colour"),
        ({"projectId": 999}, "projectId"),
    ):
        refused = http.get("/api/v1/asset/compute", params=query)
        assert refused.status_code == 400 and refused.json()["problems"][0]["field"] == field
    for asset_id in made.values():
        assert http.delete(f"/api/v1/asset/compute/{asset_id}").status_code == 202


def test_names_are_unique_per_kind_across_scopes_and_data_source_kinds(
    http: httpx.Client, units: dict[str, str]
) -> None:
    first = http.post(
        "/api/v1/asset/datasource/nfs", json={"meta": {"name": "one", "scope": "tenant"}, "spec": {}}
    )
    assert first.status_code == 202
    for path, meta in (
        ("datasource/nfs", {"scope": "project", "projectId": int(units["vision"])}),
        ("datasource/git", {"scope": "tenant"}),  # every data source kind is one folder, assets/datasources/
    ):
        taken = http.post(f"/api/v1/asset/{path}", json={"meta": {"name": "one", **meta}, "spec": {}})
        assert taken.status_code == 409, taken.text
    # A git data source is not at the nfs path, and the other way round.
    asset_id = first.json()["meta"]["id"]
    assert http.get(f"/api/v1/asset/datasource/git/{asset_id}").status_code == 404
    assert http.delete(f"/api/v1/asset/datasource/nfs/{asset_id}").status_code == 202


# -- an asset made through the SDK composes as the same asset written as a file -----------------------------

#: The assets of the composition test, as the SDK sends them, and as a templates folder holds them.
COMPOSED: list[tuple[str, str, dict[str, Any], str]] = [
    (
        "environment",
        "sdk-env",
        SDK_ROWS["environment"][5] | {"connections": []},
        """\
meta: {name: sdk-env}
spec:
  image: nvcr.io/acme/train:1
  command: python
  args: train.py
  environmentVariables: [{name: A, value: '1'}]
  security: {runAsUid: 1000, runAsNonRoot: true}
  ports: []
""",
    ),
    (
        "compute",
        "sdk-compute",
        SDK_ROWS["compute"][5],
        """\
meta: {name: sdk-compute}
spec:
  compute:
    gpuDevicesRequest: 2
    cpuCoreRequest: 4.0
    cpuMemoryRequest: 16Gi
    extendedResources: [{resource: rdma/hca, quantity: '1'}]
""",
    ),
    (
        "nfs",
        "sdk-nfs",
        SDK_ROWS["nfs"][5],
        """\
meta: {name: sdk-nfs}
spec:
  storage:
    nfs: [{server: nfs.acme, path: /export/x, mountPath: /x, readOnly: true}]
""",
    ),
]
FOLDERS = {"environment": "environments", "compute": "computes", "nfs": "datasources"}
JOB = {
    "meta": {"name": "sdk-job"},
    "assets": {"environment": "sdk-env", "compute": "sdk-compute", "datasources": [{"name": "sdk-nfs"}]},
    "spec": {"distributedFramework": "PyTorch", "numWorkers": 2},
}


def test_an_asset_made_through_the_sdk_composes_as_its_file(
    server: LiveServer, http: httpx.Client, units: dict[str, str], tmp_path: Path
) -> None:
    client = bearer_client(server.url, ADMIN)
    root = tmp_path / "templates"
    shutil.copytree(TEMPLATES, root)
    for kind_name, name, spec, text in COMPOSED:
        api_name, stem, request_stem, *_ = SDK_ROWS[kind_name]
        api = getattr(runapy, api_name)(client)
        body = {"meta": {"name": name, "scope": "tenant"}, "spec": spec}
        created = _method(api, "create", stem)(getattr(m, f"{request_stem}CreationRequest").from_dict(body))
        assert created.status_code == 202
        (root / "assets" / FOLDERS[kind_name] / f"{name}.yaml").write_text(text)
    (root / "projects" / "vision" / "templates" / "sdk-job.yaml").write_text(yaml.safe_dump(JOB))

    meta = JOB["meta"] | {"scopeType": "project", "scopeId": units["vision"]}
    stored = http.post("/api/v1/workload-templates/distributed", json=JOB | {"meta": meta})
    assert stored.status_code == 202, stored.text
    answered = http.get(f"/api/v1/workload-templates/distributed/{stored.json()['meta']['id']}").json()

    org = load_org(root)
    assert not org.broken, org.broken
    ((view, template),) = [(v, t) for v, t in org.views() if t.name == "sdk-job"]
    composed = compose(org, template, view).to_response()
    for key in ("combinedSpec", "combinedMasterSpec"):
        assert json.loads(json.dumps(answered.get(key))) == json.loads(json.dumps(composed.get(key))), key
    (nfs,) = [item for item in answered["combinedSpec"]["storage"]["nfs"] if item["name"] == "sdk-nfs"]
    assert nfs["server"] == "nfs.acme"
    assert answered["combinedSpec"]["compute"]["gpuDevicesRequest"] == 2
