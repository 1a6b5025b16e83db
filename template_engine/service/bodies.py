"""Request bodies checked whole: every problem of a body at once, not one stage at a time.

Most routes let FastAPI validate their body against its model.  The template and workload writes check their
bodies themselves, so that one 400 lists everything wrong with a request: the schema problems, the rules
beyond the schema (keyed lists, ``masterSpecSameAsWorker`` with a master), unknown scopes, assets, projects
and templates, and for a workload every runnable issue of what remains.  To check what depends on a part
of the body, the parts the schema refuses are :func:`pruned` first, so that one wrong value does not hide
the problems of the rest.

The OpenAPI document still names each body's model (:func:`documented`, collected in :data:`BODY_MODELS` and
added to the components by the app).
"""

from __future__ import annotations

import copy
from collections.abc import Iterable
from typing import Any, TypeVar

from pydantic import BaseModel, ValidationError

from template_engine.errors import Problem
from template_engine.paths import Path
from template_engine.service.errors import bad_request, validation_problems

M = TypeVar("M", bound=BaseModel)

#: The models of the bodies routes check themselves, for the OpenAPI document's components.
BODY_MODELS: list[type[BaseModel]] = []


def documented(model: type[BaseModel]) -> dict[str, Any]:
    """The ``openapi_extra`` of a route that checks its body itself: ``model`` is its request body."""
    if model not in BODY_MODELS:
        BODY_MODELS.append(model)
    schema = {"$ref": f"#/components/schemas/{model.__name__}"}
    return {"requestBody": {"required": True, "content": {"application/json": {"schema": schema}}}}


def schema_problems(model: type[BaseModel], data: Any) -> list[Problem]:
    """Every problem ``model`` finds in ``data``, worded as FastAPI's validation of a body would be."""
    try:
        model.model_validate(data)
    except ValidationError as exc:
        errors = [{**e, "loc": ("body", *e["loc"])} for e in exc.errors(include_url=False)]
        return validation_problems(errors, data, model)
    return []


def valid(model: type[M], data: Any) -> M | None:
    """``data`` as ``model``, or ``None`` when it is not one (its problems are reported elsewhere)."""
    try:
        return model.model_validate(data)
    except ValidationError:
        return None


def pruned(data: Any, problems: Iterable[Problem]) -> Any:
    """A copy of ``data`` without the value at each problem's path (missing fields stay missing)."""
    out = copy.deepcopy(data)
    paths = {p.path for p in problems if p.path}
    # The deepest and the last list items first, so that removing one never shifts another's path.
    for path in sorted(paths, key=_order, reverse=True):
        _drop(out, path)
    return out


def _order(path: Path) -> tuple[tuple[int, int, str], ...]:
    return tuple((0, s, "") if isinstance(s, int) else (1, 0, str(s)) for s in path)


def _has(value: Any, part: object) -> bool:
    if isinstance(value, dict):
        return isinstance(part, str) and part in value
    return isinstance(value, list) and isinstance(part, int) and 0 <= part < len(value)


def _drop(value: Any, path: Path) -> None:
    for part in path[:-1]:
        if not _has(value, part):
            return
        value = value[part]
    if _has(value, path[-1]):
        del value[path[-1]]


def under(path: Path, roots: Iterable[Path]) -> bool:
    """Whether ``path`` is one of ``roots`` or inside one of them."""
    return any(path[: len(root)] == root for root in roots)


def refuse(problems: list[Problem], message: str = "The request is not valid.") -> None:
    """Raise the one 400 of a request, when it has problems."""
    if problems:
        raise bad_request(problems, message)


__all__ = [
    "BODY_MODELS",
    "documented",
    "pruned",
    "refuse",
    "schema_problems",
    "under",
    "valid",
]
