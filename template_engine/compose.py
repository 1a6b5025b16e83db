"""Pure composition: an org, a template and a view in; combined specs, runnability and provenance out."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from template_engine.errors import CompositionError, Location, NotFoundError, Problem, RenderError
from template_engine.merge.engine import Layer, MergeResult, MergeWarning, clone, merge_layers
from template_engine.merge.plan import PlanNode, build_plan
from template_engine.models.documents import ASSET_FOLDERS, DatasourceAsset, TemplateAssets
from template_engine.models.spec import WORKER_ONLY_FIELDS, WorkerSpec
from template_engine.org import Org, Scope, Template, View, asset_ref, defaults_ref
from template_engine.paths import Path, format_path
from template_engine.render import RESERVED, Budget, referenced_names, render_final
from template_engine.runnable import Runnable, RunnableIssue, check

#: How every spec merges, read once from the markers on the models.
SPEC_PLAN: PlanNode = build_plan(WorkerSpec)

#: The field ``overrides.containerPath`` replaces, per data source kind (DESIGN.md "Layers and precedence").
CONTAINER_PATH_FIELD: dict[str, str] = {
    "pvc": "path",
    "s3": "path",
    "git": "path",
    "emptyDirVolume": "path",
    "nfs": "mountPath",
    "hostPath": "mountPath",
    "configMapVolume": "mountPath",
    "secretVolume": "mountPath",
    "dataVolume": "mountPath",
}


@dataclass(frozen=True, slots=True)
class Submission:
    """A workload submission's own layer (service only): the highest precedence of all."""

    spec: Mapping[str, Any] | None = None
    master_same_as_worker: bool | None = None
    master_spec: Mapping[str, Any] | None = None
    label: str = "workload submission"
    file: str = "request body"


@dataclass(frozen=True)
class Composition:
    """The effective specs of one template as seen from one view, and how they came to be."""

    template: Template | None
    view: View
    master_same_as_worker: bool
    worker: MergeResult
    master: MergeResult | None
    combined_spec: dict[str, Any]
    combined_master_spec: dict[str, Any] | None
    runnable: Runnable
    context: Mapping[str, Any] = field(default_factory=dict)

    def meta(self) -> dict[str, Any]:
        if self.template is None:
            return {}
        doc = self.template.doc.meta
        meta: dict[str, Any] = {
            "name": doc.name,
            "workloadType": "Distributed",
            "scopeType": self.template.scope.type,
            "scopeId": self.template.scope.name,
        }
        if doc.description is not None:
            meta["description"] = doc.description
        if self.view.department is not None:
            meta["departmentId"] = self.view.department
        if self.view.project is not None:
            meta["projectId"] = self.view.project
        return meta

    def to_response(self) -> dict[str, Any]:
        """The seed's response shape; the template's own ``spec`` and ``master`` as written."""
        doc = self.template.doc if self.template is not None else None
        written = self.template.source.data if self.template is not None else {}
        master = written.get("master") if doc is not None else None
        return {
            "meta": self.meta(),
            "spec": clone(written.get("spec") or {}),
            "assets": clone(written.get("assets") or {}),
            "masterSpecSameAsWorker": self.master_same_as_worker,
            "master": clone(master) if isinstance(master, Mapping) else None,
            "runnable": self.runnable.to_dict(),
            "combinedSpec": self.combined_spec,
            "combinedMasterSpec": self.combined_master_spec,
        }


def _render_final(
    spec: dict[str, Any],
    context: Mapping[str, Any],
    result: MergeResult,
    replica: str,
    seen: set[str],
    budget: Budget,
) -> tuple[dict[str, Any], list[Problem]]:
    """The final (rendered, pruned, sorted) form of ``spec``, and every render problem with its path."""
    return render_final(spec, context, lambda p: _locate(result, p), replica, SPEC_PLAN, budget, seen)


# -- layers -------------------------------------------------------------------------------------------------


def _scope_label(scope: Scope) -> str:
    return "system defaults" if scope.name is None else f"{scope.type} {scope.name} defaults"


def _section(data: Mapping[str, Any], *names: str) -> Mapping[str, Any] | None:
    """``data[names[0]][names[1]]...`` where every step is a mapping, else ``None`` (null is no opinion)."""
    value: Any = data
    for name in names:
        value = value.get(name) if isinstance(value, Mapping) else None
    return value if isinstance(value, Mapping) and value else None


def _default_layers(org: Org, view: View, master: bool) -> list[Layer]:
    layers = []
    root: tuple[str, ...] = ("master", "spec") if master else ("spec",)
    for scope in view.chain():
        org.require_intact(defaults_ref(scope))
        entry = org.defaults.get(scope)
        if entry is None:
            continue
        spec = _section(entry.source.data, *root)
        if spec is not None:
            layers.append(Layer(_scope_label(scope), entry.source.file, spec, entry.source.lines, root))
    return layers


def _asset_layers(org: Org, assets: TemplateAssets | None, template: Template, root: Path) -> list[Layer]:
    if assets is None:
        return []
    layers = []
    for kind, name in (("environment", assets.environment), ("compute", assets.compute)):
        if name is None:
            continue
        asset = _asset(org, kind, name, template, (*root, kind))
        layers.append(
            Layer(
                f"{kind} asset {name}",
                asset.source.file,
                asset.source.data.get("spec") or {},
                asset.source.lines,
                ("spec",),
            )
        )
    for index, ref in enumerate(assets.datasources or ()):
        asset = _asset(org, "datasource", ref.name, template, (*root, "datasources", index, "name"))
        assert isinstance(asset.doc, DatasourceAsset)
        storage = asset.source.data["spec"]["storage"]
        kind = next(k for k, v in storage.items() if v)
        item = dict(storage[kind][0])
        own_key = "id" if kind == "dataVolume" else "name"
        if item.get(own_key) is None:
            item[own_key] = ref.name
        layers.append(
            Layer(
                f"datasource asset {ref.name}",
                asset.source.file,
                {"storage": {kind: [item]}},
                asset.source.lines,
                ("spec",),
            )
        )
        if ref.overrides is not None and ref.overrides.containerPath is not None:
            override = {own_key: item[own_key], CONTAINER_PATH_FIELD[kind]: ref.overrides.containerPath}
            layers.append(
                Layer(
                    f"template {template.name} (containerPath of {ref.name})",
                    template.source.file,
                    {"storage": {kind: [override]}},
                    template.source.lines,
                    (*root, "datasources", index, "overrides", "containerPath"),
                )
            )
    return layers


def _asset(org: Org, kind: Any, name: str, template: Template, path: Path) -> Any:
    org.require_intact(asset_ref(kind, name))
    try:
        asset = org.asset(kind, name)
    except NotFoundError:
        line = template.source.lines.get(path)
        raise CompositionError(
            [
                Problem(
                    f"template {template.name!r} refers to an unknown {kind} asset {name!r}",
                    path,
                    Location(template.source.file, line[0] if line else None, line[1] if line else None),
                    f"a file assets/{ASSET_FOLDERS[kind]}/{name}.yaml",
                )
            ]
        ) from None
    return asset


# -- composition --------------------------------------------------------------------------------------------


def _context(view: View, template: Template | None, variables: Mapping[str, str]) -> dict[str, Any]:
    clash = RESERVED.intersection(variables)
    if clash:
        raise CompositionError(
            [
                Problem(
                    f"variable {name!r} is reserved for the composition's own names",
                    (),
                    None,
                    "another variable name",
                )
                for name in sorted(clash)
            ]
        )
    context: dict[str, Any] = dict(variables)
    if view.department is not None:
        context["department"] = {"name": view.department}
    if view.project is not None:
        context["project"] = {"name": view.project}
    if template is not None:
        context["template"] = {"name": template.name}
    return context


#: Scope-default merges by (view, is master), shared by the compositions of one org (see ``compose``).
MergeCache = dict[tuple[View, bool], MergeResult]


def _defaults_merge(org: Org, view: View, master: bool, cache: MergeCache | None) -> MergeResult:
    layers = _default_layers(org, view, master)
    if cache is None:
        return merge_layers(SPEC_PLAN, layers)
    found = cache.get((view, master))
    if found is None:
        found = cache[(view, master)] = merge_layers(SPEC_PLAN, layers)
    return found


def compose(
    org: Org,
    template: Template | None,
    view: View,
    variables: Mapping[str, str] | None = None,
    submission: Submission | None = None,
    cache: MergeCache | None = None,
) -> Composition:
    """Compose ``template`` (or, for a bare submission, no template) as seen from ``view``.

    ``cache``, an empty dict kept by a caller that composes many templates of the same ``org`` (``check``,
    the snapshot plugin, ``diff``), lets them share the merge of each view's scope defaults.
    """
    variables = variables or {}
    doc = template.doc if template is not None else None
    written = template.source if template is not None else None

    defaults = _defaults_merge(org, view, False, cache)
    worker_layers = list(defaults.layers)
    if template is not None and doc is not None and written is not None:
        worker_layers += _asset_layers(org, doc.assets, template, ("assets",))
        if written.data.get("spec"):
            worker_layers.append(
                Layer(
                    f"template {template.name}", written.file, written.data["spec"], written.lines, ("spec",)
                )
            )
    if submission is not None and submission.spec:
        worker_layers.append(Layer(submission.label, submission.file, submission.spec, {}, ("spec",)))

    same, same_by = True, "default"
    for scope in view.chain():
        entry = org.defaults.get(scope)
        if entry is not None and entry.doc.masterSpecSameAsWorker is not None:
            same, same_by = entry.doc.masterSpecSameAsWorker, entry.source.file
    if doc is not None and doc.masterSpecSameAsWorker is not None:
        same = doc.masterSpecSameAsWorker
    if submission is not None and submission.master_same_as_worker is not None:
        same = submission.master_same_as_worker
    if submission is not None and submission.master_same_as_worker is True and submission.master_spec:
        raise CompositionError(
            [
                Problem(
                    "masterSpecSameAsWorker is true and a masterSpec is given",
                    ("masterSpec",),
                    Location(submission.file),
                    "either masterSpecSameAsWorker false or no masterSpec",
                )
            ]
        )

    worker = merge_layers(SPEC_PLAN, worker_layers, defaults)
    master: MergeResult | None
    master_spec: dict[str, Any] | None
    if same:
        master = worker
        master_spec = {k: v for k, v in worker.spec.items() if k not in WORKER_ONLY_FIELDS}
    else:
        has_master = (
            doc is not None
            and doc.master is not None
            and (
                (written is not None and _section(written.data, "master", "spec") is not None)
                or doc.master.assets is not None
            )
        )
        if submission is not None and submission.master_spec:
            has_master = True
        if not has_master:
            master, master_spec = None, None
        else:
            master_defaults = _defaults_merge(org, view, True, cache)
            master_layers = list(master_defaults.layers)
            if template is not None and doc is not None and doc.master is not None and written is not None:
                master_layers += _asset_layers(org, doc.master.assets, template, ("master", "assets"))
                own = _section(written.data, "master", "spec")
                if own is not None:
                    master_layers.append(
                        Layer(
                            f"template {template.name} master",
                            written.file,
                            own,
                            written.lines,
                            ("master", "spec"),
                        )
                    )
            if submission is not None and submission.master_spec:
                master_layers.append(
                    Layer(
                        f"{submission.label} master",
                        submission.file,
                        submission.master_spec,
                        {},
                        ("masterSpec",),
                    )
                )
            master = merge_layers(SPEC_PLAN, master_layers, master_defaults)
            _reject_worker_only(master)
            master_spec = master.spec

    context = _context(view, template, variables)
    expressions: set[str] = set()
    budget = Budget()  # one budget for every value of this composition
    combined_spec, problems = _render_final(worker.spec, context, worker, "combinedSpec", expressions, budget)
    combined_master: dict[str, Any] | None = None
    if same:
        # The worker's rendering, without worker-only fields; a copy, so the two share nothing.
        combined_master = {k: clone(v) for k, v in combined_spec.items() if k not in WORKER_ONLY_FIELDS}
    elif master_spec is not None and master is not None:
        combined_master, more = _render_final(
            master_spec, context, master, "combinedMasterSpec", expressions, budget
        )
        problems += more
    if problems:
        raise RenderError(problems)

    merge_warnings = [RunnableIssue("worker", format_path(w.path), _with_place(w)) for w in worker.warnings]
    if master is not None and not same:
        merge_warnings += [
            RunnableIssue("master", format_path(w.path), _with_place(w)) for w in master.warnings
        ]
    if same and doc is not None and doc.master is not None:
        merge_warnings.append(
            RunnableIssue(
                "master",
                "master",
                f"the template's master section is ignored: masterSpecSameAsWorker is true ({same_by})",
            )
        )
    merge_warnings += _workers_only_by_department(org, view, template, submission, master)
    used = frozenset().union(*(referenced_names(text) for text in expressions))
    merge_warnings += [
        RunnableIssue("worker", f"--var {name}", f"variable {name!r} is not used by any value (a typo?)")
        for name in sorted(set(variables) - used)
    ]
    runnable = check(combined_spec, combined_master, not same, SPEC_PLAN, tuple(merge_warnings))
    return Composition(
        template, view, same, worker, master, combined_spec, combined_master, runnable, context
    )


def _workers_only_by_department(
    org: Org,
    view: View,
    template: Template | None,
    submission: Submission | None,
    master: MergeResult | None,
) -> list[RunnableIssue]:
    """A warning when a department's defaults alone make ``template`` workers only.

    ``masterSpecSameAsWorker: false`` in department defaults turns every template without a master section
    (system templates included) into workers only.  No warning when the template, a project's defaults or
    the submission decide the flag, or when there is a master.
    """
    if template is None or master is not None or template.doc.masterSpecSameAsWorker is not None:
        return []
    if submission is not None and submission.master_same_as_worker is not None:
        return []
    deciding = [
        entry
        for scope in view.chain()
        if (entry := org.defaults.get(scope)) is not None and entry.doc.masterSpecSameAsWorker is not None
    ]
    if not deciding or deciding[-1].scope.type != "department" or deciding[-1].doc.masterSpecSameAsWorker:
        return []
    entry = deciding[-1]
    line = entry.source.lines.get(("masterSpecSameAsWorker",))
    where = entry.source.file + (f":{line[0]}" if line else "")
    return [
        RunnableIssue(
            "master",
            "masterSpecSameAsWorker",
            f"set to false by {_scope_label(entry.scope)}: template {template.name!r} has no master section, "
            "so it runs workers only (decide in the template: masterSpecSameAsWorker or a master section) "
            f"[{where}]",
        )
    ]


def _with_place(warning: MergeWarning) -> str:
    where = warning.location.file
    if warning.location.line is not None:
        where += f":{warning.location.line}"
    return f"{warning.message} [{where}]"


def _locate(result: MergeResult, path: Path) -> Location | None:
    origin = result.origin_of(path)
    return result.location(origin) if origin is not None else None


def _reject_worker_only(master: MergeResult) -> None:
    problems = []
    for name in WORKER_ONLY_FIELDS:
        if name in master.spec:
            origin = master.origin_of((name,))
            problems.append(
                Problem(
                    f"a master spec cannot set the worker-only field {name!r}",
                    (name,),
                    master.location(origin) if origin is not None else None,
                    "worker-only fields in the worker spec",
                )
            )
    if problems:
        raise CompositionError(problems)
