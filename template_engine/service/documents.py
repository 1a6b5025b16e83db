"""Request documents checked with the engine's own rules, and PATCH semantics.

A template, defaults or asset body passes the same checks as a file of a templates folder (the schema, keyed
list items with their key and no key twice, ``masterSpecSameAsWorker: true`` without a ``master`` section,
one item in a data source asset); every problem is answered at once, with its field path.

PATCH: ``fieldsToClear`` paths (``spec.image``, ``spec.environmentVariables[name=HOME]``, ``master``) are
removed first, then the given fields are merged in: mappings recursively, anything else (lists included)
replaced whole, ``null`` leaves a value as it is.  The result is checked like a full document.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping, Sequence
from typing import Any, TypeVar

from pydantic import BaseModel

from template_engine.compose import SPEC_PLAN
from template_engine.errors import Problem
from template_engine.loader.rules import (
    SPEC_ROOTS,
    datasource_shape,
    master_conflict,
    spec_key_problems,
)
from template_engine.loader.validate import validate
from template_engine.models.documents import (
    ASSET_MODELS,
    AssetKind,
    ComputeAsset,
    DatasourceAsset,
    EnvironmentAsset,
    LayerDocument,
    TemplateDocument,
)
from template_engine.paths import Match, Path, Segment, parse_path
from template_engine.service.errors import bad_request

M = TypeVar("M", bound=BaseModel)
BODY = "request body"


def _checked(model: type[M], data: Any, more: Any = None) -> M:
    """The model, or a 400 with every problem; ``more(doc)`` adds the problems of a well-shaped document."""
    doc, problems = validate(model, data, BODY, {})
    if doc is not None and more is not None:
        problems = list(more(doc))
    if doc is None or problems:
        raise bad_request(problems or [Problem("the document is not valid")])
    return doc


def _rules(data: Mapping[str, Any]) -> list[Problem]:
    return master_conflict(data, BODY, {}) + spec_key_problems(SPEC_PLAN, data, SPEC_ROOTS, BODY, {})


def check_template(data: Any) -> TemplateDocument:
    """A template document (``meta: {name, description?}``, ``spec``, ``assets``, ``master``...)."""
    return _checked(TemplateDocument, data, lambda _doc: _rules(data))


def check_defaults(data: Any) -> LayerDocument:
    return _checked(LayerDocument, data, lambda _doc: _rules(data))


def check_asset(kind: AssetKind, data: Any) -> EnvironmentAsset | ComputeAsset | DatasourceAsset:
    def more(doc: Any) -> list[Problem]:
        if isinstance(doc, DatasourceAsset):
            return datasource_shape(data, BODY, {})
        return spec_key_problems(SPEC_PLAN, data, (("spec",),), BODY, {})

    return _checked(ASSET_MODELS[kind], data, more)


def strip_nulls(value: Any) -> Any:
    """``null`` means "no opinion": it is not stored."""
    if isinstance(value, Mapping):
        return {k: strip_nulls(v) for k, v in value.items() if v is not None}
    if isinstance(value, list):
        return [strip_nulls(v) for v in value]
    return value


# -- PATCH --------------------------------------------------------------------------------------------------


def merge_patch(base: Mapping[str, Any], patch: Mapping[str, Any]) -> dict[str, Any]:
    out = copy.deepcopy(dict(base))
    for key, value in patch.items():
        if value is None:
            continue
        current = out.get(key)
        if isinstance(value, Mapping) and isinstance(current, Mapping):
            out[key] = merge_patch(current, value)
        else:
            out[key] = copy.deepcopy(value)
    return out


def clear_fields(
    doc: Mapping[str, Any], paths: Sequence[str], roots: Sequence[str], protected: Sequence[str] = ()
) -> dict[str, Any]:
    """``doc`` without the values at ``paths``; a path outside ``roots`` or in ``protected`` is a 400."""
    out = copy.deepcopy(dict(doc))
    problems: list[Problem] = []
    parsed: list[Path] = []
    for index, text in enumerate(paths):
        where: Path = ("fieldsToClear", index)
        try:
            path = parse_path(text)
        except ValueError as exc:
            problems.append(Problem(str(exc), where, None, "a field path such as spec.image"))
            continue
        if path[0] not in roots:
            problems.append(
                Problem(f"{text!r} cannot be cleared", where, None, f"a path under {', '.join(roots)}")
            )
        elif text in protected:
            problems.append(Problem(f"{text!r} is required and cannot be cleared", where))
        else:
            parsed.append(path)
    if problems:
        raise bad_request(problems)
    for path in parsed:
        _remove(out, path)
    return out


def _remove(value: Any, path: Path) -> None:
    head: Segment = path[0]
    last = len(path) == 1
    if isinstance(value, dict) and isinstance(head, str) and head in value:
        if last:
            del value[head]
        else:
            _remove(value[head], path[1:])
    elif isinstance(value, list):
        if isinstance(head, int) and 0 <= head < len(value):
            if last:
                del value[head]
            else:
                _remove(value[head], path[1:])
        elif isinstance(head, Match):
            for index, item in enumerate(value):
                if isinstance(item, Mapping) and _matches(item.get(head.field), head.value):
                    if last:
                        del value[index]
                    else:
                        _remove(item, path[1:])
                    break


def _matches(found: Any, wanted: object) -> bool:
    return found == wanted or (found is not None and str(found) == str(wanted))
