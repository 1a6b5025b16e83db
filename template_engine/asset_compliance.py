"""Whether an asset may be used in a view: its values against the view's effective policy, for one replica.

Run:ai's asset lists answer ``complyToProject`` with each entry's ``compliance`` (``ComplianceInfo``:
``imposed``, ``compliance``, ``reason``), which its pickers read to offer only what a project may use.  Here
the asset is what it is in a composition, a request-side layer (DESIGN.md: a template's assets) above the
view's policy side (the scope defaults and imposed data sources, :data:`~template_engine.layers.POLICY_SIDE`),
and it is checked as a composition is checked (``defaultFrom``, then every rule:
:mod:`template_engine.policy.check`).  An issue counts against the asset when the asset's layer set or
excluded the value it is about (a value a rule refuses, a locked item it changes, an item it adds where
``canAdd`` is false); what the asset does not set (a required image a compute asset cannot give) is the
template's or the submission's business.  An asset the view may not use at all (it belongs to another
department or project), one whose expressions do not render there, and a view whose policies are broken
are not compliant either, with those problems as the reasons.

Pure: an org, an asset and a view in, an :class:`AssetCompliance` out.
"""

from __future__ import annotations

from dataclasses import dataclass

from template_engine.compose import composition_context
from template_engine.errors import Problem, TemplateEngineError
from template_engine.layers import asset_layer, effective_policy, imposed_items, policy_side_layers
from template_engine.merge.engine import MergeResult, merge_layers
from template_engine.merge.plan import SPEC_PLAN
from template_engine.org import Asset, Org, View, out_of_scope
from template_engine.paths import Path
from template_engine.policy.check import apply_default_from, check_rules
from template_engine.policy.vocabulary import Replica
from template_engine.render import render_final

__all__ = ["AssetCompliance", "AssetIssue", "asset_compliance"]


@dataclass(frozen=True, slots=True)
class AssetIssue:
    """Why an asset does not comply: the field (a spec path; a policy's own path for a broken policy), the
    sentence, and the broken rule (Run:ai's ``PolicyRuleEnum``) when it is a rule's."""

    field: Path
    message: str
    rule: str | None = None


@dataclass(frozen=True, slots=True)
class AssetCompliance:
    """One asset seen from one view for one replica: imposed by the view's policies, and why it does not
    comply (it complies when there is no issue)."""

    imposed: bool
    issues: tuple[AssetIssue, ...] = ()

    @property
    def complies(self) -> bool:
        return not self.issues


def asset_compliance(org: Org, asset: Asset, view: View, replica: Replica) -> AssetCompliance:
    """Whether ``asset`` complies with the effective policy of ``view`` for ``replica``'s spec."""
    chain = view.chain()
    problem = out_of_scope(asset, f"a workload in {chain[-1]}", chain, (), None)
    if problem is not None:
        return AssetCompliance(False, (AssetIssue((), problem.message),))
    try:
        return _checked(org, asset, view, replica)
    except TemplateEngineError as error:
        return AssetCompliance(False, tuple(_issue(p) for p in error.problems))


def _issue(problem: Problem) -> AssetIssue:
    return AssetIssue(problem.path, problem.message)


def _checked(org: Org, asset: Asset, view: View, replica: Replica) -> AssetCompliance:
    policy = effective_policy(org, view)
    imposed = asset.kind == "datasource" and any(i.name == asset.name for i in policy.imposed_on(replica))
    rules = policy.for_replica(replica)
    master = replica == "master"
    protected = imposed_items(org, view, master)
    if not rules and not protected:
        return AssetCompliance(imposed)
    side = merge_layers(SPEC_PLAN, policy_side_layers(org, view, master))
    merged = merge_layers(SPEC_PLAN, [*side.layers, asset_layer(asset)], side)
    mine = len(merged.layers) - 1
    context = composition_context(view, None, {})
    spec, problems = render_final(merged.spec, context, merged.locate, "asset", SPEC_PLAN)
    own = [p for p in problems if _set_by(merged, p.path, mine)]
    if own:
        return AssetCompliance(imposed, tuple(_issue(p) for p in own))
    side_spec, _ = render_final(side.spec, context, side.locate, "policy side", SPEC_PLAN)
    spec, derived, refused = apply_default_from(spec, rules, SPEC_PLAN, replica)
    side_spec, _, _ = apply_default_from(side_spec, rules, SPEC_PLAN, replica)
    found = [*refused, *check_rules(replica, spec, side_spec, rules, SPEC_PLAN, protected, derived.keys())]
    return AssetCompliance(
        imposed,
        tuple(AssetIssue(i.path, i.message, i.rule) for i in found if _set_by(merged, i.path, mine)),
    )


def _set_by(merged: MergeResult, path: Path, layer: int) -> bool:
    """Whether layer number ``layer`` of ``merged`` set (or excluded) the value at ``path``, or something
    inside it (an item the asset changed one field of)."""
    origin = merged.origin_of(path)
    if origin is not None and origin.layer == layer:
        return True
    excluded = merged.excluded.get(path)
    if excluded is not None and excluded.layer == layer:
        return True
    size = len(path)
    return any(o.layer == layer and p[:size] == path for p, o in merged.set_by.items() if len(p) > size)
