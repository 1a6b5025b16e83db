"""Workload submission of every kind: a body in, the stored workload or one 400 with every problem out.

A submission of a kind composes that kind (:func:`~template_engine.compose.compose` with ``kind=``): the
project's defaults (system, cluster, department, project), the template named by ``templateId`` (which must be
visible from the project, and of the kind: else a 400 naming both kinds) and the submitted ``spec`` (and,
distributed, ``masterSpec``: the highest layer); a bare submission's ``spec`` is held to the kind's spec
model.  It is refused with one 400 that names every problem (Run:ai's ``SubmissionErrorV2``): what the schema
refuses, keyed-list items without their key, unknown projects and templates, a ``clusterId`` that is not the
project's cluster's, and every runnable issue of what remains once the refused parts are set aside.
Otherwise the workload is stored with its kind and the effective spec (``combinedSpec``; a distributed
``masterSpec`` is the separately composed master, ``null`` when the master is the worker or there is none).

Pull secrets a kind's composition has no field for are set aside while composing and added to what it
composed: a distributed ``masterSpec``'s own (Run:ai's ``MasterSpec`` has them; templates and defaults keep
pull secrets in the worker spec), and a one-role kind's ``spec.imagePullSecrets`` (Run:ai's ``<Kind>SpecSpec``
has them, its ``<Kind>TemplateSpec`` not).

The routes (:mod:`.routes.workloads`) parse, authorize and answer; :func:`submit` is the rest.
"""

from __future__ import annotations

import dataclasses
import secrets
import string
import uuid
from typing import Any

from pydantic import BaseModel, ConfigDict, StrictBool, create_model

from template_engine.compose import Composition
from template_engine.errors import Problem, TemplateEngineError
from template_engine.kinds import WorkloadKind
from template_engine.layers import Submission
from template_engine.loader.validate import key_problems
from template_engine.loader.values import document_value_problems
from template_engine.merge.plan import PlanNode
from template_engine.paths import Path, format_path
from template_engine.service.auth import Principal
from template_engine.service.bodies import pruned, schema_problems, valid
from template_engine.service.compliance import runai_issue
from template_engine.service.composer import compose_submission, template_of
from template_engine.service.context import Ctx, Placement, Store
from template_engine.service.documents import strip_nulls
from template_engine.service.errors import ApiError, Reason, details
from template_engine.service.placements import template_scope
from template_engine.service.schemas import OrgUnitId, WorkloadMasterSpec
from template_engine.service.storage.repository import TemplateRow, WorkloadRow
from template_engine.service.workload_shapes import WORKLOAD_KINDS, WorkloadShapes, shapes_of
from template_engine.walk import keyed_path

_SUFFIX = string.ascii_lowercase + string.digits
NOT_RUNNABLE = (
    "The workload request is not runnable: it does not comply with the composed defaults and policies."
)
NOT_VALID = "The workload request is not valid."
BODY = "request body"


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
    requested = [{"field": format_path(p.path), "details": p.with_expected()} for p in problems]
    text = [details(problems)] if problems else []
    text += [f"{i['field']}: {i['details']}" if i["field"] else i["details"] for i in issues]
    records = [p.to_dict() for p in problems] + [
        {"message": i["details"], "field": i["field"]} for i in issues
    ]
    message = NOT_VALID if problems else NOT_RUNNABLE
    extra = {"details": "\n".join(text), "problems": records, "complianceIssues": requested + issues}
    return ApiError(400, message, extra=extra)


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
        for form in (p[1:], keyed_path(raw.get(p[0]), p[1:], plan))
    ]
    out = []
    for issue in composition.runnable.issues:
        entry = runai_issue(issue, prefixed=issue.replica != "worker")
        field = entry["field"]
        if not any(field == g or field.startswith((f"{g}.", f"{g}[")) for g in given):
            out.append(entry)
    return out


def _template(
    ctx: Ctx, template_id: uuid.UUID | None, view: Placement, kind: WorkloadKind
) -> tuple[TemplateRow | None, Placement | None, list[Problem]]:
    if template_id is None:
        return None, None, []
    row = ctx.repo.template(str(template_id))
    own = _scope(ctx, row) if row is not None else None
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


def _scope(ctx: Ctx, row: TemplateRow) -> Placement:
    """A stored template's own scope."""
    return template_scope(ctx, row)


def _project(ctx: Ctx, project_id: str) -> tuple[Placement | None, list[Problem]]:
    """The project a submission names, share-locked until the submission commits: a concurrent delete of
    the project waits for it (and then sees its workload: a 409), or it for the delete (and then finds no
    project: a 400), on PostgreSQL as SQLite's serialised writes do."""
    try:
        return ctx.project_placement(project_id, "projectId", lock="share"), []
    except ApiError as exc:
        if exc.reason is not Reason.INVALID:
            raise
        return None, list(exc.problems)


def _cluster_problems(view: Placement, given: object) -> list[Problem]:
    """In an org with clusters, a submission's ``clusterId`` is its project's cluster's UUID (a ``clusterId``
    that is not a UUID is the schema's problem); without clusters, it is stored as given."""
    cluster = view.cluster
    if cluster is None or not isinstance(given, str) or given.lower() == cluster.uuid:
        return []
    where = f"project {view.project.name if view.project else ''} is in cluster {cluster.name}"
    return [Problem(f"{where} ({cluster.uuid}), not {given}", ("clusterId",), None, cluster.uuid)]


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


def submit(kind: WorkloadKind, principal: Principal, raw: dict[str, Any], store: Store) -> WorkloadRow:
    """Submit a workload of ``kind``: compose, refuse what is not runnable (with every problem of the request
    in the same 400, an :class:`~.errors.ApiError`), store the effective spec; the stored workload."""
    shapes = shapes_of(kind)
    problems = schema_problems(shapes.create, raw)
    part, submission, pulls = _layers(raw, problems, shapes)
    submission = dataclasses.replace(submission, name=_job_name(raw, problems))
    issues: list[dict[str, Any]] = []
    with store.write(principal) as ctx:
        view, more = _project(ctx, part.projectId) if part is not None else (None, [])
        problems += more + (_cluster_problems(view, raw.get("clusterId")) if view is not None else [])
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
            "cluster_id": view.cluster.uuid if view.cluster is not None else str(body.clusterId),
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
    return stored


def _job_name(raw: dict[str, Any], problems: list[Problem]) -> str | None:
    """The workload's name, its job's on the cluster (``useGivenNameAsPrefix``: with its random suffix), known
    before composing so that the objects are checked with it; ``None`` when the body's name is refused."""
    given = raw.get("name")
    if not isinstance(given, str) or any(p.path[:1] == ("name",) for p in problems):
        return None
    if raw.get("useGivenNameAsPrefix") is True:
        return f"{given[:57]}-{''.join(secrets.choice(_SUFFIX) for _ in range(5))}"
    return given
