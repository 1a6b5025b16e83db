"""Workloads: ``/api/v1/workloads/<segment>`` of every kind with one (``distributed``, seeds 000 and 003;
runai-facts 7.3; ``trainings``, ``workspaces``, ``inferences``: :data:`..workload_shapes.WORKLOAD_KINDS`), and
the any-type ``/api/v1/workloads`` list, count and read (the only way Run:ai's SDK lists workloads).

Each kind's routes are made once, by :func:`_kind_routes`, from the kind table: submit, read and delete
(Run:ai has them for every kind), suspend and resume for the kinds Run:ai suspends
(:attr:`~template_engine.kinds.WorkloadKind.workload_suspends`); the cluster objects for distributed
workloads, as before.  A submission of a kind composes that kind (:func:`~template_engine.compose.compose`
with ``kind=``): the template it names must be of the kind (else a 400 naming both kinds), and a bare
submission's ``spec`` is held to the kind's spec model.  A workload is read, deleted, suspended and resumed
at its own kind's path only (another kind's path answers 404, as for an unknown id).  A spec's
``imagePullSecrets`` of a kind whose template spec has none (Run:ai's ``<Kind>SpecSpec`` has them, its
``<Kind>TemplateSpec`` not) are set aside while composing and added to the composed spec, as a distributed
master's own are.

A submission composes the project's defaults (system, department, project), the template named by
``templateId`` (which must be visible from the project) and the submitted ``spec``/``masterSpec`` (the highest
layer).  A submission is refused with one 400 that names every problem (Run:ai's ``SubmissionErrorV2``):
what the schema refuses, keyed-list items without their key, unknown projects and templates, and every
runnable issue of what remains once the refused parts are set aside.  Otherwise the workload is stored with
the effective spec (``combinedSpec``; ``masterSpec`` is the separately composed master, ``null`` when the
master is the worker or there is none).  A ``masterSpec`` may give the master its own ``imagePullSecrets``
(Run:ai's ``MasterSpec`` has them; templates and defaults keep pull secrets in the worker spec): they are set
aside while composing and added to the composed master.  There is no cluster behind the service:
``actualPhase`` stays what the service set.
"""

from __future__ import annotations

import dataclasses
import secrets
import string
import uuid
from collections.abc import Callable
from enum import Enum
from typing import Annotated, Any, Literal

from fastapi import APIRouter, Query
from fastapi.responses import JSONResponse
from pydantic import BaseModel, ConfigDict, StrictBool, create_model

from template_engine.compose import Composition
from template_engine.errors import Problem, TemplateEngineError
from template_engine.kinds import DISTRIBUTED, WorkloadKind, kind_named
from template_engine.layers import Submission
from template_engine.loader.validate import key_problems
from template_engine.loader.values import document_value_problems
from template_engine.merge.plan import PlanNode, item_key
from template_engine.paths import Path, format_path
from template_engine.service.auth import Principal
from template_engine.service.bodies import documented, pruned, schema_problems, valid
from template_engine.service.cluster_api import (
    ManifestsOut,
    manifests_body,
    workload_manifests,
    workload_resolver,
)
from template_engine.service.composer import compose_submission, template_of, timestamp
from template_engine.service.context import Ctx, Placement, Store
from template_engine.service.documents import strip_nulls
from template_engine.service.errors import ApiError, details, not_found
from template_engine.service.listing import WORKLOADS, WorkloadFilterBy
from template_engine.service.routes.common import (
    AnnotateQuery,
    Auth,
    JsonObject,
    JsonRoute,
    StoreDep,
    errors,
    json_response,
    template_scope,
)
from template_engine.service.schemas import (
    TENANT_ID,
    AcceptedOut,
    CountOut,
    OrgUnitId,
    SubmissionErrorOut,
    WorkloadDetailedOut,
    WorkloadListOut,
    WorkloadMasterSpec,
    WorkloadSortBy,
)
from template_engine.service.storage.repository import TemplateRow, WorkloadRow
from template_engine.service.storage.tables import now
from template_engine.service.workload_shapes import WORKLOAD_KINDS, WorkloadShapes, shapes_of, workload_body

router = APIRouter(prefix="/api/v1/workloads", route_class=JsonRoute)
_DISTRIBUTED_TAGS: list[str | Enum] = [f"{DISTRIBUTED.workload_type} workloads"]

_ACCEPTED = {"code": 202, "message": "Request has been accepted."}
_SUFFIX = string.ascii_lowercase + string.digits
NOT_RUNNABLE = (
    "The workload request is not runnable: it does not comply with the composed defaults and policies."
)
NOT_VALID = "The workload request is not valid."
BODY = "request body"


# -- submission ---------------------------------------------------------------------------------------------


class _Composable(BaseModel):
    """The parts of a submission a composition needs, read from what the schema did not refuse (``spec``:
    the kind's, :func:`_composable`)."""

    model_config = ConfigDict(extra="ignore")

    projectId: OrgUnitId
    templateId: uuid.UUID | None = None
    masterSpecSameAsWorker: StrictBool | None = None
    masterSpec: WorkloadMasterSpec | None = None


def _composable(shapes: WorkloadShapes) -> type[_Composable]:
    spec: Any = (shapes.spec | None, None)
    model: type[_Composable] = create_model(
        f"_{shapes.kind.workload_type}Composable", __base__=_Composable, spec=spec
    )
    return model


_COMPOSABLE = {shapes.kind.name: _composable(shapes) for shapes in WORKLOAD_KINDS}


def _refused(problems: list[Problem], issues: list[dict[str, Any]]) -> ApiError:
    """One 400 with every problem of the request and every runnable issue (Run:ai's ``SubmissionErrorV2``:
    each in ``complianceIssues``; ``problems`` and ``details`` say the same)."""
    requested = [{"field": format_path(p.path), "details": _words(p)} for p in problems]
    text = [details(problems)] if problems else []
    text += [f"{i['field']}: {i['details']}" if i["field"] else i["details"] for i in issues]
    records = [p.to_dict() for p in problems] + [
        {"message": i["details"], "field": i["field"]} for i in issues
    ]
    message = NOT_VALID if problems else NOT_RUNNABLE
    extra = {"details": "\n".join(text), "problems": records, "complianceIssues": requested + issues}
    return ApiError(400, message, extra=extra)


def _words(problem: Problem) -> str:
    return f"{problem.message} (expected {problem.expected})" if problem.expected else problem.message


def _as_keyed(spec: Any, path: Path, plan: PlanNode) -> Path:
    """``path`` in ``spec`` with the items of keyed lists named by their key, as runnable issues name them."""
    out: list[Any] = []
    node = plan
    for part in path:
        if isinstance(part, int) and isinstance(spec, list) and 0 <= part < len(spec):
            item = spec[part]
            key = item_key(item, node.key) if isinstance(item, dict) and node.key is not None else None
            out.append(key if key is not None else part)
            spec = item
        else:
            out.append(part)
            spec = spec.get(part) if isinstance(spec, dict) and isinstance(part, str) else None
            node = node.child(part) if isinstance(part, str) else node
    return tuple(out)


def _runnable_issues(
    composition: Composition, raw: dict[str, Any], set_aside: list[Path], plan: PlanNode
) -> list[dict[str, Any]]:
    """The composition's runnable issues (master fields under ``masterSpec.``), without those about a field
    the request gave but the schema refused (``set_aside``): its own problem says what is wrong there."""
    given = [
        prefix + format_path(form)
        for p in set_aside
        if len(p) > 1 and p[0] in _SPECS
        for prefix in ("" if p[0] == "spec" else "masterSpec.",)
        for form in (p[1:], _as_keyed(raw.get(p[0]), p[1:], plan))
    ]
    out = []
    for issue in composition.runnable.issues:
        field = format_path(issue.field if issue.replica == "worker" else ("masterSpec", *issue.field))
        if any(field == g or field.startswith((f"{g}.", f"{g}[")) for g in given):
            continue
        entry: dict[str, Any] = {"field": field, "details": issue.message}
        if issue.rule is not None:
            entry["rule"] = issue.rule
        elif issue.mandatory:
            entry["rule"] = "required"
        out.append(entry)
    return out


def _template(
    ctx: Ctx, template_id: uuid.UUID | None, view: Placement, kind: WorkloadKind
) -> tuple[TemplateRow | None, Placement | None, list[Problem]]:
    if template_id is None:
        return None, None, []
    row = ctx.repo.template(str(template_id))
    own = template_scope(ctx, row.scope_type, row.department_id, row.project_id) if row is not None else None
    if row is None or own is None or not ctx.access.can_read(own.ref):
        # A template the caller may not read is answered as one that does not exist: its name is not told.
        return None, None, [Problem(f"unknown template {template_id}", ("templateId",))]
    if not own.contains(view):
        problem = Problem(
            f"template {row.name!r} ({row.id}) is not visible from this project", ("templateId",)
        )
        return None, None, [problem]
    template, _ = template_of(row, own)  # a template that cannot be read: the composition says why
    if template is not None and template.kind is not kind:
        problem = Problem(
            f"template {row.name!r} ({row.id}) is a {template.kind.name} template: a {kind.name} workload "
            f"is submitted with a {kind.name} template",
            ("templateId",),
            None,
            f"the id of a {kind.name} template, or none",
        )
        return None, None, [problem]
    return row, own, []


def _project(ctx: Ctx, project_id: str) -> tuple[Placement | None, list[Problem]]:
    """The project a submission names, share-locked until the submission commits: a concurrent delete of
    the project waits for it (and then sees its workload: a 409), or it for the delete (and then finds no
    project: a 400), on PostgreSQL as SQLite's serialised writes do."""
    try:
        return ctx.project_placement(project_id, "projectId", lock="share"), []
    except ApiError as exc:
        if exc.status != 400:
            raise
        return None, list(exc.problems)


def _layers(
    raw: dict[str, Any], problems: list[Problem], shapes: WorkloadShapes
) -> tuple[_Composable | None, Submission, list[Any]]:
    """What a composition takes from the body, once the parts with problems are set aside; the problems of
    the keyed lists are added to ``problems``; the pull secrets the kind's composition has no field for (a
    master's own, a one-role kind's) are returned apart."""
    problems += _rules(raw, shapes.plan)  # on the body as sent: a key the schema refuses is still a key
    rest = pruned(raw, problems)
    part = valid(_COMPOSABLE[shapes.kind.name], rest)
    layers = {name: strip_nulls(rest.get(name) or {}) if part is not None else {} for name in _SPECS}
    # Items that lost their key with a refused value cannot be merged: set them aside too, unreported.
    layers = pruned(layers, _keyed(layers, shapes.plan))
    spec, master = layers["spec"], layers["masterSpec"]
    if not shapes.kind.is_distributed:
        pulls = spec.pop("imagePullSecrets", None) or []
        return part, Submission(spec or None), pulls
    same = part.masterSpecSameAsWorker if part is not None else None
    if same is True and raw.get("masterSpec") is not None:
        problems.append(
            Problem(
                "masterSpecSameAsWorker is true and a masterSpec is given",
                ("masterSpec",),
                None,
                "masterSpecSameAsWorker: false, or no masterSpec",
            )
        )
        master = {}  # the runnable issues are those of the workload the flag asks for
    pulls = master.pop("imagePullSecrets", None) or []
    return part, Submission(spec or None, same, master or None), pulls


_SPECS = ("spec", "masterSpec")


def _keyed(body: dict[str, Any], plan: PlanNode) -> list[Problem]:
    """Keyed-list items without their key, and keys given twice, in the body's specs."""
    found: list[Problem] = []
    for name in _SPECS:
        spec = body.get(name)
        if isinstance(spec, dict):
            found += key_problems(plan, strip_nulls(spec), (name,), BODY, {})
    return found


def _rules(raw: dict[str, Any], plan: PlanNode) -> list[Problem]:
    """The keyed-list problems and the values Run:ai's schema refuses (:mod:`..values`), of the specs."""
    return _keyed(raw, plan) + document_value_problems(raw, (("spec",), ("masterSpec",)))


def _specs(
    composition: Composition, pulls: list[Any]
) -> tuple[dict[str, Any], dict[str, Any] | None, list[Problem]]:
    """The stored ``spec`` and ``masterSpec``: the composed ones, with the pull secrets set aside (a master's
    own, or those of a kind whose composition has no field for them)."""
    if composition.kind.is_distributed:
        master, problems = _master_pulls(composition, pulls)
        return composition.combined_spec, master, problems
    spec = composition.combined_spec
    return ({**spec, "imagePullSecrets": pulls} if pulls else spec), None, []


def _master_pulls(composition: Composition, pulls: list[Any]) -> tuple[dict[str, Any] | None, list[Problem]]:
    """The stored ``masterSpec``: the composed master, with the master's own pull secrets."""
    master = None if composition.master_same_as_worker else composition.combined_master_spec
    if not pulls:
        return master, []
    if master is None:
        return None, [
            Problem(
                "the workload has no separate master to give these pull secrets to",
                ("masterSpec", "imagePullSecrets"),
                None,
                "a master spec (masterSpecSameAsWorker: false), or the pull secrets in spec.imagePullSecrets",
            )
        ]
    return {**master, "imagePullSecrets": pulls}, []


def submit(kind: WorkloadKind, principal: Principal, raw: dict[str, Any], store: Store) -> JSONResponse:
    """Submit a workload of ``kind``: compose, refuse what is not runnable (with every problem of the request
    in the same 400), store the effective spec."""
    shapes = shapes_of(kind)
    problems = schema_problems(shapes.create, raw)
    part, submission, pulls = _layers(raw, problems, shapes)
    submission = dataclasses.replace(submission, name=_job_name(raw, problems))
    issues: list[dict[str, Any]] = []
    with store.write(principal) as ctx:
        view, more = _project(ctx, part.projectId) if part is not None else (None, [])
        problems += more
        if view is not None:
            ctx.access.require_write(view.ref)
        row, own, more = _template(ctx, part.templateId, view, kind) if part and view else (None, None, [])
        problems += more
        composition = None
        if view is not None and not more:
            try:
                composition = compose_submission(ctx, view, row, own, submission, kind)
            except TemplateEngineError as exc:
                problems += exc.problems
        spec: dict[str, Any] = {}
        master_spec = None
        if composition is not None:
            issues = _runnable_issues(composition, raw, [p.path for p in problems], shapes.plan)
            spec, master_spec, more = _specs(composition, pulls)
            problems += more
        if problems or issues:
            raise _refused(problems, issues)
        assert composition is not None and view is not None and part is not None
        assert view.project is not None and view.department is not None
        body: Any = shapes.create.model_validate(raw)
        name = submission.name or body.name
        if ctx.repo.live_workload_named(view.project.id, name) is not None:
            # Run:ai declares 400 (SubmissionErrorV2) for this operation, no 409.
            raise _refused([Problem(f"a workload named {name!r} exists in this project", ("name",))], [])
        workload_id = str(uuid.uuid4())
        values = {
            "id": workload_id,
            "kind": kind.name,
            "name": name,
            "requested_name": body.name,
            "project_id": view.project.id,
            "department_id": view.department.id,
            "cluster_id": str(body.clusterId),
            "template_id": row.id if row is not None else None,
            "desired_phase": "Running",
            "actual_phase": "Creating",
            "master_same_as_worker": composition.master_same_as_worker,
            "spec": spec,
            "master_spec": master_spec,
        }
        ctx.repo.add_workload(values, ctx.subject)
        stored = ctx.repo.workload(workload_id)
    assert stored is not None
    return json_response(workload_body(stored, kind), 202)


def _job_name(raw: dict[str, Any], problems: list[Problem]) -> str | None:
    """The workload's name, its job's on the cluster (``useGivenNameAsPrefix``: with its random suffix), known
    before composing so that the objects are checked with it; ``None`` when the body's name is refused."""
    given = raw.get("name")
    if not isinstance(given, str) or any(p.path[:1] == ("name",) for p in problems):
        return None
    if raw.get("useGivenNameAsPrefix") is True:
        return f"{given[:57]}-{''.join(secrets.choice(_SUFFIX) for _ in range(5))}"
    return given


# -- one workload -------------------------------------------------------------------------------------------


def _readable(ctx: Ctx, row: WorkloadRow) -> Placement | None:
    """The workload's project, when it still exists; ``None`` when it is gone."""
    return ctx.placement("project", row.project_id) if ctx.repo.project(row.project_id) else None


def _may_read_orphans(ctx: Ctx) -> bool:
    return ctx.access.is_admin or ctx.access.principal.role == "viewer"


def _load(ctx: Ctx, workload_id: uuid.UUID, write: bool, kind: WorkloadKind | None = None) -> WorkloadRow:
    """The workload of ``workload_id`` the caller may read (``write``: change); with ``kind``, only one of
    that kind: another kind's workload is not found at this kind's path, as Run:ai's are not."""
    row = ctx.repo.workload(str(workload_id), lock=write)
    if row is None or (kind is not None and row.kind != kind.name):
        noun = f"{kind.noun} workload" if kind is not None else "workload"
        raise not_found(f"{noun} {workload_id}")
    place = _readable(ctx, row)
    if place is None:  # the project is gone: only system admins (and viewers, to read) reach the record
        if write:
            ctx.access.require_admin()
        elif not _may_read_orphans(ctx):
            raise ApiError(403)
        return row
    if write:
        ctx.access.require_write(place.ref)
    else:
        ctx.access.require_read(place.ref)
    return row


@router.get(
    "/distributed/{workloadId}/manifests",
    tags=_DISTRIBUTED_TAGS,
    response_model=ManifestsOut,
    responses=errors(404),
    description="An extension of Run:ai's API: the objects the cluster would run (docs/cluster.md).",
    openapi_extra={"x-template-engine-extension": True},
)
def workload_manifests_of(
    workloadId: uuid.UUID,
    principal: Auth,
    store: StoreDep,
    annotate: AnnotateQuery = None,
) -> JSONResponse:
    """The objects of a workload: its stored effective spec, named after the workload, in its project's
    namespace and queue, rendered with the org's cluster settings as they are now."""
    with store.read(principal) as ctx:
        row = _load(ctx, workloadId, write=False, kind=DISTRIBUTED)
        place = _readable(ctx, row)
        project = place.project.name if place is not None and place.project is not None else None
        cluster = ctx.repo.cluster_settings()
    manifests, runnable = workload_manifests(row, project, cluster)
    body = manifests_body(manifests, runnable, bool(annotate), workload_resolver(row, cluster))
    return json_response(body)


def _set_phase(
    workload_id: uuid.UUID,
    principal: Principal,
    store: Store,
    changes: dict[str, Any],
    kind: WorkloadKind,
) -> JSONResponse:
    with store.write(principal) as ctx:
        row = _load(ctx, workload_id, write=True, kind=kind)
        if row.deleted_at is None:
            if "deleted_at" not in changes and row.desired_phase == changes["desired_phase"]:
                return json_response(_ACCEPTED, 202)
            ctx.repo.update_workload(row.id, row.audit.version, changes, ctx.subject)
        elif "deleted_at" not in changes:
            raise ApiError(409, "The workload is deleted.")
    return json_response(_ACCEPTED, 202)


def _kind_routes(shapes: WorkloadShapes) -> None:
    """Submit, read and delete of one kind: ``/api/v1/workloads/<segment>``, ``/<segment>/{workloadId}``."""
    kind = shapes.kind
    path = f"/{kind.workload_segment}"
    tags: list[str | Enum] = [f"{kind.workload_type} workloads"]

    @router.post(
        path,
        status_code=202,
        response_model=shapes.out,
        responses={
            **errors(403, 409),
            400: {"model": SubmissionErrorOut, "description": "Bad or not runnable."},
        },
        openapi_extra=documented(shapes.create),
        name=f"submit_{kind.name}_workload",
        summary=f"Submit a {kind.noun} (Run:ai's {kind.workload_type} workload)",
        tags=tags,
    )
    def create(principal: Auth, raw: JsonObject, store: StoreDep) -> JSONResponse:
        return submit(kind, principal, raw, store)

    @router.get(
        path + "/{workloadId}",
        response_model=shapes.out,
        responses=errors(403, 404),
        name=f"get_{kind.name}_workload",
        summary=f"A {kind.noun} as submitted, with its effective spec",
        tags=tags,
    )
    def get(workloadId: uuid.UUID, principal: Auth, store: StoreDep) -> JSONResponse:
        with store.read(principal) as ctx:
            row = _load(ctx, workloadId, write=False, kind=kind)
        return json_response(workload_body(row, kind))

    @router.delete(
        path + "/{workloadId}",
        status_code=202,
        response_model=AcceptedOut,
        responses=errors(403, 404),
        name=f"delete_{kind.name}_workload",
        summary=f"Mark a {kind.noun} deleted (deletedAt, desiredPhase: Deleted); again changes nothing",
        tags=tags,
    )
    def delete(workloadId: uuid.UUID, principal: Auth, store: StoreDep) -> JSONResponse:
        changes = {"deleted_at": now(), "desired_phase": "Deleted", "actual_phase": "Deleting"}
        return _set_phase(workloadId, principal, store, changes, kind)

    if kind.workload_suspends:
        _phase_routes(kind, path, tags)


#: Suspend and resume: the desired phase each asks for, and the phase the service sets meanwhile.
_PHASES = {"suspend": ("Stopped", "Stopping"), "resume": ("Running", "Resuming")}


def _phase_change(kind: WorkloadKind, changes: dict[str, Any]) -> Callable[..., JSONResponse]:
    def change(workloadId: uuid.UUID, principal: Auth, store: StoreDep) -> JSONResponse:
        return _set_phase(workloadId, principal, store, dict(changes), kind)

    return change


def _phase_routes(kind: WorkloadKind, path: str, tags: list[str | Enum]) -> None:
    """``/<segment>/{workloadId}/suspend`` and ``/resume`` of a kind Run:ai suspends: ask for the workload to
    stop (``desiredPhase: Stopped``) or run again (``Running``); a deleted workload is a 409."""
    for action, (desired, actual) in _PHASES.items():
        change = _phase_change(kind, {"desired_phase": desired, "actual_phase": actual})
        router.add_api_route(
            f"{path}/{{workloadId}}/{action}",
            change,
            methods=["POST"],
            status_code=202,
            response_model=AcceptedOut,
            responses=errors(403, 404, 409),
            name=f"{action}_{kind.name}_workload",
            summary=f"Ask for a {kind.noun} to {'stop' if action == 'suspend' else 'run again'} "
            f"(desiredPhase: {desired})",
            tags=tags,
        )


for _shapes in WORKLOAD_KINDS:
    _kind_routes(_shapes)


# -- any type: GET /api/v1/workloads, /count, /{workloadId} -------------------------------------------------
# Declared last: ``/{workloadId}`` would otherwise take ``/count``.


def workload_summary(ctx: Ctx, row: WorkloadRow) -> dict[str, Any]:
    """Run:ai's ``Workload``: every key its schema requires (``deletedAt`` and ``priority`` even when null).
    No pods run here: the phase is the one the service set, ``runningPods`` is 0, ``conditions`` empty."""
    project = ctx.repo.project(row.project_id)
    department = ctx.repo.department(row.department_id) if row.department_id is not None else None
    phase = row.actual_phase or "Unknown"
    changed = timestamp(row.audit.updated_at)
    images = {s.get("image") for s in (row.spec, row.master_spec or {})} - {None}
    summary: dict[str, Any] = {
        "tenantId": TENANT_ID,
        "id": row.id,
        "name": row.name,
        "type": kind_named(row.kind).workload_type,
        "category": row.spec.get("category") or "Train",
        "source": "Control-plane",
        "clusterId": row.cluster_id,
        "projectId": str(row.project_id),
        "projectName": project.name if project is not None else "",
        "departmentId": str(row.department_id) if row.department_id is not None else "",
        "departmentName": department.name if department is not None else "",
        "namespace": f"runai-{project.name}" if project is not None else "",
        "createdAt": timestamp(row.audit.created_at),
        "updatedAt": changed,
        "deletedAt": timestamp(row.deleted_at) if row.deleted_at is not None else None,
        "submittedBy": row.audit.created_by,
        "phase": phase,
        "phaseUpdatedAt": changed,
        "k8sPhase": phase,
        "k8sPhaseUpdatedAt": changed,
        "runningPods": 0,
        "priority": None,
        "priorityClassName": row.spec.get("priorityClass") or "train",
        "conditions": [],
        "images": sorted(images),
    }
    framework = row.spec.get("distributedFramework")
    if framework is not None:  # a string in Run:ai's Workload, not nullable: absent for the other kinds
        summary["distributedFramework"] = framework
    return summary


Deleted = Annotated[
    bool | None, Query(description="true: only the deleted workloads; false or absent: only the live ones.")
]


def _matching(
    ctx: Ctx, deleted: bool | None, filter_by: list[str] | None, search: str | None
) -> list[dict[str, Any]]:
    filters = WORKLOADS.parse(filter_by)
    out = []
    for row in ctx.repo.workloads(deleted=deleted is True):
        place = _readable(ctx, row)
        if not (ctx.access.can_read(place.ref) if place is not None else _may_read_orphans(ctx)):
            continue
        if search and search.lower() not in row.name.lower():
            continue
        entry = workload_summary(ctx, row)
        if all(f(entry) for f in filters):
            out.append(entry)
    return out


@router.get("", response_model=WorkloadListOut, responses=errors(), tags=["Workloads"])
def list_workloads(
    principal: Auth,
    store: StoreDep,
    deleted: Deleted = None,
    offset: Annotated[int, Query(ge=0, le=10**9)] = 0,
    limit: Annotated[int, Query(ge=1, le=500)] = 50,
    sortOrder: Literal["asc", "desc"] = "asc",
    sortBy: WorkloadSortBy | None = None,
    filterBy: WorkloadFilterBy = None,
    search: Annotated[str | None, Query(max_length=253)] = None,
) -> JSONResponse:
    """The workloads the caller may read, as Run:ai's ``Workload`` (oldest first unless ``sortBy``)."""
    with store.read(principal) as ctx:
        entries = _matching(ctx, deleted, filterBy, search)
    if sortBy is not None:
        entries.sort(key=WORKLOADS.sort_key(sortBy, "id"), reverse=sortOrder == "desc")
    elif sortOrder == "desc":
        entries.reverse()
    body: dict[str, Any] = {"workloads": entries[offset : offset + limit]}
    if offset + limit < len(entries):
        body["next"] = offset + limit
    return json_response(body)


@router.get("/count", response_model=CountOut, responses=errors(), tags=["Workloads"])
def count_workloads(
    principal: Auth,
    store: StoreDep,
    deleted: Deleted = None,
    filterBy: WorkloadFilterBy = None,
    search: Annotated[str | None, Query(max_length=253)] = None,
) -> JSONResponse:
    """How many workloads the caller may read match the filters."""
    with store.read(principal) as ctx:
        return json_response({"count": len(_matching(ctx, deleted, filterBy, search))})


@router.get(
    "/{workloadId}", response_model=WorkloadDetailedOut, responses=errors(403, 404), tags=["Workloads"]
)
def get_any_workload(workloadId: uuid.UUID, principal: Auth, store: StoreDep) -> JSONResponse:
    """A workload of any type by id, as Run:ai's ``WorkloadDetailed``."""
    with store.read(principal) as ctx:
        row = _load(ctx, workloadId, write=False)
        return json_response(workload_summary(ctx, row))
