"""Read a templates folder into an :class:`~template_engine.org.Org`: the only module that reads files.

Layout (DESIGN.md, and :mod:`template_engine.loader.layout` for every rule): ``org.yaml``; ``system/``,
``departments/D/`` and ``projects/P/``, each with ``defaults.yaml`` and ``templates/T.yaml``;
``assets/{environments,computes,datasources}/NAME.yaml``.  Every file is read once; a file with problems, and
an entry that breaks the layout, is recorded in ``Org.broken`` (so ``validate`` can list all of them and a
composition that needs it fails with them), never skipped silently.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path as FsPath

from template_engine.compose import SPEC_PLAN
from template_engine.errors import InputError, Location, Problem
from template_engine.loader.layout import read_layout
from template_engine.loader.rules import (
    SPEC_ROOTS,
    asset_refs,
    datasource_shape,
    master_conflict,
    spec_key_problems,
)
from template_engine.loader.validate import locate, validate
from template_engine.loader.yaml_safe import load_yaml
from template_engine.models.documents import (
    ASSET_FOLDERS,
    ASSET_MODELS,
    AssetKind,
    DatasourceAsset,
    LayerDocument,
    OrgDocument,
    TemplateDocument,
)
from template_engine.org import (
    Asset,
    Defaults,
    Org,
    Scope,
    Source,
    Template,
    asset_ref,
    defaults_ref,
    template_ref,
)


def read_source(root: FsPath, rel: str) -> tuple[Source | None, list[Problem]]:
    """Read and parse one file; ``rel`` (relative to ``root``, POSIX) names it in every message."""
    try:
        raw = (root / rel).read_bytes()
        text = raw.decode("utf-8")
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
    except OSError as exc:
        return None, [Problem(f"cannot read file: {exc.strerror}", (), Location(rel))]
    try:
        loaded = load_yaml(text, rel)
    except InputError as exc:
        return None, list(exc.problems)
    data = loaded.data if loaded.data is not None else {}
    if not isinstance(data, Mapping):
        return None, [Problem("document must be a mapping", (), Location(rel, 1, 1), "a YAML mapping")]
    return Source(rel, data, loaded.lines), []


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


def load_defaults(root: FsPath, rel: str, scope: Scope) -> tuple[Defaults | None, list[Problem]]:
    source, problems = read_source(root, rel)
    if source is None:
        return None, problems
    doc, problems = validate(LayerDocument, source.data, rel, source.lines)
    if doc is None:
        return None, problems
    problems = master_conflict(source.data, rel, source.lines)
    problems += spec_key_problems(SPEC_PLAN, source.data, SPEC_ROOTS, rel, source.lines)
    return (None if problems else Defaults(scope, source, doc)), problems


def load_template(root: FsPath, rel: str, scope: Scope) -> tuple[Template | None, list[Problem]]:
    source, problems = read_source(root, rel)
    if source is None:
        return None, problems
    doc, problems = validate(TemplateDocument, source.data, rel, source.lines)
    if doc is None:
        return None, problems
    stem = FsPath(rel).stem
    problems = _name_matches_file(source, doc.meta.name, stem, "template")
    problems += master_conflict(source.data, rel, source.lines)
    problems += spec_key_problems(SPEC_PLAN, source.data, SPEC_ROOTS, rel, source.lines)
    return (None if problems else Template(stem, scope, source, doc)), problems


def load_asset(root: FsPath, rel: str, kind: AssetKind) -> tuple[Asset | None, list[Problem]]:
    source, problems = read_source(root, rel)
    if source is None:
        return None, problems
    doc, problems = validate(ASSET_MODELS[kind], source.data, rel, source.lines)
    if doc is None:
        return None, problems
    stem = FsPath(rel).stem
    problems = _name_matches_file(source, doc.meta.name, stem, f"{kind} asset")
    if isinstance(doc, DatasourceAsset):
        problems += datasource_shape(source.data, rel, source.lines)
    else:
        problems += spec_key_problems(SPEC_PLAN, source.data, (("spec",),), rel, source.lines)
    return (None if problems else Asset(kind, stem, source, doc)), problems


def _org_document(root: FsPath) -> OrgDocument:
    if not (root / "org.yaml").is_file():
        other = " (org.yml is there: the org file is always org.yaml)" if (root / "org.yml").is_file() else ""
        raise InputError(
            [
                Problem(
                    f"no org.yaml in the templates folder{other}",
                    (),
                    Location(str(root)),
                    "org.yaml naming the departments and their projects",
                )
            ]
        )
    source, problems = read_source(root, "org.yaml")
    if source is None:
        raise InputError(problems)
    doc, problems = validate(OrgDocument, source.data, "org.yaml", source.lines)
    if doc is None:
        raise InputError(problems)
    seen: dict[str, str] = {}
    for d_index, dept in enumerate(doc.departments):
        if dept.name in {d.name for d in doc.departments[:d_index]}:
            problems.append(
                Problem(
                    f"department {dept.name!r} is listed twice",
                    ("departments", d_index),
                    locate("org.yaml", source.lines, ("departments", d_index)),
                )
            )
        for p_index, project in enumerate(dept.projects):
            if project in seen:
                problems.append(
                    Problem(
                        f"project {project!r} is listed in {seen[project]!r} and {dept.name!r}",
                        ("departments", d_index, "projects", p_index),
                        locate("org.yaml", source.lines, ("departments", d_index, "projects", p_index)),
                        "project names unique across the org",
                    )
                )
            seen[project] = dept.name
    if problems:
        raise InputError(problems)
    return doc


DEFAULT_ROOT = FsPath("templates")


def resolve_root(root: FsPath) -> FsPath:
    """The folder to read: ``root``, or the current folder when ``root`` is the default ``templates``, that
    folder does not exist, and the current folder holds ``org.yaml`` (a command run inside the folder)."""
    if root == DEFAULT_ROOT and not root.is_dir() and FsPath("org.yaml").is_file():
        return FsPath(".")
    return root


def load_org(root: FsPath) -> Org:
    """Read the whole templates folder at ``root``.

    Raises :class:`InputError` only when the folder or ``org.yaml`` is unusable; problems of other files are
    recorded in ``Org.broken``.
    """
    if not root.is_dir():
        raise InputError(
            [
                Problem(
                    f"templates folder {str(root)!r} does not exist",
                    (),
                    None,
                    "--root pointing at a folder with org.yaml",
                )
            ]
        )
    org_doc = _org_document(root)
    departments = {d.name: tuple(d.projects) for d in org_doc.departments}
    layout = read_layout(root, departments)
    broken: dict[str, tuple[Problem, ...]] = {rel: tuple(ps) for rel, ps in layout.errors.items()}
    refs: dict[tuple[str, ...], str] = dict(layout.refs)
    defaults: dict[Scope, Defaults] = {}
    templates: dict[Scope, dict[str, Template]] = {}

    def note(rel: str, problems: list[Problem], ref: tuple[str, ...]) -> None:
        if problems:
            broken[rel] = tuple(problems)
            refs[ref] = rel

    for scope, rel in layout.defaults.items():
        entry, problems = load_defaults(root, rel, scope)
        note(rel, problems, defaults_ref(scope))
        if entry is not None:
            defaults[scope] = entry
    for scope, by_stem in layout.templates.items():
        for stem, trel in by_stem.items():
            template, problems = load_template(root, trel, scope)
            note(trel, problems, template_ref(scope, stem))
            if template is not None:
                templates.setdefault(scope, {})[template.name] = template

    assets: dict[AssetKind, dict[str, Asset]] = {}
    for kind, by_stem in layout.assets.items():
        for stem, arel in by_stem.items():
            asset, problems = load_asset(root, arel, kind)
            note(arel, problems, asset_ref(kind, stem))
            if asset is not None:
                assets.setdefault(kind, {})[asset.name] = asset
    return Org(departments, defaults, templates, assets, broken, refs, tuple(layout.warnings))


def reference_problems(org: Org) -> list[Problem]:
    """Templates that refer to assets the org does not have (a broken asset file reports its own problems)."""
    problems = []
    for by_name in org.templates.values():
        for template in by_name.values():
            for kind, name, path in asset_refs(template.doc):
                if name not in org.assets.get(kind, {}) and asset_ref(kind, name) not in org.broken_refs:
                    problems.append(
                        Problem(
                            f"unknown {kind} asset {name!r}",
                            path,
                            locate(template.source.file, template.source.lines, path),
                            f"a file assets/{ASSET_FOLDERS[kind]}/{name}.yaml",
                        )
                    )
    return problems
