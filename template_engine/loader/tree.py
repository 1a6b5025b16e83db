"""Read a templates folder into an :class:`~template_engine.org.Org`: the only module that reads files.

The files come from a :class:`~template_engine.loader.sources.Source` (a folder, a git revision, a folder
with one file changed, files in memory); a path is read as the folder at that path.

Layout (DESIGN.md, and :mod:`template_engine.loader.layout` for every rule): ``org.yaml``; ``system/``,
``departments/D/`` and ``projects/P/``, each with ``defaults.yaml`` and ``templates/T.yaml``;
``assets/{environments,computes,datasources}/NAME.yaml`` (the tenant's; a department's and a project's
under ``departments/D/assets/`` and ``projects/P/assets/``).  Every file is read once; a file with problems,
and an entry that breaks the layout, is recorded in ``Org.broken`` (so ``validate`` can list all of them and
a composition that needs it fails with them), never skipped silently.
"""

from __future__ import annotations

import functools
import gc
import hashlib
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path as FsPath
from typing import TYPE_CHECKING, Any, ClassVar, TypeVar, cast

from pydantic import BaseModel

from template_engine.cluster.settings import DEFAULT_SETTINGS, ClusterSettings
from template_engine.errors import InputError, Location, Problem
from template_engine.kinds import DISTRIBUTED, KIND_BY_NAME, kind_named
from template_engine.loader import sources
from template_engine.loader.kind_of import template_kind
from template_engine.loader.layout import Layout, asset_file, asset_scope, read_layout
from template_engine.loader.rules import document_rules
from template_engine.loader.validate import locate, validate
from template_engine.loader.values import MAX_VALUES, count_values
from template_engine.loader.yaml_safe import load_yaml
from template_engine.models.documents import (
    ASSET_MODELS,
    AnyTemplateDocument,
    AssetKind,
    LayerDocument,
    OrgDepartment,
    OrgDocument,
    asset_refs,
)
from template_engine.org import (
    Asset,
    ClusterEntry,
    Defaults,
    Org,
    Scope,
    Source,
    Template,
    asset_ref,
    defaults_ref,
    out_of_scope,
    policy_ref,
    template_ref,
    template_user,
)
from template_engine.paths import Path

if TYPE_CHECKING:  # policy files are read by the policy modules, imported when an org has one
    from template_engine.loader.facts import FactCache
    from template_engine.policy.document import PolicyDocument


def read_source(where: sources.SourceOrPath, rel: str) -> tuple[Source | None, list[Problem]]:
    """Read and parse one file; ``rel`` (a POSIX path in the templates folder) names it in every message."""
    text, problems = _read_text(sources.as_source(where), rel)
    if text is None:
        return None, problems
    return _parse_source(text, rel)


def _read_text(files: sources.Source, rel: str) -> tuple[str | None, list[Problem]]:
    """The text of one file, or why it has none (unreadable, not UTF-8)."""
    return _decode(files.read(rel), rel)


def _decode(raw: bytes | sources.Unreadable, rel: str) -> tuple[str | None, list[Problem]]:
    if isinstance(raw, sources.Unreadable):
        return None, [Problem(f"cannot read file: {raw.reason}", (), Location(rel), raw.expected)]
    try:
        return raw.decode("utf-8"), []
    except UnicodeDecodeError as exc:
        line = raw.count(b"\n", 0, exc.start) + 1
        column = exc.start - (raw.rfind(b"\n", 0, exc.start) + 1) + 1
        return None, [
            Problem(
                f"file is not UTF-8 text (byte 0x{raw[exc.start]:02x})",
                (),
                Location(rel, line, column),
                "a UTF-8 YAML file",
            )
        ]


def _parse_source(text: str, rel: str) -> tuple[Source | None, list[Problem]]:
    try:
        loaded = load_yaml(text, rel)
    except InputError as exc:
        return None, list(exc.problems)
    data = loaded.data if loaded.data is not None else {}
    if not isinstance(data, Mapping):
        return None, [Problem("document must be a mapping", (), Location(rel, 1, 1), "a YAML mapping")]
    return Source(rel, data, loaded.lines), []


Doc = TypeVar("Doc", LayerDocument, AnyTemplateDocument)

#: What a loader makes of one file: the document, or ``None`` and its problems.
Made = tuple[Any, list[Problem]]
#: A loader from a file's text: ``(text, rel, scope or kind)`` -> what it makes.
FromText = Callable[[str, str, Any], Made]
#: What the loaders made of each file, by (loader, file, scope or kind, git blob id): see :class:`_Reuse`;
#: with the digest of the bytes it was made from, when they were read (:func:`content_digest`).
Memo = dict[tuple[str, str, Any, str], tuple[Made, str | None]]


class _Reuse:
    """The documents of the most recent :func:`load_org`, by loader, file, scope (or kind) and content.

    A loader's result depends on nothing else, so a file read again at the same place with the same bytes
    (the other version of the org in ``diff``, ``impact``, a report against a revision) gets the same,
    already validated, objects instead of being parsed and validated again; a file that differs by one byte
    is read anew.  The content is known by its git blob id (:func:`~template_engine.loader.sources.blob_id`):
    a revision's listing has it, so its unchanged files are not even read.  Where both versions' bytes were
    read (two folders), their BLAKE2b digests must match too, so the reuse never rests on SHA-1 alone there;
    against a revision's file it rests on git's own id (docs/decisions.md).  Only the last load is kept, so
    the memory is at most one org's.  The objects are shared between the two orgs: nothing changes a loaded
    document.
    """

    last: ClassVar[Memo] = {}
    #: The layout of the most recent load of a source that names the state of its listing (``listing``: a
    #: value that changes whenever what ``kind`` or ``entries`` answers may change, the language server's
    #: buffers), with that value and the departments it was walked for: the same again is the same layout.
    layout: ClassVar[tuple[object, Layout] | None] = None


def content_digest(raw: bytes) -> str:
    """What the loader calls bytes it has read, in the memo and the fact cache: ``blake2b:`` and their
    BLAKE2b-256 digest.  A revision's file it has not read is ``git:`` and its blob id."""
    return "blake2b:" + hashlib.blake2b(raw, digest_size=32).hexdigest()


def _with_text(
    files: sources.Source,
    rel: str,
    arg: Any,
    build: FromText,
    memo: tuple[Memo, Memo] | None,
    facts: FactCache | None = None,
) -> Made:
    if memo is None:
        text, problems = _read_text(files, rel)
        return (None, problems) if text is None else build(text, rel, arg)
    previous, current = memo
    raw: bytes | None = None
    digest: str | None = None
    known = getattr(files, "identity", None)  # a source written before identity existed has none
    blob = known(rel) if known is not None else None
    if blob is None:
        read = files.read(rel)
        if isinstance(read, sources.Unreadable):
            return _decode(read, rel)
        raw, blob, digest = read, sources.blob_id(read), content_digest(read)
    key = (build.__name__, rel, arg, blob)
    hit = previous.get(key)
    if hit is not None and (digest is None or hit[1] is None or hit[1] == digest):
        made, digest = hit[0], digest or hit[1]
    else:
        made = _made(files, rel, arg, build, digest or f"git:{blob}", raw, facts)
    current[key] = (made, digest)
    return made


def _made(
    files: sources.Source,
    rel: str,
    arg: Any,
    build: FromText,
    content: str,
    raw: bytes | None,
    facts: FactCache | None,
) -> Made:
    """What ``build`` makes of the file (``raw``: its bytes, if they were read; ``content``: what the fact
    cache knows them by, :func:`content_digest`): a stand-in read on first use when ``facts`` knows it to be
    valid, else the document itself (then ``facts`` learns whether it is valid)."""

    def read() -> Made:
        text, problems = _decode(files.read(rel) if raw is None else raw, rel)
        return (None, problems) if text is None else build(text, rel, arg)

    if facts is None:
        return read()
    from template_engine.loader.deferred import DeferredAsset, DeferredDefaults, DeferredTemplate

    key = facts.key(build.__name__, rel, arg, content)
    refs = facts.valid(key)
    if refs is None:
        made, problems = read()
        if made is not None:
            facts.remember(key, _template_facts(made) if isinstance(made, Template) else ())
        return made, problems
    stem = _stem(rel)
    if build is _template_from:
        kinds = tuple((cast(AssetKind, kind), name) for kind, name in refs if kind != _KIND_FACT)
        kind_name = next((name for kind, name in refs if kind == _KIND_FACT), None)
        return DeferredTemplate(stem, arg, rel, kinds, read, kind_named(kind_name)), []
    if build is _asset_from:
        return DeferredAsset(arg, stem, rel, asset_scope(rel), read), []
    return DeferredDefaults(arg, rel, read), []


#: The fact that records a template's kind among its asset references (a kind of asset no asset has), for
#: the kinds but distributed: the facts of a file written before kinds read as distributed, as they were.
_KIND_FACT = "workload-kind"


def _template_facts(template: Template) -> tuple[tuple[str, str], ...]:
    """What the facts cache remembers of a valid template: its asset references, and its kind."""
    refs: tuple[tuple[str, str], ...] = template.asset_refs()
    kind = template.kind
    return refs if kind is DISTRIBUTED else (*refs, (_KIND_FACT, kind.name))


def _stem(rel: str) -> str:
    """``PurePosixPath(rel).stem`` without building a path (it is asked for every file)."""
    name = rel.rpartition("/")[2]
    dot = name.rfind(".")
    return name[:dot] if 0 < dot < len(name) - 1 else name


def _name_matches_file(source: Source, name: str, stem: str, what: str) -> list[Problem]:
    if name == stem:
        return []
    return [
        Problem(
            f"{what} meta.name {name!r} does not match its file name",
            ("meta", "name"),
            locate(source.file, source.lines, ("meta", "name")),
            f"meta.name: {stem}",
        )
    ]


Checked = TypeVar("Checked", bound=BaseModel)


def _every_problem(
    model: type[Checked], source: Source, stem: str | None, what: str
) -> tuple[Checked | None, list[Problem]]:
    """The document of ``model``, and every problem of it at once: the schema's, a ``meta.name`` that is not
    the file's ``stem`` (unless ``stem`` is ``None`` or the schema refuses the name) and the rules beyond the
    schema (:func:`document_rules`, which read the data as written, so they are checked on a document the
    schema refuses too); a problem found twice is said once, and a rule's problem at or under a path the
    schema already refused is not said again (the API's door checks the rules on what the schema's problems
    leave, :func:`template_engine.service.bodies.pruned`: both doors give the same problems).  A document of
    more than ``MAX_VALUES`` values has that one problem."""
    rel = source.file
    if count_values(source.data) > MAX_VALUES:  # nothing more of it is read
        return None, document_rules(model, source.data, rel, source.lines)
    doc, problems = validate(model, source.data, rel, source.lines)
    meta = source.data.get("meta")
    name = meta.get("name") if isinstance(meta, Mapping) else None
    if stem is not None and isinstance(name, str) and all(p.path != ("meta", "name") for p in problems):
        problems += _name_matches_file(source, name, stem, what)
    refused = {p.path for p in problems if p.path}
    problems += [
        p
        for p in document_rules(model, source.data, rel, source.lines)
        if p not in problems and not any(p.path[: len(path)] == path for path in refused)
    ]
    return doc, problems


def _without_specs(doc: Doc) -> Doc:
    """A validated defaults or template document without its validated spec trees (``spec`` and
    ``master.spec`` set to ``None``); everything else of it stays.

    The trees are checked, then dropped: composing reads a spec as written (``Source.data``), never the
    validated copy, which was the larger part of a loaded org's memory (docs/decisions.md).
    """
    master = doc.master
    if master is not None and master.spec is not None:
        return doc.model_copy(update={"spec": None, "master": master.model_copy(update={"spec": None})})
    return doc.model_copy(update={"spec": None}) if doc.spec is not None else doc


def _defaults_from(text: str, rel: str, scope: Scope) -> tuple[Defaults | None, list[Problem]]:
    source, problems = _parse_source(text, rel)
    if source is None:
        return None, problems
    doc, problems = _every_problem(LayerDocument, source, None, "")
    return (None if doc is None or problems else Defaults(scope, source, _without_specs(doc))), problems


def _template_from(text: str, rel: str, scope: Scope) -> tuple[Template | None, list[Problem]]:
    source, problems = _parse_source(text, rel)
    if source is None:
        return None, problems
    stem = _stem(rel)
    kind, problems = template_kind(source.data, rel, source.lines)
    if kind is None or kind.template_model is None:
        return None, problems
    doc, problems = _every_problem(kind.template_model, source, stem, "template")
    if doc is None or problems:
        return None, problems
    return Template(stem, scope, source, _without_specs(cast(AnyTemplateDocument, doc))), problems


def _policy_from(text: str, rel: str, scope: Scope) -> tuple[PolicyDocument | None, list[Problem]]:
    from template_engine.policy.document import read_policy

    source, problems = _parse_source(text, rel)
    if source is None:
        return None, problems
    return read_policy(source.data, rel, source.lines, scope)


def _kind_policy_from(
    text: str, rel: str, at: tuple[Scope, str]
) -> tuple[PolicyDocument | None, list[Problem]]:
    """The policy of one kind but distributed (``training-policy.yaml``...) at a scope."""
    from template_engine.policy.document import read_policy

    source, problems = _parse_source(text, rel)
    if source is None:
        return None, problems
    scope, kind = at
    return read_policy(source.data, rel, source.lines, scope, kind=KIND_BY_NAME[kind])


def _asset_from(text: str, rel: str, kind: AssetKind) -> tuple[Asset | None, list[Problem]]:
    source, problems = _parse_source(text, rel)
    if source is None:
        return None, problems
    stem = _stem(rel)
    doc, problems = _every_problem(ASSET_MODELS[kind], source, stem, f"{kind} asset")
    return (None if doc is None or problems else Asset(kind, stem, source, doc, asset_scope(rel))), problems


def _org_document(files: sources.Source) -> OrgDocument:
    if files.kind("org.yaml") != "file":
        yml = files.kind("org.yml") == "file"
        other = " (org.yml is there: the org file is always org.yaml)" if yml else ""
        raise InputError(
            [
                Problem(
                    f"no org.yaml in the templates folder{other}",
                    (),
                    Location(files.label),
                    "org.yaml naming the departments and their projects",
                )
            ]
        )
    source, problems = read_source(files, "org.yaml")
    if source is None:
        raise InputError(problems)
    doc, problems = validate(OrgDocument, source.data, "org.yaml", source.lines)
    if doc is None:
        raise InputError(problems)
    if doc.clusters is not None and doc.departments:
        problems.append(
            Problem(
                "org.yaml names clusters and departments outside them",
                ("departments",),
                locate("org.yaml", source.lines, ("departments",)),
                "either departments: (an org of one cluster) or clusters: [{name, departments}]",
            )
        )
    for c_index, entry in enumerate(doc.clusters or ()):
        if entry.name in {c.name for c in (doc.clusters or [])[:c_index]}:
            problems.append(
                Problem(
                    f"cluster {entry.name!r} is listed twice",
                    ("clusters", c_index),
                    locate("org.yaml", source.lines, ("clusters", c_index)),
                )
            )
    seen: dict[str, str] = {}
    seen_departments: dict[str, Path] = {}
    for at, dept in department_entries(doc):
        if dept.name in seen_departments:
            where = ""
            if at[0] == "clusters" and doc.clusters is not None:
                first = doc.clusters[int(str(seen_departments[dept.name][1]))].name
                where = f" (in cluster {first!r} and in cluster {doc.clusters[int(str(at[1]))].name!r})"
            problems.append(
                Problem(
                    f"department {dept.name!r} is listed twice{where}",
                    at,
                    locate("org.yaml", source.lines, at),
                    "department names unique across the org: a department belongs to one cluster",
                )
            )
        seen_departments.setdefault(dept.name, at)
        for p_index, project in enumerate(dept.project_names()):
            path = (*at, "projects", p_index)
            if project in seen:
                problems.append(
                    Problem(
                        f"project {project!r} is listed in {seen[project]!r} and {dept.name!r}",
                        path,
                        locate("org.yaml", source.lines, path),
                        "project names unique across the org",
                    )
                )
            seen[project] = dept.name
    if problems:
        raise InputError(problems)
    return doc


def department_entries(doc: OrgDocument) -> list[tuple[Path, OrgDepartment]]:
    """Every department of ``org.yaml`` with its path there (``("departments", 0)`` or ``("clusters", 0,
    "departments", 1)``), in the file's order."""
    if doc.clusters is None:
        return [(("departments", index), dept) for index, dept in enumerate(doc.departments)]
    return [
        (("clusters", c_index, "departments", index), dept)
        for c_index, entry in enumerate(doc.clusters)
        for index, dept in enumerate(entry.departments)
    ]


CLUSTER_FILE = "cluster.yaml"


def _cluster_settings(
    files: sources.Source, rel: str = CLUSTER_FILE
) -> tuple[ClusterSettings, Source | None]:
    """A cluster's settings (``cluster.yaml``, or ``clusters/C/cluster.yaml``; docs/cluster.md); their
    defaults when there is none.

    Like ``org.yaml``, a broken one stops every command: no composition's objects can be known without it.
    """
    if files.kind(rel) != "file":
        return DEFAULT_SETTINGS, None
    source, problems = read_source(files, rel)
    if source is None:
        raise InputError(problems)
    doc, problems = validate(ClusterSettings, source.data, rel, source.lines)
    if doc is None:
        raise InputError(problems)
    return doc, source


def _clusters(files: sources.Source, doc: OrgDocument) -> dict[str, ClusterEntry]:
    """The clusters ``org.yaml`` names, each with its departments and settings; a ``cluster.yaml`` at the top
    of an org that names clusters is an error (whose settings would it be?)."""
    if doc.clusters is None:
        return {}
    if files.kind(CLUSTER_FILE) == "file":
        raise InputError(
            [
                Problem(
                    f"{CLUSTER_FILE} at the top of the folder, but org.yaml names clusters",
                    (),
                    Location(CLUSTER_FILE),
                    f"each cluster's settings in clusters/NAME/{CLUSTER_FILE}",
                )
            ]
        )
    out: dict[str, ClusterEntry] = {}
    problems: list[Problem] = []
    for entry in doc.clusters:
        try:
            settings, source = _cluster_settings(files, f"clusters/{entry.name}/{CLUSTER_FILE}")
        except InputError as exc:
            problems += exc.problems
            continue
        out[entry.name] = ClusterEntry(entry.name, tuple(d.name for d in entry.departments), settings, source)
    if problems:
        raise InputError(problems)
    return out


def _cluster_warnings(
    cluster: ClusterSettings, source: Source | None, departments: Mapping[str, tuple[str, ...]]
) -> list[Problem]:
    """A queue named for a project the org (or the cluster) does not list (a typo?): a warning, as a hidden
    file is."""
    if source is None:
        return []
    projects = [p for ps in departments.values() for p in ps]
    return [
        Problem(
            f"queues names project {name!r}, which org.yaml does not list"
            + (" in this cluster" if source.file != CLUSTER_FILE else "")
            + ": the queue is not used",
            ("queues", name),
            locate(source.file, source.lines, ("queues", name)),
            "one of the projects: " + ", ".join(projects),
        )
        for name in cluster.queues
        if name not in projects
    ]


DEFAULT_ROOT = FsPath("templates")


def resolve_root(root: FsPath) -> FsPath:
    """The folder to read: ``root``, or the current folder when ``root`` is the default ``templates``, that
    folder does not exist, and the current folder holds ``org.yaml`` (a command run inside the folder)."""
    if root == DEFAULT_ROOT and not root.is_dir() and FsPath("org.yaml").is_file():
        return FsPath(".")
    return root


#: How :func:`load_org` may share out reading the files: ``spread(work, items)`` is
#: ``[work(run) for run in runs]`` for contiguous runs of ``items`` whose concatenation is ``items``, in order
#: (``check`` passes :func:`~template_engine.cli.fanout.map_runs`, which does the runs in forked processes).
Spread = Callable[[Callable[[Sequence[Any]], Any], Sequence[Any]], list[Any]]


def load_org(
    where: sources.SourceOrPath, facts: FactCache | None = None, spread: Spread | None = None
) -> Org:
    """Read the whole templates folder of ``where`` (a source, or the path of a folder).

    Raises :class:`InputError` only when the folder or ``org.yaml`` is unusable; problems of other files are
    recorded in ``Org.broken``.

    With ``facts`` (:mod:`template_engine.loader.facts`), a defaults, template or asset file that the cache
    knows to be valid, with these very bytes, is not parsed: the org holds a stand-in that reads it when its
    document is first asked for (:mod:`template_engine.loader.deferred`); what was learnt is written to the
    cache before returning.  Every answer is the same with or without it.

    The garbage collector is paused while the files are read (the documents are trees: no cycle to find,
    and a collection every few hundred new objects made reading cost grow faster than the org); then what
    was read is frozen (``gc.freeze``) so that later collections do not walk it again and again.  The next
    call unfreezes first, so what is no longer used is collected as usual after it (docs/performance.md).

    With ``spread`` (:data:`Spread`, for a process that loads one org: what another process read is a copy,
    not the object the previous load made), the files are read and validated in runs that may be done
    elsewhere; what is made of each file is the same.  It is not used with ``facts``, whose learning happens
    here.
    """
    enabled = gc.isenabled()
    gc.disable()
    gc.unfreeze()
    try:
        org = _load_org(where, facts, spread if facts is None else None)
        if facts is not None:
            facts.flush()
        return org
    finally:
        gc.freeze()
        if enabled:
            gc.enable()


#: One file to read: the loader, the file, and the scope (or asset kind) it is read for.
_Task = tuple[FromText, str, Any]


#: The documents read whole every time (a policy's checks need the whole org: no stand-in).
_NO_FACTS = (_policy_from, _kind_policy_from)


def _read_run(
    files: sources.Source, previous: Memo, facts: FactCache | None, run: Sequence[_Task]
) -> tuple[list[Made], Memo]:
    """What each file of ``run`` makes, in order, and the memo entries of those reads (:class:`_Reuse`)."""
    current: Memo = {}
    made = [
        _with_text(files, rel, arg, build, (previous, current), None if build in _NO_FACTS else facts)
        for build, rel, arg in run
    ]
    return made, current


def _load_org(where: sources.SourceOrPath, facts: FactCache | None, spread: Spread | None) -> Org:
    files = sources.as_source(where)
    if files.kind("") != "folder":
        raise InputError(
            [
                Problem(
                    f"templates folder {files.label!r} does not exist",
                    (),
                    None,
                    "--root pointing at a folder with org.yaml",
                )
            ]
        )
    org_doc = _org_document(files)
    departments = {d.name: tuple(d.project_names()) for _, d in department_entries(org_doc)}
    cluster, cluster_source = _cluster_settings(files)
    clusters = _clusters(files, org_doc)
    in_clusters = {name: entry.departments for name, entry in clusters.items()}
    listing = getattr(files, "listing", None)
    shape = (tuple(sorted(departments.items())), tuple(sorted(in_clusters.items())))
    key = (listing, shape) if listing is not None else None
    kept = _Reuse.layout
    if key is not None and kept is not None and kept[0] == key:
        layout = kept[1]  # nothing was added, removed or renamed: the same walk would find the same
    else:
        layout = read_layout(files, departments, in_clusters)
        _Reuse.layout = (key, layout) if key is not None else None
    broken: dict[str, tuple[Problem, ...]] = {rel: tuple(ps) for rel, ps in layout.errors.items()}
    refs: dict[tuple[str, ...], str] = dict(layout.refs)
    defaults: dict[Scope, Defaults] = {}
    templates: dict[Scope, dict[str, Template]] = {}

    def note(rel: str, problems: list[Problem], ref: tuple[str, ...]) -> None:
        if problems:
            broken[rel] = tuple(problems)
            refs[ref] = rel

    tasks: list[_Task] = [(_defaults_from, rel, scope) for scope, rel in layout.defaults.items()]
    tasks += [(_template_from, rel, scope) for scope, by in layout.templates.items() for rel in by.values()]
    tasks += [(_asset_from, rel, kind) for kind, by in layout.assets.items() for rel in by.values()]
    tasks += [(_policy_from, rel, scope) for scope, rel in layout.policies.items()]
    tasks += [(_kind_policy_from, rel, at) for at, rel in layout.kind_policies.items()]
    work = functools.partial(_read_run, files, _Reuse.last, facts)
    current: Memo = {}
    made: list[Made] = []
    for run_made, run_memo in spread(work, tasks) if spread is not None else [work(tasks)]:
        made += run_made
        current.update(run_memo)
    read = iter(made)

    for scope, rel in layout.defaults.items():
        entry, problems = next(read)
        note(rel, problems, defaults_ref(scope))
        if entry is not None:
            defaults[scope] = entry
    for scope, by_stem in layout.templates.items():
        for stem, trel in by_stem.items():
            template, problems = next(read)
            note(trel, problems, template_ref(scope, stem))
            if template is not None:
                templates.setdefault(scope, {})[template.name] = template

    assets: dict[AssetKind, dict[str, Asset]] = {}
    for kind, by_stem in layout.assets.items():
        for stem, arel in by_stem.items():
            asset, problems = next(read)
            note(arel, problems, asset_ref(kind, stem))
            if asset is not None:
                assets.setdefault(kind, {})[asset.name] = asset
    policies: dict[Scope, PolicyDocument] = {}
    for scope, prel in layout.policies.items():
        policy, problems = next(read)
        note(prel, problems, policy_ref(scope))
        if policy is not None:
            policies[scope] = policy
    kind_policies: dict[tuple[Scope, str], PolicyDocument] = {}
    for at, krel in layout.kind_policies.items():
        policy, problems = next(read)
        note(krel, problems, policy_ref(*at))
        if policy is not None:
            kind_policies[at] = policy
    broken_assets = {ref[2] for ref in refs if ref[:2] == ("asset", "datasource")}
    for file, problems in _org_policy_problems(
        policies, departments, assets, broken_assets, in_clusters
    ).items():
        scope = next(s for s, p in policies.items() if p.file == file)
        del policies[scope]
        note(file, problems, policy_ref(scope))
    for kind_name in {kind for _scope, kind in kind_policies}:
        of_kind = {scope: p for (scope, kind), p in kind_policies.items() if kind == kind_name}
        for file, problems in _org_policy_problems(
            of_kind, departments, assets, broken_assets, in_clusters
        ).items():
            scope = next(s for s, p in of_kind.items() if p.file == file)
            del kind_policies[(scope, kind_name)]
            note(file, problems, policy_ref(scope, kind_name))
    _Reuse.last = current
    drafts, unknown = _drafts(org_doc, layout.templates, files)
    per_cluster = [
        warning
        for entry in clusters.values()
        for warning in _cluster_warnings(
            entry.settings, entry.source, {d: departments[d] for d in entry.departments}
        )
    ]
    return Org(
        departments,
        defaults,
        templates,
        assets,
        broken,
        refs,
        (*layout.warnings, *_cluster_warnings(cluster, cluster_source, departments), *unknown, *per_cluster),
        policies,
        cluster,
        cluster_source,
        drafts,
        kind_policies,
        clusters,
    )


def _drafts(
    doc: OrgDocument, templates: Mapping[Scope, Mapping[str, str]], files: sources.Source
) -> tuple[frozenset[tuple[Scope, str]], list[Problem]]:
    """The templates ``org.yaml``'s ``drafts`` names, by scope and name, and a warning for each entry that
    is not a template file of the org (it softens nothing: a file moved or renamed?)."""
    if not doc.drafts:
        return frozenset(), []
    by_file = {rel: (scope, stem) for scope, by in templates.items() for stem, rel in by.items()}
    found = {by_file[rel] for rel in doc.drafts if rel in by_file}
    missing = [(index, rel) for index, rel in enumerate(doc.drafts) if rel not in by_file]
    source = read_source(files, "org.yaml")[0] if missing else None  # read again only for the lines
    lines = source.lines if source is not None else {}
    unknown = [
        Problem(
            f"drafts lists {rel!r}, which is not a template file of the org: it softens nothing",
            ("drafts", index),
            locate("org.yaml", lines, ("drafts", index)),
            "the path of a template file under --root, such as projects/vision/templates/job.yaml",
        )
        for index, rel in missing
    ]
    return frozenset(found), unknown


def _org_policy_problems(
    policies: dict[Scope, PolicyDocument],
    departments: dict[str, tuple[str, ...]],
    assets: dict[AssetKind, dict[str, Asset]],
    broken_assets: set[str],
    clusters: Mapping[str, tuple[str, ...]],
) -> dict[str, list[Problem]]:
    """:func:`~template_engine.loader.policies.org_policy_problems`; an org without policies has none."""
    if not policies:
        return {}
    from template_engine.loader.policies import org_policy_problems

    return org_policy_problems(policies, departments, assets, broken_assets, clusters)


def reference_problems(org: Org) -> list[Problem]:
    """Templates that refer to assets the org does not have (a broken asset file reports its own problems),
    or to assets outside their scope (:func:`~template_engine.org.out_of_scope`)."""
    problems = []
    for by_name in org.templates.values():
        for template in by_name.values():
            chain = org.chain_of(template.scope)
            for kind, name, path in asset_refs(template.doc):
                where = locate(template.source.file, template.source.lines, path)
                asset = org.assets.get(kind, {}).get(name)
                if asset is not None:
                    user = template_user(template.name, template.scope)
                    problem = out_of_scope(asset, user, chain, path, where)
                    if problem is not None:
                        problems.append(problem)
                elif asset_ref(kind, name) not in org.broken_refs:
                    problems.append(
                        Problem(
                            f"unknown {kind} asset {name!r}", path, where, f"a file {asset_file(kind, name)}"
                        )
                    )
    return problems
