"""``policy``: the effective policy of a scope, in Run:ai's ``effective`` shape; ``kinds``: a scope's policy
side and rules compared across the workload kinds."""

from __future__ import annotations

import json
from pathlib import Path as FsPath
from typing import Any

import click

from template_engine.across_kinds import (
    FieldAcrossKinds,
    KindSide,
    article,
    differing_fields,
    field_across_kinds,
)
from template_engine.cli.conventions import say
from template_engine.cli.options import emit, fail, output_option, root_option
from template_engine.cli.pick import cluster_option
from template_engine.errors import TemplateEngineError
from template_engine.kinds import DISTRIBUTED, KIND_BY_NAME, KINDS, kinds_with_field
from template_engine.layers import effective_policy
from template_engine.loader.tree import load_org, resolve_root
from template_engine.org import Scope
from template_engine.paths import parse_path
from template_engine.policy.effective import effective_shape
from template_engine.scopes import LEVEL_BY_TYPE
from template_engine.suggest import closest, did_you_mean
from template_engine.views.model import seen_from

__all__ = ["kinds", "policy"]


def source_of_rule(scope: Scope) -> dict[str, Any]:
    """Run:ai's ``sourceOfRule``: the scope, and the cluster, department or project it names (by name here),
    in its level's id field."""
    level = LEVEL_BY_TYPE[scope.type]
    out: dict[str, Any] = {"scope": level.runai_scope}
    if level.id_field is not None:
        out[level.id_field] = scope.name
    return out


@click.command()
@root_option
@click.option("--project", "-p", help="The effective policy of this project (system, department, project).")
@click.option("--department", "-d", help="The effective policy of this department (system, department).")
@cluster_option
@click.option(
    "--kind",
    "-k",
    "kind_name",
    type=click.Choice([kind.name for kind in KINDS]),
    default=DISTRIBUTED.name,
    show_default=True,
    help="The workload kind whose policies are read (each kind has its own: training-policy.yaml...).",
)
@output_option("yaml")
def policy(
    root: FsPath,
    project: str | None,
    department: str | None,
    cluster: str | None,
    kind_name: str,
    output: str,
) -> None:
    """Print the effective policy of a scope: every rule with its sourceOfRule, and the imposed assets."""
    try:
        org = load_org(resolve_root(root))
        view = org.view_of(project, department, cluster)
        kind = KIND_BY_NAME[kind_name]
        shape = effective_shape(effective_policy(org, view, kind), source_of_rule)
    except TemplateEngineError as exc:
        fail(exc)
    nearest = LEVEL_BY_TYPE[view.nearest.type]
    scope: dict[str, Any] = {"scope": nearest.runai_scope}
    if view.cluster is not None:
        scope["clusterId"] = view.cluster
    if view.department is not None:
        scope["departmentId"] = view.department
    if view.project is not None:
        scope["projectId"] = view.project
    emit({"meta": scope, "effective": shape}, output)


# -- kinds --------------------------------------------------------------------------------------------------


def _side_lines(side: KindSide, width: int) -> list[str]:
    """One kind's block of ``kinds FIELD``: its value and who set it, then what is imposed and the rules."""
    pad = " " * (width + 2)
    head = side.name.ljust(width)
    if side.problems:
        return [f"{head}  fails to compose its policy side:"] + [
            f"{pad}{p.one_line()}" for p in side.problems
        ]
    if not side.has_field:
        lines = [f"{head}  not a field of {article(side.kind.noun)}"]
        lines += [f"{pad}{n.message()} ({n.location.with_layer()})" for n in side.not_applied]
        return lines
    if side.is_set:
        where = "; ".join(f"{place.layer}, {place.place()}" for place in side.locations)
        where = f"  ({where})" if where else ""
        lines = [f"{head}  = {json.dumps(side.value, sort_keys=True, ensure_ascii=False)}{where}"]
    else:
        lines = [f"{head}  not set"]
    lines += [f"{pad}imposed: {line}" for line in side.imposed_lines()]
    lines += [f"{pad}rule: {line}" for line in side.rule_lines()]
    return lines


def _alike(across: FieldAcrossKinds) -> list[str]:
    """``the same for every kind``, or the kinds that are alike, a line per group."""
    if not across.differs:
        return ["the same for every kind"]
    groups = across.groups()
    return ["differs:"] + [f"  {', '.join(side.name for side in group)}: {text}" for group, text in groups]


def _cell(side: KindSide, width: int = 40) -> str:
    text = side.summary()
    return text if len(text) <= width else text[: width - 3] + "..."


def _kinds_table(rows: list[FieldAcrossKinds]) -> list[str]:
    """The fields where the kinds differ, a column per kind."""
    head = ("FIELD", *(side.name.upper() for side in rows[0].sides))
    table = [(row.field, *(_cell(side) for side in row.sides)) for row in rows]
    widths = [max(len(x) for x in col) for col in zip(head, *table, strict=True)]
    return [
        "  ".join(x.ljust(w) for x, w in zip(line, widths, strict=True)).rstrip() for line in (head, *table)
    ]


@click.command()
@root_option
@click.option("--project", "-p", help="As seen from this project (system, department, project).")
@click.option("--department", "-d", help="As seen from this department (no project).")
@cluster_option
@click.argument("field", required=False)
@output_option("text")
def kinds(
    root: FsPath,
    project: str | None,
    department: str | None,
    cluster: str | None,
    field: str | None,
    output: str,
) -> None:
    """Compare the workload kinds of a scope: FIELD's policy-side value, imposed assets and rules per kind.

    The policy side of a kind is what every template of that kind seen from the scope starts from: the
    scope defaults for the kind and the data sources its policies impose, with its effective policy's rules.
    Without FIELD, every field where the kinds differ.  Exit status 0 (2 on bad input).
    """
    try:
        path = parse_path(field) if field else ()
    except ValueError as exc:
        raise click.BadParameter(str(exc), param_hint="FIELD") from None
    try:
        org = load_org(resolve_root(root))
        view = org.view_of(project, department, cluster)
    except TemplateEngineError as exc:
        fail(exc)
    where = seen_from(view)
    if path and not kinds_with_field(tuple(str(step) for step in path[:1])):
        names = sorted({name for kind in KINDS for name in kind.fields()})
        raise click.BadParameter(
            f"{path[0]!r} is a field of no kind's spec{did_you_mean(closest(str(path[0]), names))}",
            param_hint="FIELD",
        )
    if path:
        across = field_across_kinds(org, view, path)
        if output != "text":
            emit({"seenFrom": where, **across.to_dict()}, output)
            return
        width = max(len(side.name) for side in across.sides)
        say(f"{across.field}: the policy side of each kind, as seen from {where}")
        say("")
        for side in across.sides:
            for line in _side_lines(side, width):
                say(line)
        say("")
        for line in _alike(across):
            say(line)
        return
    rows = differing_fields(org, view)
    if output != "text":
        emit({"seenFrom": where, "fields": [row.to_dict() for row in rows]}, output)
        return
    if not rows:
        say(f"the kinds' policy sides are alike in every field, as seen from {where}")
        return
    say(f"{len(rows)} field(s) where the kinds' policy sides differ, as seen from {where}:")
    say("")
    for line in _kinds_table(rows):
        say(line)
