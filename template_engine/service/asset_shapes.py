"""An asset's ``spec`` as a templates folder has it and as Run:ai's API has it, both ways, with no I/O.

The database keeps the folder's form (``spec.compute.{...}``, ``spec.storage.nfs[0]``, an environment's
``security`` and ``ports``: :mod:`template_engine.models.spec`), so compositions, the UI, ``db import`` and
``db export`` read one form; the routes of :mod:`.routes.assets` answer and accept Run:ai's form
(runai-openapi-1.224.0.json: ``EnvironmentAssetSpec``, ``ComputeAssetSpec``, ``NFSAssetSpec``,
``PVCAssetSpec``, ``GitAssetSpec``, ``S3AssetSpec``, ``HostPathSpec``, ``ConfigMapAssetSpec``,
``SecretAssetSpec``).  :func:`to_runai` and :func:`from_runai` are inverses on what both forms can say
(``tests/service/test_assets_runai.py`` proves it on generated documents):

- a field both have keeps its name and value;
- what only the folder has (an environment's ``exposedUrls``, ``relatedUrls``, ports Run:ai's
  ``connections`` cannot say, a variable's ``secret``/``userCredential``; ``compute.migProfile``; a data
  source item's ``name``, ``exclude``, git's and s3's secret fields, a secret volume's ``secret``) is carried
  in the Run:ai spec under the folder's own name, an extension field (Run:ai's objects allow extra
  properties; the SDK's models drop them when they parse an answer);
- what only Run:ai has (asset ids of credentials, a connection to an external tool, a workspace's
  ``overrideUidGidInWorkspace: true``) is refused, a :class:`ShapeProblem` naming the field and why.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from template_engine.errors import Problem
from template_engine.models.data_sources import DATA_SOURCE, DATA_SOURCES
from template_engine.models.documents import AssetKind
from template_engine.models.spec import Security
from template_engine.paths import Path

#: The fields of the folder's ``security`` that Run:ai's ``EnvironmentAssetSpec`` has at its top level.
SECURITY_FIELDS: tuple[str, ...] = tuple(Security.model_fields)
#: Run:ai's ``InternalToolInfo.toolType`` (the tools a connection may open).
CONNECTION_TOOLS = frozenset(
    {
        "jupyter-notebook",
        "pycharm",
        "visual-studio-code",
        "tensorboard",
        "rstudio",
        "mlflow",
        "custom",
        "matlab",
        "chatbot-ui",
    }
)
#: The ``connectionType`` values of Run:ai that are a port's ``serviceType`` here.
CONNECTION_SERVICE_TYPES = frozenset({"LoadBalancer", "NodePort"})
_PORT_AS_CONNECTION = frozenset({"name", "container", "serviceType", "toolType"})
_CONNECTION_FIELDS = frozenset({"name", "isExternal", "internalToolInfo"})
_TOOL_INFO_FIELDS = frozenset({"toolType", "connectionType", "containerPort"})


class ShapeProblem(Exception):
    """A Run:ai spec that the folder's models cannot hold: the problems, on Run:ai's field paths."""

    def __init__(self, problems: list[Problem]) -> None:
        self.problems = problems
        super().__init__("; ".join(p.one_line() for p in problems))


@dataclass(frozen=True, slots=True)
class RunaiKind:
    """One asset kind of Run:ai's API and where the folder keeps it.

    ``kind`` is Run:ai's ``AssetKind`` (``AssetMeta.kind``), ``path`` the route under ``/api/v1/asset``,
    ``folder`` the folder's kind (its ``assets/`` subfolder), ``storage`` the ``spec.storage`` list of a data
    source, ``schema`` the Run:ai spec schema, ``refused`` Run:ai's fields with no counterpart here (why)."""

    kind: str
    path: str
    folder: AssetKind
    schema: str
    operation: str
    storage: str | None = None
    refused: Mapping[str, str] = field(default_factory=dict)
    #: The spec fields Run:ai's update of the kind changes; ``None``: the whole spec is replaced.
    updatable: tuple[str, ...] | None = None


_CREDENTIAL = (
    "refers to a credential asset by id; this service has no credential assets: give the Kubernetes "
    "secret's name in the folder's field {instead} instead"
)

#: Per data source kind Run:ai has assets of (:data:`~template_engine.models.data_sources.DATA_SOURCES`, which
#: names its ``AssetKind`` and route), in the order of the API: its spec schema and operation name, the
#: fields refused, and the fields an update changes.
_SOURCE_SHAPES: dict[str, tuple[tuple[str, str], Mapping[str, str], tuple[str, ...] | None]] = {
    "nfs": (("NFSAssetSpec", "nfs"), {}, None),
    "pvc": (("PVCAssetSpec", "pvc"), {}, ("path",)),
    "git": (
        ("GitAssetSpec", "git"),
        {
            "passwordAssetId": _CREDENTIAL.format(instead="passwordSecret"),
            "credentialId": _CREDENTIAL.format(instead="secretRef"),
        },
        None,
    ),
    "s3": (("S3AssetSpec", "s3"), {"accessKeyAssetId": _CREDENTIAL.format(instead="accessKeySecret")}, None),
    "hostPath": (("HostPathSpec", "host_path"), {}, None),
    "configMapVolume": (("ConfigMapAssetSpec", "config_map"), {}, ()),
    "secretVolume": (
        ("SecretAssetSpec", "secret"),
        {"credentialAssetId": _CREDENTIAL.format(instead="secret")},
        (),
    ),
}

#: Every Run:ai asset kind this service serves; adding one is a row (and a route table row).
KINDS: tuple[RunaiKind, ...] = (
    RunaiKind("environment", "environment", "environment", "EnvironmentAssetSpec", "environment"),
    RunaiKind("compute", "compute", "compute", "ComputeAssetSpec", "compute"),
    *(
        RunaiKind(
            source.kind,
            source.path,
            "datasource",
            *shape,
            storage=storage,
            refused=refused,
            updatable=updatable,
        )
        for storage, (shape, refused, updatable) in _SOURCE_SHAPES.items()
        if (source := DATA_SOURCE[storage].runai) is not None
    ),
)
BY_KIND: dict[str, RunaiKind] = {k.kind: k for k in KINDS}
BY_STORAGE: dict[str, RunaiKind] = {k.storage: k for k in KINDS if k.storage is not None}
#: The key of each data source kind in Run:ai's ``DatasourceListResponseAssetSpec``.
LIST_SPEC_KEYS: dict[str, str] = {
    source.kind: source.list_key for kind in DATA_SOURCES if (source := kind.runai) is not None
}


def storage_kind(document: Mapping[str, Any]) -> str | None:
    """The ``spec.storage`` list a stored data source document holds its item in."""
    storage = (document.get("spec") or {}).get("storage") or {}
    return next((k for k, v in storage.items() if v), None)


def runai_kind_of(folder_kind: str, document: Mapping[str, Any]) -> RunaiKind | None:
    """The Run:ai kind of a stored asset; ``None`` for a data source Run:ai has no asset kind of
    (``emptyDirVolume``, ``dataVolume``: Run:ai serves data volumes elsewhere)."""
    if folder_kind != "datasource":
        return BY_KIND.get(folder_kind)
    key = storage_kind(document)
    return BY_STORAGE.get(key) if key is not None else None


# -- folder -> Run:ai ---------------------------------------------------------------------------------------


def to_runai(kind: RunaiKind, spec: Mapping[str, Any]) -> dict[str, Any]:
    """A stored (folder) ``spec`` of ``kind`` in Run:ai's form: the ``spec`` of Run:ai's ``kind.schema``."""
    return _TO[kind.folder](kind, spec)


def _environment_to(_kind: RunaiKind, spec: Mapping[str, Any]) -> dict[str, Any]:
    out = {k: v for k, v in spec.items() if k not in ("security", "ports")}
    out.update(spec.get("security") or {})
    ports = spec.get("ports")
    if ports is not None:
        if all(_port_is_connection(p) for p in ports):
            out["connections"] = [_connection(p) for p in ports]
        else:
            out["ports"] = ports
    return out


def _port_is_connection(port: Mapping[str, Any]) -> bool:
    """Whether Run:ai's ``Connection`` says all a port says: a named port of a known tool behind a load
    balancer or a node port, with no external port number, tool name or exclusion."""
    return (
        set(port) <= _PORT_AS_CONNECTION
        and {"name", "container", "serviceType", "toolType"} <= set(port)
        and port["serviceType"] in CONNECTION_SERVICE_TYPES
        and port["toolType"] in CONNECTION_TOOLS
    )


def _connection(port: Mapping[str, Any]) -> dict[str, Any]:
    info = {
        "toolType": port["toolType"],
        "connectionType": port["serviceType"],
        "containerPort": port["container"],
    }
    return {"name": port["name"], "internalToolInfo": info}


def _compute_to(_kind: RunaiKind, spec: Mapping[str, Any]) -> dict[str, Any]:
    out = dict(spec.get("compute") or {})
    if "extendedResources" in out:  # Run:ai's quantity is a string; a file may give a plain integer
        out["extendedResources"] = [_quantity_text(r) for r in out["extendedResources"]]
    return out


def _quantity_text(resource: Mapping[str, Any]) -> dict[str, Any]:
    quantity = resource.get("quantity")
    if isinstance(quantity, int) and not isinstance(quantity, bool):
        return {**resource, "quantity": str(quantity)}
    return dict(resource)


def _datasource_to(kind: RunaiKind, spec: Mapping[str, Any]) -> dict[str, Any]:
    assert kind.storage is not None
    items = (spec.get("storage") or {}).get(kind.storage) or [{}]
    return dict(items[0])


_TO: dict[AssetKind, Callable[[RunaiKind, Mapping[str, Any]], dict[str, Any]]] = {
    "environment": _environment_to,
    "compute": _compute_to,
    "datasource": _datasource_to,
}


# -- Run:ai -> folder ---------------------------------------------------------------------------------------


def from_runai(kind: RunaiKind, spec: Mapping[str, Any]) -> dict[str, Any]:
    """A Run:ai ``spec`` of ``kind`` in the folder's form, or a :class:`ShapeProblem` for each field the
    folder cannot hold.  ``null`` values are taken out first (no opinion, as everywhere in the service)."""
    given = {k: v for k, v in spec.items() if v is not None}
    problems = [
        Problem(f"{name} is not served: it {why}", ("spec", name), None, f"no {name}")
        for name, why in kind.refused.items()
        if name in given
    ]
    if problems:
        raise ShapeProblem(problems)
    return _FROM[kind.folder](kind, given)


def _environment_from(_kind: RunaiKind, spec: dict[str, Any]) -> dict[str, Any]:
    problems: list[Problem] = []
    if spec.get("overrideUidGidInWorkspace") not in (None, False):
        problems.append(
            Problem(
                "overrideUidGidInWorkspace is not served: it applies to Run:ai workspaces, and this service "
                "composes distributed training only",
                ("spec", "overrideUidGidInWorkspace"),
                None,
                "false, or no overrideUidGidInWorkspace",
            )
        )
    if "security" in spec:
        problems.append(
            Problem(
                "security is the templates folder's form: Run:ai's EnvironmentAssetSpec has the security "
                "fields at its top level",
                ("spec", "security"),
                None,
                ", ".join(SECURITY_FIELDS) + " at the top level of spec",
            )
        )
    if "connections" in spec and "ports" in spec:
        problems.append(
            Problem(
                "connections and ports are given together: give the ports once, as Run:ai's connections or "
                "(an extension of this service) as ports",
                ("spec", "ports"),
                None,
                "connections, or ports",
            )
        )
    for index, variable in enumerate(spec.get("environmentVariables") or ()):
        if isinstance(variable, Mapping) and variable.get("credential") is not None:
            problems.append(
                Problem(
                    "credential is not served: it "
                    + _CREDENTIAL.format(instead="environmentVariables[].secret"),
                    ("spec", "environmentVariables", index, "credential"),
                    None,
                    "value, secret, configMap, podFieldRef or userCredential",
                )
            )
    connections = spec.get("connections")
    ports = [] if not isinstance(connections, list) else connections
    for index, connection in enumerate(ports):
        problems += _connection_problems(connection, ("spec", "connections", index))
    if problems:
        raise ShapeProblem(problems)
    out = {
        k: v
        for k, v in spec.items()
        if k not in (*SECURITY_FIELDS, "connections", "overrideUidGidInWorkspace")
    }
    security = {k: spec[k] for k in SECURITY_FIELDS if k in spec}
    if security:
        out["security"] = security
    if isinstance(connections, list):
        out["ports"] = [_port(c) for c in connections]
    elif connections is not None:
        out["ports"] = connections  # not a list: the folder's schema says so, on ports
    return out


def _connection_problems(connection: Any, path: Path) -> list[Problem]:
    """Why a Run:ai ``Connection`` is not a port here (none when it is one)."""
    expected = "{name, internalToolInfo: {toolType, connectionType: LoadBalancer or NodePort, containerPort}}"
    if not isinstance(connection, Mapping):
        return [Problem("a connection is an object", path, None, expected)]
    problems = [
        Problem(f"{key} is not served: {why}", (*path, key), None, expected)
        for key, why in (
            ("externalToolInfo", "a connection to an external tool has no port of the workload"),
            ("isExternal", "only a connection to a port of the workload (isExternal: false) is a port here"),
        )
        if connection.get(key) not in (None, False)
    ]
    problems += [
        Problem(f"unknown field {key!r}", (*path, key), None, expected)
        for key in connection
        if key not in _CONNECTION_FIELDS and key != "externalToolInfo"
    ]
    info = connection.get("internalToolInfo")
    if not isinstance(info, Mapping):
        return [
            *problems,
            Problem("internalToolInfo is required", (*path, "internalToolInfo"), None, expected),
        ]
    if "name" not in connection:
        problems.append(Problem("name is required", (*path, "name"), None, expected))
    for key in info:
        if key not in _TOOL_INFO_FIELDS and info[key] is not None:
            why = "the ports of this service have no such information"
            problems.append(
                Problem(f"{key} is not served: {why}", (*path, "internalToolInfo", key), None, expected)
            )
    if info.get("connectionType") not in CONNECTION_SERVICE_TYPES:
        problems.append(
            Problem(
                f"connectionType {info.get('connectionType')!r} is not served: a port here is reached "
                "through a LoadBalancer or a NodePort service",
                (*path, "internalToolInfo", "connectionType"),
                None,
                "LoadBalancer or NodePort",
            )
        )
    if info.get("toolType") not in CONNECTION_TOOLS:
        problems.append(
            Problem(
                "toolType is required, one of Run:ai's tools",
                (*path, "internalToolInfo", "toolType"),
                None,
                ", ".join(sorted(CONNECTION_TOOLS)),
            )
        )
    if "containerPort" not in info:
        problems.append(
            Problem("containerPort is required", (*path, "internalToolInfo", "containerPort"), None, expected)
        )
    return problems


def _port(connection: Mapping[str, Any]) -> dict[str, Any]:
    info = connection["internalToolInfo"]
    return {
        "name": connection["name"],
        "container": info["containerPort"],
        "serviceType": info["connectionType"],
        "toolType": info["toolType"],
    }


def _compute_from(_kind: RunaiKind, spec: dict[str, Any]) -> dict[str, Any]:
    if "compute" in spec:
        raise ShapeProblem(
            [
                Problem(
                    "compute is the templates folder's form: Run:ai's ComputeAssetSpec has its fields flat",
                    ("spec", "compute"),
                    None,
                    "gpuDevicesRequest, cpuCoreRequest, ... at the top level of spec",
                )
            ]
        )
    return {"compute": spec} if spec else {}


def _datasource_from(kind: RunaiKind, spec: dict[str, Any]) -> dict[str, Any]:
    assert kind.storage is not None
    return {"storage": {kind.storage: [spec]}}


_FROM: dict[AssetKind, Callable[[RunaiKind, dict[str, Any]], dict[str, Any]]] = {
    "environment": _environment_from,
    "compute": _compute_from,
    "datasource": _datasource_from,
}


def updated(kind: RunaiKind, current: Mapping[str, Any], given: Mapping[str, Any] | None) -> dict[str, Any]:
    """The Run:ai spec an update leaves, from the ``current`` one (Run:ai's form) and the update's ``given``
    spec: the whole of ``given`` for most kinds; for a kind whose update changes only some fields
    (``PVCUpdateRequest``: ``PvcFieldsUpdatable``, ``path``; ``ConfigMapUpdateRequest`` and
    ``SecretAssetUpdateRequest``: none), ``current`` with those fields of ``given``.  Another field of
    ``given`` that differs from ``current`` is a :class:`ShapeProblem`; no ``given`` keeps ``current``."""
    if kind.updatable is None:
        if given is None:
            raise ShapeProblem([Problem("spec is required", ("spec",), None, f"Run:ai's {kind.schema}")])
        return dict(given)
    if given is None:
        return dict(current)
    changes = ", ".join(kind.updatable) or "no field of the spec"
    problems = [
        Problem(
            f"{key} is not changed by an update: Run:ai's update of a {kind.kind} asset changes {changes}",
            ("spec", key),
            None,
            f"{key} as it is ({current.get(key)!r}), or no {key}",
        )
        for key, value in given.items()
        if key not in kind.updatable and current.get(key) != value
    ]
    if problems:
        raise ShapeProblem(problems)
    kept = {k: v for k, v in current.items() if k not in kind.updatable}
    return kept | {k: given[k] for k in kind.updatable if k in given}


# -- field paths --------------------------------------------------------------------------------------------


#: Where each field of a port is in a Run:ai connection.
_IN_CONNECTION: dict[str, Path] = {
    "name": ("name",),
    "container": ("internalToolInfo", "containerPort"),
    "serviceType": ("internalToolInfo", "connectionType"),
    "toolType": ("internalToolInfo", "toolType"),
}


def runai_path(kind: RunaiKind, path: Path, connections: bool = False) -> Path:
    """The field of a Run:ai body that a problem of the folder document at ``path`` is about: the
    inverse of :func:`from_runai` on paths (``spec.storage.nfs[0].server`` is ``spec.server``; with
    ``connections``, when the body gave them, ``spec.ports[0].container`` is
    ``spec.connections[0].internalToolInfo.containerPort``)."""
    if path[:1] != ("spec",):
        return path
    rest = path[1:]
    if connections and rest[:1] == ("ports",):
        field = rest[2] if len(rest) >= 3 else None
        inner = _IN_CONNECTION.get(field) if isinstance(field, str) else None
        return ("spec", "connections", *rest[1:2], *(inner or rest[2:]))
    if kind.folder == "compute" and rest[:1] == ("compute",):
        return ("spec", *rest[1:])
    if kind.folder == "datasource" and rest[:1] == ("storage",) and len(rest) >= 3:
        return ("spec", *rest[3:])
    if kind.folder == "environment" and rest[:1] == ("security",):
        return ("spec", *rest[1:])
    return path
