"""Turn a parsed document into a validated model, or into every problem it has, with lines."""

from __future__ import annotations

import re
from collections.abc import Mapping
from decimal import Decimal
from functools import cache
from typing import Any, TypeVar

from pydantic import BaseModel, ValidationError

from template_engine.errors import InvalidAt, Location, Problem
from template_engine.kinds import TEMPLATE_KINDS, WorkloadKind, kind_note, kinds_with_field
from template_engine.merge.engine import check_keys
from template_engine.merge.plan import PlanNode, models_in
from template_engine.models import spec as spec_models
from template_engine.models.documents import PATTERN_WORDS, SHAPE_EXAMPLES
from template_engine.models.spec import WORKER_ONLY_FIELDS
from template_engine.paths import Path, format_path
from template_engine.render import document_expression_problems
from template_engine.suggest import closest, did_you_mean

M = TypeVar("M", bound=BaseModel)


@cache
def _all_field_names() -> tuple[str, ...]:
    names: set[str] = set()
    for value in vars(spec_models).values():
        if isinstance(value, type) and issubclass(value, BaseModel):
            names.update(value.model_fields)
    return tuple(sorted(names))


#: The workload kind of each template kind's spec model (a field another kind has is said so).
_KIND_OF_SPEC: dict[type[BaseModel], WorkloadKind] = {kind.spec_model: kind for kind in TEMPLATE_KINDS}


def another_kinds_field(
    holder: type[BaseModel] | None, name: str, path: Path, location: Location | None
) -> Problem | None:
    """The problem of a field ``name`` that a kind's spec (``holder``) lacks and another kind's has: said
    with the kinds that have it, at every door (a file, an API body, a form); ``None`` for any other."""
    kind = _KIND_OF_SPEC.get(holder) if holder is not None else None
    if kind is None or not kinds_with_field((name,)):
        return None
    return Problem(
        f"unknown field {name!r}: {kind_note(kind, (name,))}",
        path,
        location,
        f"a field of {kind.a_noun}'s spec",
    )


def _has(value: Any, part: int | str) -> bool:
    if isinstance(value, Mapping):
        return isinstance(part, str) and part in value
    return isinstance(value, list) and isinstance(part, int) and 0 <= part < len(value)


def placed(err: Mapping[str, Any], data: Any, start: int = 0) -> dict[str, Any]:
    """Pydantic's error ``err`` of ``data`` (its location from ``start``) as a problem tells it: a model's
    own check (``value_error``) in its own words, without pydantic's ``Value error, ``; when the check says
    where inside the value it fails (:class:`~template_engine.errors.InvalidAt`), that place is added to the
    location and the value there is what was sent.  Every door that turns pydantic's errors into problems
    asks this first (the service's bodies and queries, the files' documents)."""
    if err.get("type") != "value_error":
        return dict(err)
    error = (err.get("ctx") or {}).get("error")
    words = str(error) if error is not None else str(err.get("msg", "")).removeprefix("Value error, ")
    out = {**err, "msg": words}
    if isinstance(error, InvalidAt):
        loc = (*tuple(err.get("loc", ())), *error.path)
        value = data
        for part in loc[start:]:
            value = value[part] if _has(value, part) else None
        out |= {"loc": loc, "input": value}
    return out


def real_path(data: Any, loc: tuple[int | str, ...]) -> Path:
    """Pydantic's location without the union-branch names it inserts (``str``, ``int``...)."""
    path: list[str | int] = []
    value = data
    for part in loc:
        if _has(value, part):
            path.append(part)
            value = value[part]
        elif isinstance(value, Mapping) and isinstance(part, str):
            path.append(part)  # a missing field: the path ends here
            break
    return tuple(path)


def locate(file: str, lines: Mapping[Path, tuple[int, int]], path: Path) -> Location:
    probe = path
    while True:
        pos = lines.get(probe)
        if pos is not None:
            return Location(file, pos[0], pos[1])
        if not probe:
            return Location(file)
        probe = probe[:-1]


def model_at(model: type[BaseModel], loc: tuple[int | str, ...]) -> type[BaseModel] | None:
    """The model that holds the last element of ``loc`` (list positions and union tags skipped)."""
    current = model
    for part in loc[:-1]:
        if not isinstance(part, str) or part not in current.model_fields:
            continue
        found = models_in(current.model_fields[part].annotation)
        if not found:
            return None
        current = found[0]
    return current


#: Pydantic's error types for a value of the wrong shape, and the shape it should have.
_SHAPES = {
    "list_type": "a list",
    "dict_type": "a mapping",
    "model_type": "a mapping",
    "model_attributes_type": "a mapping",
}


def _shape_of(value: Any) -> str:
    if isinstance(value, Mapping):
        return "a mapping"
    if isinstance(value, list):
        return "a list"
    if value is None:
        return "null"
    if isinstance(value, bool):
        return f"the boolean {str(value).lower()}"
    if isinstance(value, int | float):
        return f"the number {value!r}"
    return f"the text {value!r}"


def _wrong_shape(
    model: type[BaseModel], file: str, lines: Mapping[Path, tuple[int, int]], err: Any, path: Path
) -> Problem:
    """A mapping where a list belongs, a text where a mapping belongs...: say both, with an example."""
    want = _SHAPES[err["type"]]
    holder = model_at(model, tuple(err["loc"]))
    example = SHAPE_EXAMPLES.get(holder) if holder is not None else None
    where = format_path(path) if path else "the document"
    return Problem(
        f"{where} must be {want}, not {_shape_of(err.get('input'))}",
        path,
        locate(file, lines, path),
        f"{want}, for example: {example}" if example else want,
    )


#: pydantic's error types of a value where a number belongs.
NUMBER_KINDS = frozenset({"float_type", "float_parsing", "int_type", "int_parsing", "int_from_float"})
#: A number as YAML 1.2 and JSON spell it with an exponent (``1e308``, ``1E5``, ``2.5e-3``).
_EXPONENT_NUMBER = re.compile(r"(-?(?:0|[1-9][0-9]*)(?:\.[0-9]*)?)[eE]([-+]?[0-9]{1,4})")


def yaml_number_hint(text: str, integer: bool = False) -> str:
    """`` (YAML reads 1e308 as text; write 1.0e+308)`` for a number YAML 1.2 and JSON read but YAML 1.1 (the
    loader's, PyYAML's) reads as text, for want of a dot in its mantissa or a sign in its exponent; where an
    ``integer`` belongs, a whole number is suggested in digits (``1e2``: write 100).  Empty for other text."""
    found = _EXPONENT_NUMBER.fullmatch(text)
    if found is None:
        return ""
    mantissa, exponent = found.groups()
    if "." in mantissa and exponent[0] in "+-":  # YAML 1.1 reads this one as a number too
        return ""
    number = Decimal(text)
    if integer and number == number.to_integral_value() and abs(number) < 10**19:
        written = str(int(number))
    else:
        dotted = mantissa if "." in mantissa else mantissa + ".0"
        written = f"{dotted}e{exponent if exponent[0] in '+-' else '+' + exponent}"
    return f" (YAML reads {text} as text; write {written})"


def _problem(
    model: type[BaseModel], file: str, data: Any, lines: Mapping[Path, tuple[int, int]], err: Any
) -> Problem:
    loc = tuple(err["loc"])
    kind = err["type"]
    if kind == "extra_forbidden":
        path = real_path(data, loc)
        name = str(loc[-1])
        if name in WORKER_ONLY_FIELDS and "master" in loc:
            return Problem(
                f"a master spec cannot set the worker-only field {name!r}",
                path,
                locate(file, lines, path),
                "worker-only fields in the worker spec only",
            )
        holder = model_at(model, loc)
        allowed = sorted(holder.model_fields) if holder is not None else list(_all_field_names())
        of_kind = another_kinds_field(holder, name, path, locate(file, lines, path))
        if of_kind is not None:
            return of_kind
        if name in _all_field_names() and name not in allowed:
            return Problem(
                f"field {name!r} is not allowed here",
                path,
                locate(file, lines, path),
                "one of: " + ", ".join(allowed),
            )
        close = closest(name, allowed)
        hint = did_you_mean(close)
        expected = (
            f"{close[0]!r} or another field of this section" if close else "one of: " + ", ".join(allowed)
        )
        return Problem(f"unknown field {name!r}{hint}", path, locate(file, lines, path), expected)
    path = real_path(data, loc)
    if kind == "missing":
        return Problem(f"missing required field {str(loc[-1])!r}", path, locate(file, lines, path[:-1]), None)
    if kind in _SHAPES:
        return _wrong_shape(model, file, lines, err, path)
    got = err.get("input")
    shown = repr(got) if not isinstance(got, Mapping | list) else type(got).__name__
    if isinstance(got, int) and not isinstance(got, bool) and len(shown) > 20:
        shown = f"{'-' if got < 0 else ''}a {len(str(abs(got)))}-digit integer"
    if isinstance(got, bool) and kind == "string_type":
        shown += " (YAML reads yes/no/on/off/true/false as a boolean: quote it)"
    elif isinstance(got, int | float) and kind == "string_type":
        shown += " (quote it to make it text)"
    elif isinstance(got, str) and kind in NUMBER_KINDS:
        shown += yaml_number_hint(got, kind.startswith("int"))
    expected = err["msg"]  # a model's own check: its sentence (``placed``), without pydantic's prefix
    if kind == "value_error":
        expected = str(expected).removeprefix("Value error, ")
    if kind == "string_pattern_mismatch":
        pattern = str(err.get("ctx", {}).get("pattern", ""))
        expected = PATTERN_WORDS.get(pattern, "a value of the documented form")
    return Problem(f"invalid value {shown}", path, locate(file, lines, path), expected)


def validate(
    model: type[M], data: Any, file: str, lines: Mapping[Path, tuple[int, int]]
) -> tuple[M | None, list[Problem]]:
    """The model, or ``None`` with every schema problem of the document (and the bounds on the expressions
    one document may hold)."""
    try:
        doc = model.model_validate(data)
    except ValidationError as exc:
        seen: set[tuple[str, Path]] = set()
        problems = []
        for err in exc.errors(include_url=False):
            problem = _problem(model, file, data, lines, placed(err, data))
            if (problem.message, problem.path) not in seen:
                seen.add((problem.message, problem.path))
                problems.append(problem)
        return None, problems
    too_many = document_expression_problems(data, lambda path: locate(file, lines, path))
    return (None, too_many) if too_many else (doc, [])


def key_problems(
    plan: PlanNode, spec: Any, root: Path, file: str, lines: Mapping[Path, tuple[int, int]]
) -> list[Problem]:
    """Keyed-list items without their key, and keys given twice within this one document."""
    out = []
    for message, path, other, expected in check_keys(plan, spec):
        full = (*root, *path)
        related = (locate(file, lines, (*root, *other)),) if other is not None else ()
        out.append(Problem(message, full, locate(file, lines, full), expected, related))
    return out
