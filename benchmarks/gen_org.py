"""Deterministic generator of a large org, for the benchmarks and for anyone who needs one.

The org has ``departments x projects x templates`` (project, template) pairs (4 x 10 x 10 = 400 by default),
every composition four layers deep: system -> department -> project -> template.  At each layer both
``environmentVariables`` and ``labels`` get about 20 changes: the system layer adds ``items`` of each, every
layer above it excludes ``excluded`` inherited items (``exclude: true``, key only), overrides ``overridden``
inherited items by key (same name, new value) and adds ``items - excluded - overridden`` new ones.  Which
inherited keys a layer touches is drawn from a random generator seeded by ``seed`` and the layer's name, so
the same shape always gives byte-identical files.

The same changes can also be written as kustomize base -> overlay chains (``write_kustomize``):

==================================  ==========================================================================
template_engine                     kustomize
==================================  ==========================================================================
``system/defaults.yaml``            ``kustomize/base``: a ``batch/v1`` Job whose ``metadata.labels`` and whose
                                    container ``env`` hold the system items (plus the image)
``departments/D/defaults.yaml``     ``kustomize/departments/D``: ``resources: [base]`` + one strategic-merge
``projects/P/defaults.yaml``        patch; ``kustomize/projects/P``: ``resources: [departments/D]`` + patch
``projects/P/templates/T.yaml``     ``kustomize/templates/P/T``: ``resources: [projects/P]`` + patch, and a
                                    ``nameSuffix`` so that all 400 can be built in one kustomization
env item ``{name, value}``          ``env: [{name, value}]`` in the patch (merged by ``name``)
env item ``{name, exclude: true}``  ``env: [{name, $patch: delete}]``
label ``{name, value}``             ``metadata.labels: {name: value}``
label ``{name, exclude: true}``     ``metadata.labels: {name: null}``
template ``distributedFramework``,  Job ``spec.parallelism``, ``spec.completions`` (two scalars each side)
``numWorkers``
==================================  ==========================================================================

``kustomize/all`` is one kustomization listing every template overlay as a resource (one process for all
pairs).  :meth:`GeneratedOrg.expected` gives the effective env and labels of a pair, computed independently of
both tools, so a benchmark can check that both sides built the same thing.

Run ``python benchmarks/gen_org.py OUT`` to write both trees into ``OUT/templates`` and ``OUT/kustomize``.
"""

from __future__ import annotations

import argparse
import random
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

#: ``None`` as a value means "excluded" (engine: ``exclude: true``; kustomize: ``$patch: delete`` / null).
Change = tuple[str, str | None]

#: libyaml's emitter when PyYAML has it (same bytes as the Python one for these documents, 6x faster).
_DUMPER: Any = getattr(yaml, "CSafeDumper", yaml.SafeDumper)

IMAGE = "nvcr.io/nvidia/pytorch:24.05-py3"
JOB_NAME = "train"
CONTAINER = "main"


@dataclass(frozen=True, slots=True)
class Shape:
    """How big the generated org is; the defaults give 400 pairs with 20 changes per list per layer."""

    departments: int = 4
    projects: int = 10  # per department
    templates: int = 10  # per project
    items: int = 20  # changes per keyed list per layer
    excluded: int = 5  # of them exclusions of inherited keys (layers above system)
    overridden: int = 7  # of them overrides of inherited keys (layers above system)
    seed: int = 20240601

    @property
    def added(self) -> int:
        return self.items - self.excluded - self.overridden

    @property
    def pairs(self) -> int:
        return self.departments * self.projects * self.templates


#: The two org shapes the benchmarks measure (issue 20): ``deep``, few projects of many templates (10 per
#: project), and ``wide``, many small projects of one template each, each with its own defaults.
SHAPES = ("deep", "wide")


def shape_for(pairs: int, seed: int = Shape.seed, kind: str = "deep") -> Shape:
    """The org of ``pairs`` (project, template) pairs, as the benchmarks size them.

    ``deep`` (the default): 10 templates per project, 10 projects per department up to 1,600 pairs (1
    department at 100, 4 at 400, 16 at 1,600), then 16 departments of more projects (40 each at 6,400).
    ``wide`` (issue 20's "many small projects each with its own defaults"): one template per project, 50
    projects per department (2 departments at 100, 8 at 400, 32 at 1,600): 2 files per pair."""
    if kind == "wide":
        if pairs % 50:
            raise ValueError(f"{pairs} pairs is not a multiple of 50 (projects per department, wide shape)")
        return Shape(departments=pairs // 50, projects=50, templates=1, seed=seed)
    if kind != "deep":
        raise ValueError(f"unknown shape {kind!r}: one of {', '.join(SHAPES)}")
    if pairs % 10:
        raise ValueError(f"{pairs} pairs is not a multiple of 10 (templates per project)")
    projects = pairs // 10
    departments = max(1, projects // 10) if projects <= 160 else 16
    if projects % departments:
        raise ValueError(f"{pairs} pairs do not split into {departments} departments")
    return Shape(departments=departments, projects=projects // departments, templates=10, seed=seed)


@dataclass(frozen=True, slots=True)
class LayerChanges:
    """One layer's changes, in the order the layer writes them."""

    tag: str
    env: tuple[Change, ...]
    labels: tuple[Change, ...]


@dataclass(frozen=True, slots=True)
class Pair:
    department: str
    project: str
    template: str


@dataclass
class GeneratedOrg:
    shape: Shape
    system: LayerChanges
    departments: dict[str, LayerChanges] = field(default_factory=dict)
    #: project -> (its department, its changes)
    projects: dict[str, tuple[str, LayerChanges]] = field(default_factory=dict)
    #: (project, template) -> changes
    templates: dict[tuple[str, str], LayerChanges] = field(default_factory=dict)

    def pairs(self) -> list[Pair]:
        return [Pair(self.projects[p][0], p, t) for p, t in self.templates]

    def chain(self, pair: Pair) -> tuple[LayerChanges, ...]:
        return (
            self.system,
            self.departments[pair.department],
            self.projects[pair.project][1],
            self.templates[(pair.project, pair.template)],
        )

    def expected(self, pair: Pair) -> tuple[dict[str, str], dict[str, str]]:
        """The effective ``(env, labels)`` of a pair as name -> value (order aside)."""
        env: dict[str, str] = {}
        labels: dict[str, str] = {}
        for layer in self.chain(pair):
            for out, changes in ((env, layer.env), (labels, layer.labels)):
                for name, value in changes:
                    if value is None:
                        del out[name]
                    else:
                        out[name] = value
        return env, labels


# -- generation ----------------------------------------------------------------------------------------------


def _env_name(tag: str, index: int) -> str:
    return f"{tag.upper().replace('-', '_')}_VAR_{index:02d}"


def _label_name(tag: str, index: int) -> str:
    return f"{tag}-label-{index:02d}"


def _env_value(tag: str, index: int) -> str:
    return f"https://svc.{tag}.acme.internal/v{index}"


def _label_value(tag: str, index: int) -> str:
    return f"{tag}-v{index}"


def _changes(rng: random.Random, tag: str, inherited: list[str], shape: Shape, env: bool) -> list[Change]:
    naming, valuing = (_env_name, _env_value) if env else (_label_name, _label_value)
    if not inherited:  # the system layer: everything is new
        return [(naming(tag, i), valuing(tag, i)) for i in range(shape.items)]
    excluded = rng.sample(inherited, shape.excluded)
    rest = [name for name in inherited if name not in excluded]
    overridden = rng.sample(rest, shape.overridden)
    changes: list[Change] = [(name, None) for name in excluded]
    changes += [(name, valuing(tag, 100 + i)) for i, name in enumerate(overridden)]
    changes += [(naming(tag, i), valuing(tag, i)) for i in range(shape.added)]
    rng.shuffle(changes)
    return changes


def _apply(live: list[str], changes: list[Change]) -> list[str]:
    gone = {name for name, value in changes if value is None}
    out = [name for name in live if name not in gone]
    out += [name for name, value in changes if value is not None and name not in out]
    return out


def _layer(shape: Shape, tag: str, parent: tuple[list[str], list[str]]) -> tuple[LayerChanges, Any]:
    rng = random.Random(f"{shape.seed}:{tag}")
    env = _changes(rng, tag, parent[0], shape, env=True)
    labels = _changes(rng, tag, parent[1], shape, env=False)
    return LayerChanges(tag, tuple(env), tuple(labels)), (_apply(parent[0], env), _apply(parent[1], labels))


def generate(shape: Shape | None = None) -> GeneratedOrg:
    """The org's changes, in memory; :func:`write_org` and :func:`write_kustomize` write them out."""
    shape = shape or Shape()
    system, sys_live = _layer(shape, "sys", ([], []))
    org = GeneratedOrg(shape, system)
    for d in range(shape.departments):
        dept = f"d{d:02d}"
        org.departments[dept], dept_live = _layer(shape, dept, sys_live)
        for p in range(shape.projects):
            project = f"{dept}-p{p:02d}"
            changes, project_live = _layer(shape, project, dept_live)
            org.projects[project] = (dept, changes)
            for t in range(shape.templates):
                template = f"t{t:02d}"
                org.templates[(project, template)], _ = _layer(shape, f"{project}-{template}", project_live)
    return org


# -- the template_engine tree --------------------------------------------------------------------------------


def _items(changes: tuple[Change, ...]) -> list[dict[str, Any]]:
    return [
        {"name": name, "exclude": True} if value is None else {"name": name, "value": value}
        for name, value in changes
    ]


def _spec(layer: LayerChanges) -> dict[str, Any]:
    return {"environmentVariables": _items(layer.env), "labels": _items(layer.labels)}


def _dump(path: Path, data: Any, comment: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    text = yaml.dump(data, Dumper=_DUMPER, sort_keys=False, default_flow_style=False, width=200)
    path.write_text(f"# {comment}\n{text}", encoding="utf-8")


def engine_files(org: GeneratedOrg) -> Iterator[tuple[str, Any, str]]:
    """``(relative path, document, comment)`` for every file of the templates folder."""
    departments: dict[str, list[str]] = {}
    for project, (dept, _) in org.projects.items():
        departments.setdefault(dept, []).append(project)
    yield (
        "org.yaml",
        {"departments": [{"name": d, "projects": ps} for d, ps in departments.items()]},
        "generated by benchmarks/gen_org.py",
    )
    yield (
        "system/defaults.yaml",
        {"spec": {"image": IMAGE, **_spec(org.system)}},
        "layer 1: system defaults",
    )
    for dept, changes in org.departments.items():
        yield f"departments/{dept}/defaults.yaml", {"spec": _spec(changes)}, "layer 2: department defaults"
    for project, (_, changes) in org.projects.items():
        yield f"projects/{project}/defaults.yaml", {"spec": _spec(changes)}, "layer 3: project defaults"
    for (project, template), changes in org.templates.items():
        doc = {
            "meta": {"name": template, "description": f"generated template {template} of {project}"},
            "spec": {"distributedFramework": "PyTorch", "numWorkers": 2, **_spec(changes)},
        }
        yield f"projects/{project}/templates/{template}.yaml", doc, "layer 4: the template"


def write_org(org: GeneratedOrg, root: Path) -> list[Path]:
    """Write the templates folder (``org.yaml``, system, departments, projects) at ``root``."""
    written = []
    for rel, doc, comment in engine_files(org):
        _dump(root / rel, doc, comment)
        written.append(root / rel)
    return written


# -- the kustomize tree --------------------------------------------------------------------------------------


def _env_patch(changes: tuple[Change, ...]) -> list[dict[str, Any]]:
    return [
        {"name": name, "$patch": "delete"} if value is None else {"name": name, "value": value}
        for name, value in changes
    ]


def _patch(layer: LayerChanges, extra: dict[str, Any] | None = None) -> dict[str, Any]:
    return {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {"name": JOB_NAME, "labels": dict(layer.labels)},
        "spec": {
            **(extra or {}),
            "template": {"spec": {"containers": [{"name": CONTAINER, "env": _env_patch(layer.env)}]}},
        },
    }


def _kustomization(resources: list[str], patch: bool, suffix: str | None = None) -> dict[str, Any]:
    doc: dict[str, Any] = {
        "apiVersion": "kustomize.config.k8s.io/v1beta1",
        "kind": "Kustomization",
        "resources": resources,
    }
    if suffix is not None:
        doc["nameSuffix"] = suffix
    if patch:
        doc["patches"] = [{"path": "patch.yaml"}]
    return doc


def kustomize_files(org: GeneratedOrg) -> Iterator[tuple[str, Any, str]]:
    """``(relative path, document, comment)`` for every file of the kustomize tree."""
    base = {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {"name": JOB_NAME, "labels": dict(org.system.labels)},
        "spec": {
            "template": {
                "spec": {
                    "restartPolicy": "Never",
                    "containers": [
                        {"name": CONTAINER, "image": IMAGE, "env": _items(org.system.env)},
                    ],
                }
            }
        },
    }
    yield "base/job.yaml", base, "layer 1: system (the base resource)"
    yield "base/kustomization.yaml", _kustomization(["job.yaml"], patch=False), "layer 1: system"
    for dept, changes in org.departments.items():
        yield f"departments/{dept}/patch.yaml", _patch(changes), "layer 2: department overlay"
        yield (
            f"departments/{dept}/kustomization.yaml",
            _kustomization(["../../base"], patch=True),
            "layer 2: department overlay",
        )
    for project, (dept, changes) in org.projects.items():
        yield f"projects/{project}/patch.yaml", _patch(changes), "layer 3: project overlay"
        yield (
            f"projects/{project}/kustomization.yaml",
            _kustomization([f"../../departments/{dept}"], patch=True),
            "layer 3: project overlay",
        )
    for (project, template), changes in org.templates.items():
        where = f"templates/{project}/{template}"
        yield (
            f"{where}/patch.yaml",
            _patch(changes, {"parallelism": 2, "completions": 2}),
            "layer 4: template overlay",
        )
        yield (
            f"{where}/kustomization.yaml",
            _kustomization([f"../../../projects/{project}"], patch=True, suffix=f"-{project}-{template}"),
            "layer 4: template overlay",
        )
    yield (
        "all/kustomization.yaml",
        _kustomization([f"../{kustomize_chain(pair)}" for pair in org.pairs()], patch=False),
        "every (project, template) chain in one build",
    )


def kustomize_chain(pair: Pair) -> str:
    """The folder (relative to the kustomize root) whose build is the pair's effective Job."""
    return f"templates/{pair.project}/{pair.template}"


def write_kustomize(org: GeneratedOrg, root: Path) -> list[Path]:
    """Write the kustomize base -> overlay chains at ``root``."""
    written = []
    for rel, doc, comment in kustomize_files(org):
        _dump(root / rel, doc, comment)
        written.append(root / rel)
    return written


def main(argv: list[str] | None = None) -> None:
    default = Shape()
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("out", type=Path, help="folder to write templates/ and kustomize/ into")
    parser.add_argument("--pairs", type=int, default=None, help="the size (e.g. 6400), instead of the three")
    parser.add_argument("--departments", type=int, default=default.departments)
    parser.add_argument("--projects", type=int, default=default.projects, help="per department")
    parser.add_argument("--templates", type=int, default=default.templates, help="per project")
    parser.add_argument("--shape", choices=SHAPES, default="deep", help="with --pairs: which org shape")
    parser.add_argument("--seed", type=int, default=default.seed)
    parser.add_argument("--no-kustomize", action="store_true", help="write only the templates folder")
    args = parser.parse_args(argv)
    shape = (
        shape_for(args.pairs, args.seed, args.shape)
        if args.pairs is not None
        else Shape(args.departments, args.projects, args.templates, seed=args.seed)
    )
    org = generate(shape)
    files = write_org(org, args.out / "templates")
    if not args.no_kustomize:
        files += write_kustomize(org, args.out / "kustomize")
    print(f"{shape.pairs} (project, template) pairs, {len(files)} files under {args.out}")


if __name__ == "__main__":
    main()
