"""The layout of a templates folder: which of its entries are read, and a problem for every other one.

    org.yaml
    cluster.yaml            the cluster's settings, in an org that names no clusters
    system/                 defaults.yaml, policy.yaml, templates/NAME.yaml
    clusters/C/             the same, for each cluster C of org.yaml, with cluster.yaml and assets/ (below)
    departments/D/          the same, for each department D of org.yaml, and assets/ (below)
    projects/P/             the same, for each project P of org.yaml, and assets/ (below)
    assets/environments/NAME.yaml, assets/computes/NAME.yaml, assets/datasources/NAME.yaml

An asset's folder is its scope, as Run:ai's ``AssetMeta.scope`` (``tenant``, ``cluster``, ``department``,
``project``): ``assets/`` at the top holds the tenant's (the system scope: usable everywhere),
``clusters/C/assets/`` cluster C's (usable in C's departments and projects), ``departments/D/assets/``
department D's (usable in D and its projects), ``projects/P/assets/`` project P's (usable in P only), each
with the same three kind folders (:func:`asset_scope`).  An asset's name is unique per kind in the whole org,
whatever its scope: two files of one kind and name are an error naming both, and neither is read.

Every file but ``org.yaml`` may be spelled ``.yml``; both spellings of one name (``ddp.yaml`` and ``ddp.yml``)
are an error.  Besides the layout, a folder may hold documentation (``README*``, ``LICENSE*``, ``*.md``) and
git's files (``.git``, ``.gitignore``, ``.gitattributes``, ``.gitkeep``); the top level may hold
``.template-engine/``, where tools keep their own metadata.  None of these is read.  Any other hidden entry
is a warning (it is ignored); anything else is an error: a misnamed file or folder (with a did-you-mean hint
where one fits), a broken symbolic link, a folder that cannot be listed.

An entry that looks like a misspelling of a layout entry (``default.yaml``, ``template/``) also stands for
what it would have provided: the compositions that would have used it fail with its problem, instead of
silently missing a layer.
"""

from __future__ import annotations

import difflib
import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

from template_engine.errors import InputError, Location, Problem
from template_engine.kinds import KINDS
from template_engine.loader.sources import Kind, Source, Unreadable
from template_engine.models.documents import ASSET_FOLDERS, AssetKind, ScopeType
from template_engine.org import SYSTEM, Scope, asset_ref, defaults_ref, policy_ref, template_ref
from template_engine.scopes import LEVEL_BY_TYPE, NAMED_LEVELS, ScopeLevel, depth

_LEVEL_BY_FOLDER: dict[str, ScopeLevel] = {str(level.folder): level for level in NAMED_LEVELS}

YAML_SUFFIXES = (".yaml", ".yml")
#: The top-level folder where tools keep metadata of their own (``db export``); the loader never reads it.
META_FOLDER = ".template-engine"
_GIT = frozenset({".git", ".gitignore", ".gitattributes", ".gitkeep"})
_DEFAULTS = "defaults"
_POLICY = "policy"
#: The policy file of each kind but distributed (whose policy is ``policy.yaml``), by its stem.
_KIND_POLICIES: dict[str, str] = {
    kind.policy_file.removesuffix(".yaml"): kind.name for kind in KINDS if kind.name != "distributed"
}
_LAYER = (
    "defaults.yaml, policy.yaml (or .yml), a policy file of each other kind ("
    + ", ".join(f"{stem}.yaml" for stem in _KIND_POLICIES)
    + ") and templates/; a template goes in templates/NAME.yaml"
)
_UNIT = _LAYER + "; assets/ holds the assets of this scope"
#: The folder of the assets of a scope (under the top, a department's folder or a project's).
ASSETS = "assets"
_TOP = (
    "org.yaml, cluster.yaml, system/, clusters/, departments/, projects/, assets/ "
    "and documentation (README, *.md)"
)
#: A cluster's settings: ``cluster.yaml`` at the top (an org that names no clusters) or in ``clusters/C/``.
CLUSTER_SETTINGS = "cluster.yaml"
#: How alike a name and a layout name must be for a did-you-mean hint (difflib's ratio).
_CLOSE = 0.7

Ref = tuple[str, ...]
#: Walks one folder of the layout: ``(path, blame)`` (see :class:`_Walk`).
Walker = Callable[[str, str | None], None]


@dataclass(frozen=True, slots=True)
class _Entry:
    name: str
    rel: str
    kind: Kind


@dataclass
class Layout:
    """What a templates folder holds, by the layout: files to read, and the problems of the other entries."""

    defaults: dict[Scope, str] = field(default_factory=dict)
    policies: dict[Scope, str] = field(default_factory=dict)
    #: The policy files of the other kinds, by scope and kind name.
    kind_policies: dict[tuple[Scope, str], str] = field(default_factory=dict)
    templates: dict[Scope, dict[str, str]] = field(default_factory=dict)
    #: Every asset file, by kind and name; its scope is its folder's (:func:`asset_scope`).
    assets: dict[AssetKind, dict[str, str]] = field(default_factory=dict)
    #: Entries that break the layout, by path.
    errors: dict[str, list[Problem]] = field(default_factory=dict)
    #: What such an entry would have provided (``defaults_ref``, ``template_ref``, ``asset_ref``) -> its path.
    refs: dict[Ref, str] = field(default_factory=dict)
    #: Entries that are ignored but may be a mistake (hidden files).
    warnings: list[Problem] = field(default_factory=list)


def is_documentation(name: str) -> bool:
    """``README*``, ``LICENSE*`` or ``*.md`` (not a YAML file): documentation, never read."""
    lower = name.lower()
    if lower.endswith(".md"):
        return True
    return lower.startswith(("readme", "license", "licence")) and not lower.endswith(YAML_SUFFIXES)


def asset_scope(rel: str) -> Scope:
    """The scope of the asset file at ``rel``, from its folder: ``projects/P/assets/...`` is project P's,
    ``departments/D/assets/...`` department D's, ``clusters/C/assets/...`` cluster C's, ``assets/...`` (and
    any other place) the tenant's, which is the system scope (Run:ai's ``AssetMeta.scope``: ``project``,
    ``department``, ``cluster``, ``tenant``)."""
    parts = rel.split("/")
    if len(parts) > 3 and parts[2] == ASSETS:
        level = _LEVEL_BY_FOLDER.get(parts[0])
        if level is not None:
            return Scope(level.type, parts[1])
    return SYSTEM


def scope_folder(scope: Scope) -> str:
    """The folder of a scope's layer: ``system``, ``clusters/C``, ``departments/D``, ``projects/P``."""
    level = LEVEL_BY_TYPE[scope.type]
    return f"{level.folder}/{scope.name}" if level.named else str(level.own_folder)


def asset_file(kind: AssetKind, name: str, scope: Scope = SYSTEM) -> str:
    """Where the asset ``name`` of ``kind`` and ``scope`` goes in a templates folder (``.yaml``)."""
    top = f"{ASSETS}/{ASSET_FOLDERS[kind]}/{name}.yaml"
    return top if scope == SYSTEM else f"{scope_folder(scope)}/{top}"


def read_layout(
    source: Source,
    departments: Mapping[str, tuple[str, ...]],
    clusters: Mapping[str, tuple[str, ...]] | None = None,
) -> Layout:
    """Walk the templates folder of ``source`` (whose org.yaml names ``departments`` and their projects, and
    the ``clusters`` and their departments, if it names any).

    Raises :class:`InputError` only when the folder itself cannot be listed.
    """
    walk = _Walk(source, departments, clusters or {})
    walk.top()
    return walk.finish()


class _Walk:
    """One walk of the layout.

    ``blame`` is ``None`` while walking real entries; inside a misnamed entry it is that entry's path: what
    is found there is not read, it only names what the entry would have provided.
    """

    def __init__(
        self,
        source: Source,
        departments: Mapping[str, tuple[str, ...]],
        clusters: Mapping[str, tuple[str, ...]],
    ) -> None:
        self.source = source
        #: The names of each named level's scopes (``org.yaml``'s), by level.
        self.known: dict[ScopeType, list[str]] = {
            "cluster": list(clusters),
            "department": list(departments),
            "project": [p for ps in departments.values() for p in ps],
        }
        assert set(self.known) == {level.type for level in NAMED_LEVELS}
        self.layout = Layout()
        self.supposed: dict[Ref, str] = {}
        #: Every asset file found, by kind and name.
        self.asset_files: dict[tuple[AssetKind, str], list[str]] = {}

    # -- the folders of the layout ------------------------------------------------------------------------

    def top(self) -> None:
        entries = self.entries("", None)
        if entries is None:
            raise InputError(self.layout.errors.pop("."))
        handlers: dict[str, tuple[Kind, Walker | None]] = {
            "org.yaml": ("file", None),  # read (or refused) before the walk
            "cluster.yaml": ("file", None),  # the same
            "system": ("folder", lambda rel, blame: self.layer(rel, SYSTEM, blame)),
        }
        for level in NAMED_LEVELS:
            handlers[str(level.folder)] = ("folder", self._level_folder(level.type))
        handlers["assets"] = ("folder", lambda rel, blame: self.assets(rel, blame))
        order = list(handlers)
        for entry in sorted(entries, key=lambda e: (order.index(e.name) if e.name in order else 9, e.name)):
            if (entry.name == META_FOLDER and entry.kind == "folder") or self.skipped(entry, None):
                continue
            handler = handlers.get(entry.name)
            if handler is None:
                self.misnamed(entry, handlers, "the templates folder", _TOP, None)
            elif handler[1] is not None and self.expect(entry, handler[0], None):
                handler[1](entry.rel, None)

    def _level_folder(self, kind: ScopeType) -> Walker:
        return lambda rel, blame: self.scopes(rel, kind, blame)

    def scopes(self, rel: str, kind: ScopeType, blame: str | None) -> None:
        entries = self.entries(rel, blame) or []
        present = {entry.name for entry in entries}
        for entry in entries:
            if self.skipped(entry, blame):
                continue
            if entry.name in self.known[kind]:
                if self.expect(entry, "folder", blame):
                    self.layer(entry.rel, Scope(kind, entry.name), blame)
                continue
            if entry.kind != "folder":
                self.error(
                    entry,
                    f"unexpected {entry.kind} {entry.name!r} in {rel}/",
                    f"a folder {rel}/NAME/ for each {kind} NAME of org.yaml",
                    blame,
                )
                continue
            close = _close(entry.name, self.known[kind])
            hint = f" (did you mean {close!r}?)" if close else ""
            self.error(
                entry,
                f"unknown {kind} {entry.name!r}: it is not in org.yaml{hint}",
                f"a {kind} listed in org.yaml",
                blame,
            )
            if close is not None and close not in present:  # the folder of `close` is missing: this is it
                self.layer(entry.rel, Scope(kind, close), blame or entry.rel)

    def layer(self, rel: str, scope: Scope, blame: str | None) -> None:
        entries = self.entries(rel, blame)
        if entries is None:
            self.suppose(defaults_ref(scope), blame or rel)
            self.suppose(policy_ref(scope), blame or rel)
            for kind in _KIND_POLICIES.values():
                self.suppose(policy_ref(scope, kind), blame or rel)
            return
        found: list[_Entry] = []
        policies: list[_Entry] = []
        kind_policies: dict[str, list[_Entry]] = {}
        handlers: dict[str, tuple[Kind, Walker | None]] = {
            "defaults.yaml": ("file", lambda _rel, blame: self.suppose(defaults_ref(scope), blame or _rel)),
            "policy.yaml": ("file", lambda _rel, blame: self.suppose(policy_ref(scope), blame or _rel)),
            "templates": ("folder", lambda rel, blame: self.templates(rel, scope, blame)),
        }
        for stem, kind_name in _KIND_POLICIES.items():
            handlers[f"{stem}.yaml"] = ("file", self._supposes(policy_ref(scope, kind_name)))
        if scope != SYSTEM:  # the system's assets are the tenant's, at the top
            handlers[ASSETS] = ("folder", lambda rel, blame: self.assets(rel, blame))
        for entry in entries:
            if self.skipped(entry, blame):
                continue
            if entry.name in (f"{_DEFAULTS}{s}" for s in YAML_SUFFIXES):
                if self.expect(entry, "file", blame):
                    found.append(entry)
                else:
                    self.suppose(defaults_ref(scope), blame or entry.rel)
            elif entry.name in (f"{_POLICY}{s}" for s in YAML_SUFFIXES):
                if self.expect(entry, "file", blame):
                    policies.append(entry)
                else:
                    self.suppose(policy_ref(scope), blame or entry.rel)
            elif entry.name.rpartition(".")[0] in _KIND_POLICIES and entry.name.endswith(YAML_SUFFIXES):
                kind_name = _KIND_POLICIES[entry.name.rpartition(".")[0]]
                if self.expect(entry, "file", blame):
                    kind_policies.setdefault(kind_name, []).append(entry)
                else:
                    self.suppose(policy_ref(scope, kind_name), blame or entry.rel)
            elif entry.name == "templates":
                if self.expect(entry, "folder", blame):
                    self.templates(entry.rel, scope, blame)
            elif entry.name == ASSETS and scope != SYSTEM:
                if self.expect(entry, "folder", blame):
                    self.assets(entry.rel, blame)
            elif entry.name == CLUSTER_SETTINGS and scope.type == "cluster":
                self.expect(
                    entry, "file", blame
                )  # the cluster's settings: read with org.yaml, before the walk
            else:
                expected = _LAYER if scope == SYSTEM else _UNIT
                if scope.type == "cluster":
                    expected += f"; {CLUSTER_SETTINGS} holds the cluster's settings"
                if entry.name == ASSETS:
                    expected += " (the system's assets are the tenant's: assets/ at the top of the folder)"
                self.misnamed(entry, handlers, f"{rel}/", expected, blame)
        chosen = self.one_of(found, "the defaults file", blame)
        if chosen is None:
            if found:
                self.suppose(defaults_ref(scope), blame or found[-1].rel)
        elif blame is None:
            self.layout.defaults[scope] = chosen.rel
        else:
            self.suppose(defaults_ref(scope), blame)
        policy = self.one_of(policies, "the policy file", blame)
        if policy is None:
            if policies:
                self.suppose(policy_ref(scope), blame or policies[-1].rel)
        elif blame is None:
            self.layout.policies[scope] = policy.rel
        else:
            self.suppose(policy_ref(scope), blame)
        for kind_name, written in kind_policies.items():
            chosen_policy = self.one_of(written, f"the {kind_name} policy file", blame)
            if chosen_policy is None:
                self.suppose(policy_ref(scope, kind_name), blame or written[-1].rel)
            elif blame is None:
                self.layout.kind_policies[(scope, kind_name)] = chosen_policy.rel
            else:
                self.suppose(policy_ref(scope, kind_name), blame)

    def _supposes(self, ref: Ref) -> Walker:
        """A walker of an entry misnamed for ``ref``'s file: it stands for that file."""

        def walk(rel: str, blame: str | None) -> None:
            self.suppose(ref, blame or rel)

        return walk

    def templates(self, rel: str, scope: Scope, blame: str | None) -> None:
        def found(stem: str, path: str) -> None:
            self.layout.templates.setdefault(scope, {})[stem] = path

        self.documents(rel, blame, "template", lambda stem: template_ref(scope, stem), found)

    def assets(self, rel: str, blame: str | None) -> None:
        entries = self.entries(rel, blame)
        handlers: dict[str, tuple[Kind, Walker | None]] = {
            folder: ("folder", self._asset_folder(kind)) for kind, folder in ASSET_FOLDERS.items()
        }
        for entry in entries or ():
            if self.skipped(entry, blame):
                continue
            handler = handlers.get(entry.name)
            if handler is None:
                names = ", ".join(f"{rel}/{f}/" for f in ASSET_FOLDERS.values())
                self.misnamed(entry, handlers, f"{rel}/", names, blame)
            elif self.expect(entry, "folder", blame):
                assert handler[1] is not None
                handler[1](entry.rel, blame)

    def _asset_folder(self, kind: AssetKind) -> Walker:
        def walk(rel: str, blame: str | None) -> None:
            def found(stem: str, path: str) -> None:
                self.asset_files.setdefault((kind, stem), []).append(path)

            self.documents(rel, blame, f"{kind} asset", lambda stem: asset_ref(kind, stem), found)

        return walk

    def documents(
        self,
        rel: str,
        blame: str | None,
        what: str,
        ref: Callable[[str], Ref],
        found: Callable[[str, str], None],
    ) -> None:
        """A folder of ``NAME.yaml`` documents (templates, or assets of one kind)."""
        entries = self.entries(rel, blame)
        by_stem: dict[str, list[_Entry]] = {}
        for entry in entries or ():
            if self.skipped(entry, blame):
                continue
            stem, suffix = os.path.splitext(entry.name)
            if suffix in YAML_SUFFIXES:
                if self.expect(entry, "file", blame):
                    by_stem.setdefault(stem, []).append(entry)
                else:
                    self.suppose(ref(stem), blame or entry.rel)
            elif suffix.lower() in YAML_SUFFIXES:
                self.error(
                    entry,
                    f"unexpected {entry.kind} {entry.name!r} in {rel}/"
                    f" (did you mean {stem + suffix.lower()!r}?)",
                    f"a {what} as {rel}/NAME.yaml (or .yml, in lower case)",
                    blame,
                )
                self.suppose(ref(stem), blame or entry.rel)
            else:
                self.error(
                    entry,
                    f"unexpected {entry.kind} {entry.name!r} in {rel}/: only YAML files are read here",
                    f"a {what} as {rel}/NAME.yaml (or .yml)",
                    blame,
                )
        for stem, written in by_stem.items():
            chosen = self.one_of(written, f"{what} {stem!r}", blame)
            if chosen is None:
                self.suppose(ref(stem), blame or written[-1].rel)
            elif blame is None:
                found(stem, chosen.rel)
            else:
                self.suppose(ref(stem), blame)

    # -- one entry -----------------------------------------------------------------------------------------

    def entries(self, rel: str, blame: str | None) -> list[_Entry] | None:
        """The entries of the folder ``rel``, sorted; ``None`` (and a problem) if it cannot be listed."""
        listed = self.source.entries(rel)
        if isinstance(listed, Unreadable):
            if blame is None:
                shown = f"{rel}/" if rel else self.source.label
                self.layout.errors.setdefault(rel or ".", []).append(
                    Problem(
                        f"cannot list the folder {shown}: {listed.reason}",
                        (),
                        Location(rel or self.source.label),
                        listed.expected or "a folder the engine may read",
                    )
                )
            return None
        return [
            _Entry(item.name, f"{rel}/{item.name}" if rel else item.name, item.kind)
            for item in sorted(listed, key=lambda e: e.name)
        ]

    def skipped(self, entry: _Entry, blame: str | None) -> bool:
        """Git's files and documentation are skipped; other hidden entries too, with a warning."""
        if entry.name in _GIT or (entry.kind == "file" and is_documentation(entry.name)):
            return True
        if not entry.name.startswith("."):
            return False
        if blame is None:
            self.layout.warnings.append(
                Problem(
                    f"hidden {entry.kind} {entry.name!r} is ignored",
                    (),
                    Location(entry.rel),
                    "no hidden entries besides git's files and a top-level .template-engine/",
                )
            )
        return True

    def expect(self, entry: _Entry, kind: Kind, blame: str | None) -> bool:
        """Whether ``entry`` is a ``kind``; if not, an error."""
        if entry.kind == kind:
            return True
        if entry.kind == "broken link":
            message = f"{entry.name!r} is a broken symbolic link: its target does not exist (or is a loop)"
        elif entry.kind == "special":
            message = f"{entry.name!r} is neither a file nor a folder"
        else:
            message = f"{entry.name!r} must be a {kind}, not a {entry.kind}"
        self.error(entry, message, f"a {kind}", blame)
        return False

    def misnamed(
        self,
        entry: _Entry,
        handlers: Mapping[str, tuple[Kind, Walker | None]],
        where: str,
        expected: str,
        blame: str | None,
    ) -> None:
        """An entry the layout does not have; if it is close to one it has, it stands for that one."""
        close = _close(entry.name, list(handlers))
        hint = f" (did you mean {close!r}?)" if close else ""
        if entry.kind in ("broken link", "special"):
            self.expect(entry, "file", blame)
        else:
            self.error(entry, f"unexpected {entry.kind} {entry.name!r} in {where}{hint}", expected, blame)
        if close is not None:
            kind, walk = handlers[close]
            if walk is not None and kind == entry.kind:
                walk(entry.rel, blame or entry.rel)

    def one_of(self, written: list[_Entry], label: str, blame: str | None) -> _Entry | None:
        """The one file of a name; ``None`` (and an error) when both ``.yaml`` and ``.yml`` are there."""
        if len(written) == 1:
            return written[0]
        if written and blame is None:
            first, *others = written
            for other in others:
                self.layout.errors.setdefault(other.rel, []).append(
                    Problem(
                        f"{label} is written twice: {first.name} and {other.name}",
                        (),
                        Location(other.rel),
                        f"one of {first.name} and {other.name}",
                        (Location(first.rel),),
                    )
                )
        return None

    def error(self, entry: _Entry, message: str, expected: str | None, blame: str | None) -> None:
        if blame is None:
            self.layout.errors.setdefault(entry.rel, []).append(
                Problem(message, (), Location(entry.rel), expected)
            )

    def suppose(self, ref: Ref, rel: str) -> None:
        self.supposed.setdefault(ref, rel)

    def unique_assets(self) -> None:
        """Each asset name once per kind in the whole org: a name written in several scopes is an error on
        every file but the first (naming both), and none of them is read (the compositions that use it fail
        with the error)."""
        for (kind, stem), found in self.asset_files.items():
            paths = sorted(found, key=lambda rel: (depth(asset_scope(rel).type), rel))
            if len(paths) == 1:
                self.layout.assets.setdefault(kind, {})[stem] = paths[0]
                continue
            first, *others = paths
            for other in others:
                self.layout.errors.setdefault(other, []).append(
                    Problem(
                        f"{kind} asset {stem!r} is written twice: {first} and {other}"
                        " (an asset's name is unique per kind in the whole org, whatever its scope)",
                        (),
                        Location(other),
                        f"one of {first} and {other}",
                        (Location(first),),
                    )
                )
            self.suppose(asset_ref(kind, stem), others[0])

    def finish(self) -> Layout:
        """Keep the supposed refs that no real file provides."""
        self.unique_assets()
        layout = self.layout
        real = {defaults_ref(scope) for scope in layout.defaults}
        real |= {policy_ref(scope) for scope in layout.policies}
        real |= {policy_ref(scope, kind) for scope, kind in layout.kind_policies}
        real |= {template_ref(scope, stem) for scope, by in layout.templates.items() for stem in by}
        real |= {asset_ref(kind, stem) for kind, by in layout.assets.items() for stem in by}
        layout.refs = {ref: rel for ref, rel in self.supposed.items() if ref not in real}
        return layout


def _close(name: str, candidates: list[str]) -> str | None:
    """The candidate ``name`` is most likely a misspelling of (ignoring case; ``defaults.json`` is close to
    ``defaults.yaml`` by its stem), if any is close enough."""

    def score(candidate: str) -> float:
        a, b = name.lower(), candidate.lower()
        whole = difflib.SequenceMatcher(None, a, b).ratio()
        stems = difflib.SequenceMatcher(None, os.path.splitext(a)[0], os.path.splitext(b)[0]).ratio()
        return max(whole, stems)

    scored = sorted(((score(c), c) for c in candidates), key=lambda x: -x[0])
    return scored[0][1] if scored and scored[0][0] >= _CLOSE else None
