"""Document rules beyond the schema, shared by the templates folder and the service's request bodies.

Each rule takes a parsed document, the name it is known by (a file, or ``request body``) and its line map,
and returns every problem it finds.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace
from typing import Any

from template_engine.errors import Problem
from template_engine.loader.validate import key_problems, locate
from template_engine.loader.values import (
    MAX_VALUES,
    document_value_problems,
    measure_values,
    specs_of,
    text_length_problems,
    too_many_values,
)
from template_engine.merge.plan import SPEC_PLAN, PlanNode
from template_engine.models.documents import DatasourceAsset, LayerDocument, TemplateDocument
from template_engine.paths import Path

Lines = Mapping[Path, tuple[int, int]]

#: Where the specs of a defaults or template document sit.
SPEC_ROOTS: tuple[tuple[str, ...], ...] = (("spec",), ("master", "spec"))


def master_conflict(data: Mapping[str, Any], file: str, lines: Lines) -> list[Problem]:
    """``masterSpecSameAsWorker: true`` together with a ``master`` section."""
    if data.get("masterSpecSameAsWorker") is True and data.get("master") is not None:
        return [
            Problem(
                "masterSpecSameAsWorker is true and a master section is given",
                ("master",),
                locate(file, lines, ("master",)),
                "masterSpecSameAsWorker: false, or no master section",
            )
        ]
    return []


def spec_key_problems(
    plan: PlanNode, data: Mapping[str, Any], roots: tuple[tuple[str, ...], ...], file: str, lines: Lines
) -> list[Problem]:
    """Keyed-list items without their key, and keys given twice, in each spec of the document."""
    return [p for root, spec in specs_of(data, roots) for p in key_problems(plan, spec, root, file, lines)]


def datasource_shape(data: Mapping[str, Any], file: str, lines: Lines) -> list[Problem]:
    """A data source asset holds exactly one item under exactly one storage kind."""
    spec = data.get("spec")
    storage = spec.get("storage") if isinstance(spec, Mapping) else None
    items = [(k, len(v)) for k, v in (storage or {}).items() if v]
    if len(items) == 1 and items[0][1] == 1:
        return []
    return [
        Problem(
            "a data source asset holds exactly one item under one storage kind",
            ("spec", "storage"),
            locate(file, lines, ("spec", "storage")),
            "spec.storage.<kind>: [one item]",
        )
    ]


def document_rules(model: type[object], data: Mapping[str, Any], file: str, lines: Lines) -> list[Problem]:
    """The rules a defaults, template or asset document of ``model`` must follow beyond its schema, the same
    at every door (a file, a revision, ``db import``, a request body, a UI form): ``masterSpecSameAsWorker``
    without a ``master`` section, keyed-list items with their key and no key twice, one item in a data
    source, the length of every text (:data:`~.values.TEXT_BOUNDS`) and the values Run:ai's API refuses
    (:mod:`.values`).  ``file`` and ``lines`` locate them.
    A document of more than :data:`~.values.MAX_VALUES` values has that one problem: nothing more of it is
    read."""
    count, long = measure_values(data)
    if count > MAX_VALUES:
        return [replace(too_many_values(count), location=locate(file, lines, ()))]
    roots = SPEC_ROOTS if issubclass(model, LayerDocument | TemplateDocument) else (("spec",),)
    if issubclass(model, DatasourceAsset):  # its one item is named by the asset, not by a key
        problems = datasource_shape(data, file, lines)
    else:
        problems = master_conflict(data, file, lines) if roots is SPEC_ROOTS else []
        problems += spec_key_problems(SPEC_PLAN, data, roots, file, lines)
    problems += text_length_problems(data, roots, long, file, lines)
    return problems + document_value_problems(data, roots, file, lines)
