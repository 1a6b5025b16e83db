"""The explain view as plain values: a composition in, a tree of what each field holds and why out.

Pure: :func:`explain_page` reads a :class:`~template_engine.compose.Composition` (and, for a report, the
pair's diff) and returns a :class:`PageView`; nothing here knows about HTML, files or the service.  The
templates of :mod:`template_engine.views.html` render it; the service can render the same values.

Every value of ``combinedSpec`` and ``combinedMasterSpec`` becomes a :class:`NodeView` with the layer that set
it (of the legend's kind its layer carries: ``Location.kind``), the values of lower layers it overrode, the
policy rules that govern it, and the runnable and compliance issues, warnings and diff lines about it.  Items
excluded by a layer and fields an issue names but no layer set get nodes of their own.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from template_engine.cluster.mapping import Derived, SettingSource, Source, SpecSource
from template_engine.compose import Composition
from template_engine.diff import PairDiff
from template_engine.errors import CompositionWarning, Location, Problem
from template_engine.explain import Entry, explain, not_applied
from template_engine.kinds import DISTRIBUTED, WorkloadKind
from template_engine.merge.engine import MergeResult
from template_engine.merge.plan import SPEC_PLAN, PlanNode
from template_engine.org import Template, View
from template_engine.paths import Match, Path, Segment, format_path
from template_engine.runnable import RunnableIssue
from template_engine.views.manifests import ManifestsView, ValueLabel, manifests_view
from template_engine.walk import items

__all__ = [
    "KINDS",
    "SOURCE_KINDS",
    "DiffRow",
    "DiffView",
    "IndexRow",
    "IndexView",
    "IssueView",
    "LayerKind",
    "NodeView",
    "Overridden",
    "PageView",
    "PlaceName",
    "Provenance",
    "ReplicaView",
    "diff_view",
    "explain_page",
    "failed_page",
    "file_place",
    "index_row",
    "seen_from",
]

#: The longest value written inline; the hover text and the tree keep the rest behind an ellipsis.
MAX_VALUE = 400

#: How a page names the place a value is written.  Offline that is ``file:line``; the service names the
#: stored document and its version instead (a database row has no file and no lines).
PlaceName = Callable[[Location], str]


def file_place(location: Location) -> str:
    """``departments/research/defaults.yaml:12``: the place of a value read from a templates folder."""
    return location.place()


@dataclass(frozen=True, slots=True)
class LayerKind:
    """A kind of layer: its key (a CSS class suffix), the text label shown next to each value, the legend."""

    key: str
    label: str
    description: str
    #: Where a templates folder keeps this layer (the static report shows it; the service's documents are
    #: database rows, so its pages leave it out).
    where: str = ""


#: The kinds of layer in precedence order (lowest first), then the values no layer wrote.
KINDS: tuple[LayerKind, ...] = (
    LayerKind("system", "system", "system defaults", "system/defaults.yaml"),
    LayerKind("cluster", "cluster", "cluster defaults", "clusters/C/defaults.yaml"),
    LayerKind("department", "department", "department defaults", "departments/D/defaults.yaml"),
    LayerKind("project", "project", "project defaults", "projects/P/defaults.yaml"),
    LayerKind("imposed", "imposed", "data source asset imposed by a policy", "imposedAssets"),
    LayerKind(
        "environment",
        "environment",
        "environment asset",
        "[departments/D/ or projects/P/]assets/environments/",
    ),
    LayerKind("compute", "compute", "compute asset", "[departments/D/ or projects/P/]assets/computes/"),
    LayerKind(
        "datasource", "data source", "data source asset", "[departments/D/ or projects/P/]assets/datasources/"
    ),
    LayerKind("template", "template", "the template's own spec, master or containerPath override"),
    LayerKind("submission", "submission", "a workload submission (service only)"),
    LayerKind("policy", "defaultFrom", "set by a policy's defaultFrom rule or attribute default"),
    LayerKind("none", "no layer", "no layer is known to have set it"),
)
#: The kinds of source a value of the manifests has beyond the layers (docs/cluster.md, "Sources").
SOURCE_KINDS: tuple[LayerKind, ...] = (
    LayerKind("setting", "cluster setting", "a cluster setting, or its default", "cluster.yaml"),
    LayerKind("derived", "derived", "decided by the mapping (a generated name, an operator's default)"),
)
_KIND_BY_KEY = {kind.key: kind for kind in (*KINDS, *SOURCE_KINDS)}


def _text(value: Any) -> str:
    """A value as compact JSON (strings quoted), cut at :data:`MAX_VALUE` characters."""
    text = json.dumps(value, sort_keys=True, ensure_ascii=False)
    return text if len(text) <= MAX_VALUE else text[: MAX_VALUE - 1] + "…"


@dataclass(frozen=True, slots=True)
class Provenance:
    """The layer that set (or excluded) a value and where it is written."""

    kind: str
    layer: str
    file: str | None = None
    line: int | None = None
    #: The place as a :data:`PlaceName` other than :func:`file_place` named it (the service's documents).
    named: str | None = None

    @property
    def place(self) -> str:
        if self.named is not None:
            return self.named
        if self.file is None:
            return ""
        return f"{self.file}:{self.line}" if self.line is not None else self.file

    @property
    def kind_label(self) -> str:
        return _KIND_BY_KEY[self.kind].label

    @property
    def text(self) -> str:
        """``department research defaults, departments/research/defaults.yaml:12``."""
        return f"{self.layer}, {self.place}" if self.place else self.layer

    @staticmethod
    def of(location: Location | None, name: PlaceName = file_place) -> Provenance | None:
        if location is None:
            return None
        layer = location.layer or "unknown layer"
        named = None if name is file_place else name(location)
        kind = location.kind if location.kind in _KIND_BY_KEY else "none"
        return Provenance(kind, layer, location.file, location.line, named)


@dataclass(frozen=True, slots=True)
class Overridden:
    """A value a lower layer gave, which the value shown replaced."""

    value: str
    origin: Provenance


@dataclass(frozen=True, slots=True)
class IssueView:
    """A runnable or compliance issue, and the node of the tree that marks it (its ``id``)."""

    replica: str
    field: str
    message: str
    rule: str | None
    source: str | None
    anchor: str | None

    @property
    def compliance(self) -> bool:
        return self.rule is not None


NodeShape = Literal["mapping", "list", "item", "value", "excluded", "missing"]


@dataclass(slots=True)
class NodeView:
    """One place of a combined spec: a mapping, a keyed list, an item, a value, an excluded item, or a field
    that an issue names but no layer set (``missing``)."""

    segment: Segment
    path: Path
    shape: NodeShape
    value: str | None = None
    action: str | None = None
    origin: Provenance | None = None
    overridden: list[Overridden] = field(default_factory=list)
    #: An item excluded by a lower layer and given again above it: who excluded it.
    excluded_before: Provenance | None = None
    rules: list[str] = field(default_factory=list)
    issues: list[IssueView] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    changes: list[str] = field(default_factory=list)
    children: list[NodeView] = field(default_factory=list)
    id: str = ""

    @property
    def name(self) -> str:
        """``image``, ``[name=TZ]``, ``[0]``."""
        if isinstance(self.segment, Match):
            return str(self.segment)
        if isinstance(self.segment, int):
            return f"[{self.segment}]"
        return self.segment

    @property
    def field(self) -> str:
        return format_path(self.path)

    @property
    def kind(self) -> str:
        return self.origin.kind if self.origin is not None else "none"

    @property
    def kind_label(self) -> str:
        return _KIND_BY_KEY[self.kind].label

    @property
    def container(self) -> bool:
        return self.shape in ("mapping", "list", "item") and bool(self.children)

    @property
    def details(self) -> list[str]:
        """The provenance lines, as the hover text and the focus panel show them."""
        lines = []
        if self.shape == "excluded":
            lines.append(f"excluded by {self.origin.text}" if self.origin else "excluded")
        elif self.shape == "missing":
            lines.append("not set by any layer")
        elif self.origin is not None:
            verb = {"added": "item added by", "derived": "same as worker; set by"}.get(
                self.action or "", "set by"
            )
            lines.append(f"{verb} {self.origin.text}")
        if self.excluded_before is not None:
            lines.append(f"excluded before by {self.excluded_before.text}, then given again")
        verb = "removed" if self.shape == "excluded" else "overrode"
        lines += [f"{verb} {o.value} ({o.origin.text})" for o in self.overridden]
        lines += [f"governed by {rule}" for rule in self.rules]
        lines += [f"{'compliance' if i.compliance else 'runnable'} issue: {i.message}" for i in self.issues]
        lines += [f"warning: {w}" for w in self.warnings]
        lines += [f"changed: {c}" for c in self.changes]
        return lines

    @property
    def tooltip(self) -> str:
        return f"{self.field}: " + "; ".join(self.details)

    def walk(self) -> Iterable[NodeView]:
        yield self
        for child in self.children:
            yield from child.walk()


@dataclass(frozen=True, slots=True)
class ReplicaView:
    """``combinedSpec`` (worker) or ``combinedMasterSpec`` (master) as a tree."""

    replica: str
    section: str
    #: ``False`` when the template runs workers only (no ``combinedMasterSpec``).
    present: bool
    note: str
    nodes: tuple[NodeView, ...]


@dataclass(frozen=True, slots=True)
class DiffRow:
    field: str
    change: str
    old: str | None
    new: str | None
    text: str


@dataclass(frozen=True, slots=True)
class DiffView:
    """A pair's changes against another version: ``changed``, ``appeared`` or ``disappeared``."""

    status: str
    against: str
    rows: tuple[DiffRow, ...]
    old_errors: tuple[str, ...] = ()
    new_errors: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class PageView:
    """Everything the explain page of one (view, template) pair shows."""

    template: str
    scope: str
    seen_from: str
    pair_id: str | None
    composed: bool
    runnable: bool
    issues: tuple[IssueView, ...]
    warnings: tuple[str, ...]
    replicas: tuple[ReplicaView, ...]
    #: The problems that stopped the composition (``composed`` is false).
    problems: tuple[str, ...] = ()
    diff: DiffView | None = None
    description: str | None = None
    #: The objects the cluster runs, for the manifests tab (``None``: the composition has none).
    manifests: ManifestsView | None = None
    #: The template's workload kind when it is not a distributed training (``training``...; ``None``: one).
    kind: str | None = None
    #: What the layers give that the kind lacks (``Composition.not_applied``), each as ``explain`` says it.
    not_applied: tuple[str, ...] = ()

    @property
    def title(self) -> str:
        return f"{self.template} as seen from {self.seen_from}"

    @property
    def status(self) -> str:
        if not self.composed:
            return "fails to compose"
        return "runnable" if self.runnable else "not runnable"

    @property
    def compliance_issues(self) -> int:
        return sum(issue.compliance for issue in self.issues)

    @property
    def legend(self) -> tuple[tuple[LayerKind, bool], ...]:
        """Every kind, and whether some value of this page has it."""
        used = {node.kind for replica in self.replicas for top in replica.nodes for node in top.walk()}
        return tuple((kind, kind.key in used) for kind in KINDS)

    @property
    def manifests_legend(self) -> tuple[LayerKind, ...]:
        """The kinds of source the manifests tab shows: the cluster's own, then the layers' in their order."""
        used = self.manifests.used_kinds() if self.manifests is not None else set()
        return tuple(kind for kind in (*SOURCE_KINDS, *KINDS) if kind.key in used)


def seen_from(view: View) -> str:
    """``project vision (department research)``, ``department research``, ``the system scope``; in an org
    that names clusters, ``project vision (department research, cluster east)``, ``department research
    (cluster east)``, ``cluster east``."""
    cluster = f"cluster {view.cluster}" if view.cluster is not None else None
    if view.project is not None:
        within = ", ".join(x for x in (f"department {view.department}", cluster) if x)
        return f"project {view.project} ({within})"
    if view.department is not None:
        return f"department {view.department}" + (f" ({cluster})" if cluster else "")
    return cluster or "the system scope"


# -- building the tree --------------------------------------------------------------------------------------


def _build(segment: Segment, path: Path, value: Any, node: PlanNode, item: bool) -> NodeView:
    if isinstance(value, Mapping) and not node.whole:
        plan = node  # an item's fields are children of the list's node
        children = [_build(k, (*path, k), v, plan.child(k), False) for k, v in value.items()]
        return NodeView(segment, path, "item" if item else "mapping", children=children)
    if isinstance(value, list) and node.key is not None and not node.whole:
        children = [_build(seg, (*path, seg), v, node, True) for seg, v in items(value, node)]
        return NodeView(segment, path, "list", children=children)
    return NodeView(segment, path, "value", value=_text(value))


def _find(nodes: list[NodeView], path: Path) -> NodeView | None:
    found: NodeView | None = None
    for segment in path:
        found = next((n for n in nodes if n.segment == segment), None)
        if found is None:
            return None
        nodes = found.children
    return found


def _ensure(nodes: list[NodeView], path: Path, shape: NodeShape) -> NodeView:
    """The node at ``path``, made (with its missing parents) when the spec has none."""
    here: Path = ()
    found: NodeView | None = None
    for index, segment in enumerate(path):
        here = (*here, segment)
        found = next((n for n in nodes if n.segment == segment), None)
        if found is None:
            last = index == len(path) - 1
            if last:
                made: NodeShape = shape
            elif isinstance(path[index + 1], Match):
                made = "list"
            else:
                made = "item" if isinstance(segment, Match) else "mapping"
            found = NodeView(segment, here, made)
            after = [
                i for i, n in enumerate(nodes) if isinstance(segment, str) and _after(n.segment, segment)
            ]
            nodes.insert(after[0] if after else len(nodes), found)
        nodes = found.children
    assert found is not None
    return found


def _after(segment: Segment, name: str) -> bool:
    """Whether a mapping field ``segment`` sorts after ``name`` (combined specs have their keys sorted)."""
    return isinstance(segment, str) and segment > name


def _below(entry: Entry, name: PlaceName = file_place) -> list[Overridden]:
    """The values lower layers wrote at the entry's path, as explain found them (:func:`replaced_below`:
    the CLI's ``explain`` says the same)."""
    out = []
    for replaced in entry.replaced:
        origin = Provenance.of(replaced.location, name)
        assert origin is not None
        out.append(Overridden(_text(replaced.value), origin))
    return out


class _Tree:
    """The nodes of one replica and the provenance to hang on them."""

    def __init__(
        self,
        replica: str,
        spec: Mapping[str, Any],
        result: MergeResult | None,
        name: PlaceName = file_place,
        plan: PlanNode = SPEC_PLAN,
    ) -> None:
        self.replica = replica
        self.result = result
        self.name = name
        self.nodes: list[NodeView] = _build("", (), spec, plan, False).children

    def entry(self, entry: Entry) -> None:
        if entry.action == "excluded":
            node = _find(self.nodes, entry.path)
            origin = Provenance.of(entry.location, self.name)
            if node is not None and node.shape != "excluded":  # excluded below, then given again
                node.excluded_before = origin
                return
            node = _ensure(self.nodes, entry.path, "excluded")
            node.shape, node.action, node.origin = "excluded", "excluded", origin
            node.overridden = _below(entry, self.name)
            if node.overridden:
                node.value = node.overridden[-1].value
            return
        node = _find(self.nodes, entry.path)
        if node is None:  # an ``unset`` entry, or a value pruned from the output
            return
        node.action = entry.action
        node.origin = Provenance.of(entry.location, self.name)
        node.rules = list(entry.rules)
        is_policy = node.origin is not None and node.origin.kind == "policy"
        if node.shape == "value" and not is_policy:
            node.overridden = _below(entry, self.name)

    def issue(self, issue: RunnableIssue) -> NodeView:
        node = _find(self.nodes, issue.field)
        if node is None and issue.field:
            node = _ensure(self.nodes, issue.field, "missing")
        if node is None:  # about the whole spec: the first node marks it
            node = self.nodes[0] if self.nodes else _ensure(self.nodes, ("(spec)",), "missing")
        return node

    def number(self, prefix: str) -> None:
        count = 0
        for top in self.nodes:
            for node in top.walk():
                count += 1
                node.id = f"{prefix}{count}"


def _issue_view(issue: RunnableIssue, anchor: str | None, name: PlaceName = file_place) -> IssueView:
    source = None
    if issue.source is not None:
        place = name(issue.source)
        source = f"{place}, {issue.source.layer}" if issue.source.layer else place
    return IssueView(issue.replica, format_path(issue.field), issue.message, issue.rule, source, anchor)


def _warning_text(warning: CompositionWarning) -> str:
    return f"{warning.replica} {warning.one_line()}"


def _changes_by_field(diff: PairDiff | None) -> dict[tuple[str, Path], list[str]]:
    out: dict[tuple[str, Path], list[str]] = {}
    for change in diff.changes if diff is not None else ():
        if change.section not in ("combinedSpec", "combinedMasterSpec"):
            continue
        replica = "worker" if change.section == "combinedSpec" else "master"
        out.setdefault((replica, change.path), []).append(change.render())
        if change.also_master:
            out.setdefault(("master", change.path), []).append(change.render())
    return out


def explain_page(
    composition: Composition,
    *,
    pair_id: str | None = None,
    diff: PairDiff | None = None,
    against: str | None = None,
    name: PlaceName = file_place,
) -> PageView:
    """The explain view of one composition; ``diff`` (against ``against``, another version) adds changes;
    ``name`` names the place of each value (the service: a stored document and its version)."""
    entries = explain(composition)
    runnable = composition.runnable
    plan = composition.kind.plan()
    trees: dict[str, _Tree] = {
        "worker": _Tree("worker", composition.combined_spec, composition.worker, name, plan)
    }
    if composition.combined_master_spec is not None:
        trees["master"] = _Tree("master", composition.combined_master_spec, composition.master, name, plan)
    for entry in entries:
        tree = trees.get(entry.replica)
        if tree is not None:
            tree.entry(entry)
    marked: list[tuple[RunnableIssue, NodeView | None]] = []
    for issue in runnable.issues:
        tree = trees.get(issue.replica)
        marked.append((issue, tree.issue(issue) if tree is not None else None))
    for warning in runnable.warnings:
        tree = trees.get(warning.replica)
        node = _find(tree.nodes, warning.field) if tree is not None and warning.field else None
        if node is not None:
            node.warnings.append(warning.render())
    for (replica, path), texts in _changes_by_field(diff).items():
        tree = trees.get(replica)
        node = _find(tree.nodes, path) if tree is not None and path else None
        if node is not None:
            node.changes += texts
    for replica, tree in trees.items():
        tree.number("w" if replica == "worker" else "m")
    issues = []
    for issue, node in marked:
        view = _issue_view(issue, node.id if node is not None else None, name)
        if node is not None:
            node.issues.append(view)
        issues.append(view)
    template = composition.template
    return PageView(
        template=template.name if template is not None else "(submission)",
        scope=str(template.scope) if template is not None else "",
        seen_from=seen_from(composition.view),
        pair_id=pair_id,
        composed=True,
        runnable=runnable.is_runnable,
        issues=tuple(issues),
        warnings=tuple(_warning_text(w) for w in runnable.warnings),
        replicas=_replicas(composition, trees),
        diff=diff_view(diff, against or "") if diff is not None else None,
        description=template.doc.meta.description if template is not None else None,
        manifests=_manifests(composition, trees, name),
        kind=_kind_name(composition.kind),
        not_applied=tuple(
            f"{gone.found.field}: {gone.found.message()} ({gone.found.location.with_layer()})"
            for gone in not_applied(composition)
        ),
    )


def _kind_name(kind: WorkloadKind) -> str | None:
    """A page's kind: ``None`` for a distributed training (its pages read as before the kinds)."""
    return None if kind is DISTRIBUTED else kind.name


_SECTIONS = {"worker": "combinedSpec", "master": "combinedMasterSpec"}


def _spec_origin(
    composition: Composition, trees: Mapping[str, _Tree], source: SpecSource, name: PlaceName
) -> Provenance | None:
    """The layer that set a spec field the objects read: the node of the effective spec's tree that shows it
    (or its nearest parent: a value replaced whole), as explain labels it (a ``defaultFrom`` rule
    included); else where the replica's merge located it."""
    tree = trees.get(source.replica)
    for end in range(len(source.path), 0, -1):
        node = _find(tree.nodes, source.path[:end]) if tree is not None else None
        if node is not None and node.origin is not None and node.shape != "excluded":
            return node.origin
    result = composition.worker if source.replica == "worker" else composition.master
    return Provenance.of(result.locate(source.path), name) if result is not None else None


def _manifests(composition: Composition, trees: Mapping[str, _Tree], name: PlaceName) -> ManifestsView | None:
    manifests = composition.manifests
    if manifests is None:
        return None

    def label(source: Source | None) -> ValueLabel:
        if isinstance(source, SettingSource):
            return ValueLabel("setting", "cluster setting", f"cluster setting {source.key}")
        if isinstance(source, Derived):
            return ValueLabel("derived", "derived", f"derived: {source.reason}")
        if source is None:
            return ValueLabel("none", "no layer", "written by the mapping for every object of this kind")
        field = f"{_SECTIONS[source.replica]}.{format_path(source.path)}"
        origin = _spec_origin(composition, trees, source, name)
        if origin is None:
            return ValueLabel("none", "no layer", f"from {field}; no layer is known to have set it")
        return ValueLabel(origin.kind, origin.kind_label, f"from {field}, set by {origin.text}")

    def field_text(issue: RunnableIssue) -> str:
        return f"{_SECTIONS[issue.replica]}.{format_path(issue.field)}" if issue.field else ""

    return manifests_view(
        manifests, composition.runnable.issues, manifests.warnings, label, _text, field_text
    )


def _replicas(composition: Composition, trees: Mapping[str, _Tree]) -> tuple[ReplicaView, ...]:
    worker = ReplicaView(
        "worker", "combinedSpec", True, "the spec of every worker", tuple(trees["worker"].nodes)
    )
    if "master" not in trees:
        note = "none: masterSpecSameAsWorker is false and nothing gives the master a spec (workers only)"
        return worker, ReplicaView("master", "combinedMasterSpec", False, note, ())
    note = (
        "the same as the worker (masterSpecSameAsWorker: true)"
        if composition.master_same_as_worker
        else "the master, composed on its own"
    )
    return worker, ReplicaView("master", "combinedMasterSpec", True, note, tuple(trees["master"].nodes))


def failed_page(
    template: Template,
    view: View,
    problems: Sequence[Problem],
    *,
    pair_id: str | None = None,
    diff: PairDiff | None = None,
    against: str | None = None,
) -> PageView:
    """The page of a pair that does not compose: the problems that stopped it."""
    return PageView(
        template=template.name,
        scope=str(template.scope),
        seen_from=seen_from(view),
        pair_id=pair_id,
        composed=False,
        runnable=False,
        issues=(),
        warnings=(),
        replicas=(),
        problems=tuple(p.one_line() for p in problems),
        diff=diff_view(diff, against or "") if diff is not None else None,
        description=template.doc.meta.description,
        kind=_kind_name(template.kind),
    )


def diff_view(diff: PairDiff, against: str) -> DiffView:
    """A pair's diff as rows: the field, the kind of change, the old and new values and the sentence."""
    rows = []
    for change in diff.changes:
        old = None if change.kind == "added" else _text(change.old)
        new = None if change.kind == "removed" else _text(change.new)
        rows.append(DiffRow(change.field, change.kind, old, new, change.render()))
    old_errors, new_errors = diff.error_lines()
    return DiffView(diff.status, against, tuple(rows), tuple(old_errors), tuple(new_errors))


# -- the report's index -------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class IndexRow:
    """One pair of the report's index: its status, and the link to its page (``None``: it has none)."""

    pair_id: str
    template: str
    scope: str
    seen_from: str
    status: str
    runnable: bool
    compliance_issues: int
    issues: int
    first_issue: str | None
    href: str | None
    #: With ``--against``: ``changed``, ``appeared`` or ``disappeared`` (``None``: unchanged).
    change: str | None = None
    #: The template's workload kind when it is not a distributed training (:attr:`PageView.kind`).
    kind: str | None = None


def index_row(page: PageView, href: str | None) -> IndexRow:
    first = page.issues[0] if page.issues else None
    first_text = f"{first.replica} {first.field}: {first.message}" if first is not None else None
    if not page.composed and page.problems:
        first_text = page.problems[0]
    return IndexRow(
        page.pair_id or page.template,
        page.template,
        page.scope,
        page.seen_from,
        page.status,
        page.runnable,
        page.compliance_issues,
        len(page.issues),
        first_text,
        href,
        page.diff.status if page.diff is not None else None,
        page.kind,
    )


@dataclass(frozen=True, slots=True)
class IndexView:
    """The report's index: every pair, the files that could not be read, and what ``--against`` compared."""

    root: str
    rows: tuple[IndexRow, ...]
    invalid: tuple[str, ...] = ()
    against: str | None = None
    #: Pairs of ``--against`` that are gone, with their diff.
    gone: tuple[IndexRow, ...] = ()
    #: Each project's "Where kinds differ" page: the project, its link and how many fields differ.
    kinds: tuple[tuple[str, str, int], ...] = ()

    @property
    def runnable(self) -> int:
        return sum(row.runnable for row in self.rows)

    @property
    def not_runnable(self) -> int:
        """The pairs that composed with issues (those that fail to compose are :attr:`failed`)."""
        return sum(row.status == "not runnable" for row in self.rows)

    @property
    def failed(self) -> int:
        return sum(row.status == "fails to compose" for row in self.rows)

    def summary(self) -> str:
        """``15 runnable, 3 not runnable`` (``, 1 fails to compose`` when a pair does): the counts the index
        and ``report``'s last line give, adding up to the pairs."""
        text = f"{self.runnable} runnable, {self.not_runnable} not runnable"
        failed = self.failed
        return text + (f", {failed} {'fails' if failed == 1 else 'fail'} to compose" if failed else "")

    @property
    def compliant(self) -> int:
        return sum(row.status != "fails to compose" and not row.compliance_issues for row in self.rows)

    @property
    def changed(self) -> int:
        return sum(row.change is not None for row in self.rows) + len(self.gone)
