"""Pure composition: an org, a template and a view in; combined specs, runnability and provenance out.

The pipeline, one module per stage: :mod:`~template_engine.layers` (which layers, in the contract's order) ->
:mod:`~template_engine.merge` (the keyed merge, with provenance) -> :mod:`~template_engine.render` (the final
form) -> :mod:`~template_engine.runnable` (every reason it cannot be submitted).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any

from template_engine.asset_support import asset_support_issues
from template_engine.cluster.mapping import Manifests
from template_engine.cluster.outcome import cluster_outcome
from template_engine.errors import (
    CompositionError,
    CompositionWarning,
    Location,
    Problem,
    TemplateEngineError,
    WarningKind,
)
from template_engine.kinds import DISTRIBUTED, WorkloadKind
from template_engine.layers import (
    NotApplied,
    SameAsWorker,
    Submission,
    effective_policy,
    has_own_master,
    imposed_items,
    master_layers,
    not_applied,
    policy_side_layers,
    same_as_worker,
    scope_label,
    worker_layers,
)
from template_engine.merge.engine import Layer, MergeResult, clone, merge_layers
from template_engine.merge.plan import PlanNode
from template_engine.models.spec import WORKER_ONLY_FIELDS
from template_engine.org import Defaults, Org, Template, View
from template_engine.paths import Path
from template_engine.policy.document import AttributeDefault, FieldRules
from template_engine.policy.effective import EffectivePolicy
from template_engine.policy.vocabulary import Replica
from template_engine.render import RESERVED, Rendered, render_composition, render_final
from template_engine.runnable import Runnable, RunnableIssue, check

if TYPE_CHECKING:  # imported by the policy step, for an org with policies
    from template_engine.policy.apply import PolicyOutcome, Protected

__all__ = ["Composition", "MergeCache", "compose", "composition_context", "unused_variable"]


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
    #: The effective policy of the view, and the values its ``defaultFrom`` rules and attribute defaults set
    #: (by replica and path).
    policy: EffectivePolicy = field(default_factory=EffectivePolicy)
    policy_origins: Mapping[tuple[Replica, Path], FieldRules | AttributeDefault] = field(default_factory=dict)
    #: The objects the cluster runs (docs/cluster.md); their refusals are among ``runnable``'s issues.
    manifests: Manifests | None = None
    #: The workload kind composed (the template's; a bare submission's own).
    kind: WorkloadKind = DISTRIBUTED
    #: The fields layers give that the kind's spec does not have, left out (``explain`` says each).
    not_applied: tuple[NotApplied, ...] = ()

    def meta(self) -> dict[str, Any]:
        if self.template is None:
            return {}
        doc = self.template.doc.meta
        meta: dict[str, Any] = {
            "name": doc.name,
            "workloadType": self.kind.workload_type,
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
        if not self.kind.is_distributed:  # Run:ai's shape of a kind of one replica: no master
            return {
                "meta": self.meta(),
                "spec": clone(written.get("spec") or {}),
                "assets": clone(written.get("assets") or {}),
                "runnable": self.runnable.to_dict(),
                "combinedSpec": self.combined_spec,
            }
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


#: Scope-default merges by (view, is master, kind name), shared by the compositions of one org (see
#: ``compose``).
MergeCache = dict[tuple[View, bool, str], MergeResult]


def compose(
    org: Org,
    template: Template | None,
    view: View,
    variables: Mapping[str, str] | None = None,
    submission: Submission | None = None,
    cache: MergeCache | None = None,
    kind: WorkloadKind | None = None,
) -> Composition:
    """Compose ``template`` (or, for a bare submission, no template) as seen from ``view``.

    ``cache``, an empty dict kept by a caller that composes many templates of the same ``org`` (``check``,
    the snapshot plugin, ``diff``), lets them share the merge of each view's scope defaults.  ``kind`` is
    the template's (a bare submission says its own; none: distributed).
    """
    variables = variables or {}
    kind = kind or (template.kind if template is not None else DISTRIBUTED)
    plan = kind.plan()
    policy = effective_policy(org, view, kind)
    if cache is None:  # one merge of every layer (nothing to share the defaults' merge with)
        worker = merge_layers(plan, worker_layers(org, template, view, submission, kind=kind))
    else:
        defaults = _defaults_merge(org, view, False, cache, kind)
        layers = worker_layers(org, template, view, submission, defaults.layers, kind)
        worker = merge_layers(plan, layers, defaults)
    same = same_as_worker(org, template, view, submission, kind)
    master = None if same.value else _master_merge(org, template, view, submission, cache, kind)
    context = composition_context(view, template, variables)
    rendered = render_composition(worker, master, same.value, context, plan)
    spec, master_spec = rendered.spec, rendered.master_spec if kind.is_distributed else None
    compliance: tuple[RunnableIssue, ...] = ()
    origins: Mapping[tuple[Replica, Path], FieldRules | AttributeDefault] = {}
    if not policy.empty:
        outcome = _apply_policy(org, view, policy, rendered, same.value, master, context, cache, kind)
        spec, master_spec, origins = outcome.spec, outcome.master_spec, outcome.origins
        if not kind.is_distributed:
            master_spec = None
        compliance = tuple(
            # policy/check.py words every compliance issue from its field (``compute.gpuDevicesRequest is 8,
            # above ...``): the sentence names it.
            RunnableIssue(i.replica, i.path, i.message, i.rule, i.source, names_field=True)
            for i in outcome.issues
        )
    warnings = _warnings(template, variables, same, worker, master, rendered.names)
    runnable = check(spec, master_spec, not same.value, plan, warnings, kind)
    compliance += tuple(asset_support_issues(org, template, kind, spec))
    if compliance:
        runnable = Runnable(runnable.issues + compliance, runnable.warnings)
    manifests, refused = cluster_outcome(
        spec,
        master_spec,
        same.value,
        template_name=template.name if template is not None else None,
        workload_name=submission.name if submission is not None else None,
        project=view.project,
        settings=org.settings_of(view)[0],
        known=runnable.issues,
        kind=kind,
    )
    if refused:
        runnable = Runnable(runnable.issues + refused, runnable.warnings)
    return Composition(
        template,
        view,
        same.value,
        worker,
        worker if same.value else master,
        spec,
        master_spec,
        runnable,
        context,
        policy,
        origins,
        manifests,
        kind,
        () if kind is DISTRIBUTED else not_applied(org, template, view, kind, submission),
    )


def _apply_policy(
    org: Org,
    view: View,
    policy: EffectivePolicy,
    rendered: Rendered,
    same: bool,
    master: MergeResult | None,
    context: Mapping[str, Any],
    cache: MergeCache | None,
    kind: WorkloadKind,
) -> PolicyOutcome:
    """The policy step (POLICY.md): the policy side is the shared merge of the scope defaults and imposed
    assets, rendered with the same context (a value that does not render there stays as written)."""
    from template_engine.policy.apply import apply_policy

    plan = kind.plan()
    worker_side = _policy_side(_defaults_merge(org, view, False, cache, kind), context, plan)
    master_side = None
    if not same and master is not None:
        master_side = _policy_side(_defaults_merge(org, view, True, cache, kind), context, plan)
    protected: dict[Replica, Protected] = {kind.primary: imposed_items(org, view, False, kind)}
    if not same:
        protected["master"] = imposed_items(org, view, True, kind)
    return apply_policy(
        policy,
        plan,
        rendered.spec,
        worker_side,
        rendered.master_spec if kind.is_distributed else None,
        master_side,
        same or not kind.is_distributed,
        frozenset(WORKER_ONLY_FIELDS),
        protected,
    )


def _policy_side(merged: MergeResult, context: Mapping[str, Any], plan: PlanNode) -> dict[str, Any]:
    final, _problems = render_final(merged.spec, context, merged.locate, "policy side", plan)
    return final


def _defaults_merge(
    org: Org, view: View, master: bool, cache: MergeCache | None, kind: WorkloadKind = DISTRIBUTED
) -> MergeResult:
    """The merge of the policy side (scope defaults and imposed assets), shared through ``cache``."""
    if cache is None:
        return merge_layers(kind.plan(), policy_side_layers(org, view, master, kind))
    found = cache.get((view, master, kind.name))
    if found is None:
        layers = policy_side_layers(org, view, master, kind)
        start = _department_prefix(org, view, master, cache, layers, kind)
        found = cache[(view, master, kind.name)] = merge_layers(kind.plan(), layers, start)
    return found


def _department_prefix(
    org: Org, view: View, master: bool, cache: MergeCache, layers: list[Layer], kind: WorkloadKind
) -> MergeResult | None:
    """The shared merge of a project's department (its policy side, through ``cache``) when its layers are
    the first of the project's ``layers``, which then hold the department's own ``Layer`` objects (as
    ``merge_layers(..., start=)`` asks); else ``None``.

    Every project of a department sees the system's and the department's defaults first (POLICY.md, the
    layer table), so an org of many small projects merges that chain once per department, not once per
    project.  Only layers made from the same written spec (the same objects) are taken as the same; a
    department whose policy imposes assets (layers of their own, made anew for each view) shares nothing,
    and neither does one whose own composition fails: the project's merge is then made whole, as before.
    """
    if view.project is None or view.department is None:
        return None
    try:
        parent = _defaults_merge(org, replace(view, project=None), master, cache, kind)
    except TemplateEngineError:
        return None
    shared = parent.layers
    if not shared or len(shared) > len(layers) or not all(map(_same_layer, shared, layers)):
        return None
    layers[: len(shared)] = shared
    return parent


def _same_layer(a: Layer, b: Layer) -> bool:
    """Two layers of the same written spec: the same objects, from the same place."""
    return a.spec is b.spec and a.lines is b.lines and (a.file, a.label, a.root) == (b.file, b.label, b.root)


def _master_merge(
    org: Org,
    template: Template | None,
    view: View,
    submission: Submission | None,
    cache: MergeCache | None,
    kind: WorkloadKind,
) -> MergeResult | None:
    """The master merged on its own; ``None`` when nothing gives it a spec (it runs workers only)."""
    if not has_own_master(template, submission):
        return None
    plan = kind.plan()  # the master's fields are the workers' but WORKER_ONLY_FIELDS: the same plan
    if cache is None:
        master = merge_layers(plan, master_layers(org, template, view, submission, kind=kind))
    else:
        defaults = _defaults_merge(org, view, True, cache, kind)
        layers = master_layers(org, template, view, submission, defaults.layers, kind)
        master = merge_layers(plan, layers, defaults)
    problems = [
        Problem(
            f"a master spec cannot set the worker-only field {name!r}",
            (name,),
            master.locate((name,)),
            "worker-only fields in the worker spec",
        )
        for name in WORKER_ONLY_FIELDS
        if name in master.spec
    ]
    if problems:
        raise CompositionError(problems)
    return master


def composition_context(
    view: View, template: Template | None, variables: Mapping[str, str]
) -> dict[str, Any]:
    """The names expressions see: the variables, then ``department``, ``project`` and ``template`` (each
    ``{name}``) where the composition has one; a variable that would shadow one of them is a problem."""
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
    if view.cluster is not None:
        context["cluster"] = {"name": view.cluster}
    if view.department is not None:
        context["department"] = {"name": view.department}
    if view.project is not None:
        context["project"] = {"name": view.project}
    if template is not None:
        context["template"] = {"name": template.name}
    return context


# -- warnings -----------------------------------------------------------------------------------------------


def _warnings(
    template: Template | None,
    variables: Mapping[str, str],
    same: SameAsWorker,
    worker: MergeResult,
    master: MergeResult | None,
    names_used: frozenset[str],
) -> tuple[CompositionWarning, ...]:
    """The composition's warnings: the merges', a master section or a department default that decides the
    topology, and variables no expression uses.  ``master`` is the master merged on its own, if any."""
    out = list(worker.warnings)
    if master is not None:  # a merge's warnings say worker: these are the master's
        out += [replace(w, replica="master") for w in master.warnings]
    if same.value and template is not None and template.doc.master is not None:
        by = same.defaults.source.file if same.defaults is not None else "default"
        out.append(
            CompositionWarning(
                WarningKind.MASTER_SECTION_IGNORED,
                "master",
                ("master",),
                f"the template's master section is ignored: masterSpecSameAsWorker is true ({by})",
            )
        )
    out += _workers_only_by_department(template, same, master)
    out += [unused_variable(name) for name in sorted(set(variables) - names_used)]
    return tuple(out)


def unused_variable(name: str) -> CompositionWarning:
    """The warning about a variable that no value uses."""
    return CompositionWarning(
        WarningKind.UNUSED_VARIABLE,
        "worker",
        (),
        f"variable {name!r} is not used by any value (a typo?)",
        variable=name,
    )


def _workers_only_by_department(
    template: Template | None, same: SameAsWorker, master: MergeResult | None
) -> list[CompositionWarning]:
    """A warning when a department's or the system's defaults alone make ``template`` workers only.

    ``masterSpecSameAsWorker: false`` in department (or system) defaults turns every template without a
    master section (system templates included) into workers only.  No warning when the template, a
    project's defaults or the submission decide the flag, or when there is a master.
    """
    entry = same.decided_by
    if template is None or same.value or master is not None or not isinstance(entry, Defaults):
        return []
    if entry.scope.type == "project":
        return []
    line, column = entry.source.lines.get(("masterSpecSameAsWorker",), (None, None))
    return [
        CompositionWarning(
            WarningKind.WORKERS_ONLY_BY_DEPARTMENT,
            "master",
            ("masterSpecSameAsWorker",),
            f"set to false by {scope_label(entry.scope)}: template {template.name!r} has no master section, "
            "so it runs workers only (decide in the template: masterSpecSameAsWorker or a master section)",
            Location(entry.source.file, line, column, scope_label(entry.scope)),
        )
    ]
