"""Request documents checked with the engine's own rules, and PATCH semantics.

A template, defaults or asset body passes the same checks as a file of a templates folder (the schema, keyed
list items with their key and no key twice, ``masterSpecSameAsWorker: true`` without a ``master`` section,
one item in a data source asset) and the values Run:ai's schema refuses (:mod:`.values`); every problem is
answered at once, with its field path.

PATCH: ``fieldsToClear`` paths (``spec.image``, ``spec.environmentVariables[name=HOME]``, ``master``) are
removed first, then the given fields are merged in: mappings recursively, anything else (lists included)
replaced whole, ``null`` leaves a value as it is.  The result is checked like a full document.

Every JSON body is decoded once, by :func:`read_json`, before any route sees it: strictly (RFC 8259, not
Python's lenient reading) and bounded.  Everything it refuses is answered 400 at once, each with its field
path: a key given twice in one object; ``NaN``, ``Infinity`` and numbers too large to be finite (``1e309``);
integers of more than :data:`MAX_INT_DIGITS` digits; text (keys or values) holding a NUL character or a lone
surrogate (``"\\udfff"``), which no database stores and no response can carry; nesting deeper than
:data:`MAX_DEPTH`; a body that is not UTF-8 (UTF-16 and UTF-32 included, which Python's reader would take);
and a body that is not a JSON object.  Before any of that, a body of more than :data:`MAX_VALUES` JSON values
is answered 413, counted on its bytes (:func:`count_values`), so that no body costs more than that many
values in decoding, validation and composition.
"""

from __future__ import annotations

import copy
import json
import math
import re
from collections.abc import Iterator, Mapping, Sequence
from typing import Any, TypeVar

from pydantic import BaseModel

from template_engine.errors import Problem
from template_engine.kinds import DISTRIBUTED, WorkloadKind
from template_engine.loader import values
from template_engine.loader.rules import document_rules
from template_engine.loader.validate import validate
from template_engine.models.documents import (
    ASSET_MODELS,
    AnyTemplateDocument,
    AssetKind,
    ComputeAsset,
    DatasourceAsset,
    EnvironmentAsset,
    LayerDocument,
    TemplateDocument,
)
from template_engine.paths import Match, Path, Segment, parse_path
from template_engine.service.errors import ApiError, bad_request
from template_engine.storable import unstorable

M = TypeVar("M", bound=BaseModel)
BODY = "request body"

#: The most digits a JSON integer may have (Python converts no longer text to an integer).
MAX_INT_DIGITS = 4300
#: The deepest nesting of objects and arrays a body may have (a spec needs fewer than ten levels).
MAX_DEPTH = 64
#: The longest field path ``fieldsToClear`` takes.
MAX_PATH_LENGTH = 1000
#: The most JSON values one body may hold: the one bound of a document at every door (:mod:`..loader.values`).
MAX_VALUES = values.MAX_VALUES


# -- the one JSON decoding step -----------------------------------------------------------------------------


class _Refused:
    """A JSON number or constant the body may not hold, kept until its path is known."""

    __slots__ = ("expected", "message")

    def __init__(self, message: str, expected: str) -> None:
        self.message = message
        self.expected = expected


class _Repeated(dict[str, Any]):
    """An object in which some keys are given more than once (``repeated``, in order); the last value won."""

    __slots__ = ("repeated",)

    def __init__(self, items: dict[str, Any], repeated: list[str]) -> None:
        super().__init__(items)
        self.repeated = tuple(repeated)


def _object(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    repeated: list[str] = []
    for key, value in pairs:
        if key in out and key not in repeated:
            repeated.append(key)
        out[key] = value
    return _Repeated(out, repeated) if repeated else out


def _constant(name: str) -> _Refused:
    return _Refused(f"{name} is not a JSON number (JSON has no NaN or Infinity)", "a finite number")


def _float(text: str) -> float | _Refused:
    value = float(text)
    if math.isfinite(value):
        return value
    return _Refused(f"the number {text} is too large (it would be infinite)", "a finite number")


def _int(text: str) -> int | _Refused:
    digits = len(text.lstrip("-"))
    if digits > MAX_INT_DIGITS:
        return _Refused(
            f"integer too large ({digits} digits)", f"an integer of at most {MAX_INT_DIGITS} digits"
        )
    return int(text)


def _refused(value: Any) -> tuple[str, str] | None:
    return (value.message, value.expected) if isinstance(value, _Refused) else None


def _problems(body: Any) -> Iterator[Problem]:
    """Every refused value of a decoded body: the one walk of what cannot be stored (:mod:`...storable`),
    which also names the numbers and constants the decoder refused and the keys given twice."""
    for path, message, expected in unstorable(body, True, _refused, MAX_DEPTH):
        yield Problem(message, path, None, expected or None)


def _kind(value: Any) -> str:
    if isinstance(value, list):
        return "an array"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, bool):
        return "true" if value else "false"
    if value is None:
        return "null"
    return "a number"


#: A JSON string with its escapes; one left unterminated runs to the end of the body, so that the scan never
#: starts again inside a string and stays linear (a body that is not JSON is refused when decoded anyway).
_STRING = re.compile(rb'"[^"\\]*(?:\\.[^"\\]*)*"?', re.DOTALL)
_EMPTY = re.compile(rb"\[[ \t\n\r]*\]|\{[ \t\n\r]*\}")


def count_values(body: bytes) -> int:
    """How many JSON values ``body`` holds, counted on its bytes without decoding it (exact for a JSON text):
    the whole body, one more after each comma outside a string, and the first item of each object or array
    that is not empty.  Regular expressions and ``bytes.count`` only: linear, and no Python loop per value."""
    structure = _STRING.sub(b"s", body)
    _, empty = _EMPTY.subn(b"", structure)
    containers = structure.count(b"[") + structure.count(b"{")
    return 1 + structure.count(b",") + containers - empty


def _not_utf8(why: str) -> ApiError:
    return bad_request([Problem(f"the body is not UTF-8 text ({why})", (), None, "JSON in UTF-8")])


def _text(body: bytes) -> str:
    """The body as UTF-8 text (a leading byte order mark is ignored, as RFC 8259 allows)."""
    if b"\x00" in body:  # JSON text never holds a NUL byte (U+0000 is written \u0000); UTF-16 and UTF-32 do
        raise _not_utf8("it holds NUL bytes, as UTF-16 and UTF-32 do")
    try:
        text = body.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise _not_utf8(f"byte 0x{body[exc.start]:02x} at offset {exc.start}") from None
    return text.removeprefix("\ufeff")


def read_json(body: bytes) -> dict[str, Any]:
    """The JSON object ``body`` holds, or a 400 naming every value this service refuses (module docstring);
    413 for a body of more than :data:`MAX_VALUES` values, before it is decoded."""
    data = read_json_value(body)
    if not isinstance(data, dict):
        raise bad_request(
            [Problem(f"the body must be a JSON object, not {_kind(data)}", (), None, "a JSON object")]
        )
    return data


def read_json_value(body: bytes) -> Any:
    """:func:`read_json` for a body that may be any JSON value (Run:ai's ``ResourcesUpdateRequest`` is an
    array): the same checks but the one that it is an object."""
    text = _text(body)
    count = count_values(body)
    if count > MAX_VALUES:
        problem = Problem(
            f"the body holds {count} JSON values",
            (),
            None,
            values.MAX_VALUES_EXPECTED,
        )
        raise ApiError(413, f"The request body holds more than {MAX_VALUES} JSON values.", [problem])
    try:
        data = json.loads(
            text, object_pairs_hook=_object, parse_constant=_constant, parse_float=_float, parse_int=_int
        )
    except json.JSONDecodeError as exc:
        raise bad_request(
            [Problem(f"malformed JSON: {exc.msg} at character {exc.pos}", (), None, "JSON")]
        ) from None
    except RecursionError:
        raise bad_request([Problem(f"the body is nested more than {MAX_DEPTH} levels deep")]) from None
    problems = list(_problems(data))
    if problems:
        raise bad_request(problems)
    return values.quantities_as_text(data)


def _checked(model: type[M], data: Any, more: Any = None) -> M:
    """The model, or a 400 with every problem; ``more(doc)`` adds the problems of a well-shaped document."""
    doc, problems = validate(model, data, BODY, {})
    if doc is not None and more is not None:
        problems = list(more(doc))
    if doc is None or problems:
        raise bad_request(problems or [Problem("the document is not valid")])
    return doc


def _rules(data: Mapping[str, Any], model: type[BaseModel] = TemplateDocument) -> list[Problem]:
    """The rules beyond the schema, the same function a templates folder's files go through."""
    return document_rules(model, data, BODY, {})


def template_problems(
    data: Any, rest: Any = None, kind: WorkloadKind = DISTRIBUTED
) -> tuple[AnyTemplateDocument | None, list[Problem]]:
    """A template document of ``kind`` and every problem it has: the schema's of the kind's template model
    and the rules beyond it.  A body never says its kind (the route does): a kind other than distributed is
    given to the model as a file says it, ``kind:``.  With ``rest`` the caller has reported the schema's
    problems already: only the rules are checked on ``data``, and the document is ``rest`` (what the
    schema's problems left of ``data``) when that is valid, else ``None``."""
    model = kind.template_model
    assert model is not None  # the routes are made for the kinds Run:ai has templates of
    rules = _rules(data, model) if isinstance(data, Mapping) else []
    if rest is not None:
        try:
            return model.model_validate(_with_kind(rest, kind)), rules  # type: ignore[return-value]
        except ValueError:
            return None, rules
    doc, problems = validate(model, _with_kind(data, kind), BODY, {})
    return doc, problems + rules  # type: ignore[return-value]


def _with_kind(data: Any, kind: WorkloadKind) -> Any:
    """``data`` as a file of ``kind`` holds it: ``kind:`` said when the kind is not distributed."""
    if kind is DISTRIBUTED or not isinstance(data, Mapping):
        return data
    return {**data, "kind": kind.name}


def check_defaults(data: Any) -> LayerDocument:
    return _checked(LayerDocument, data, lambda _doc: _rules(data, LayerDocument))


def defaults_problems(data: Any) -> list[Problem]:
    """Every problem :func:`check_defaults` answers for ``data``, without raising."""
    doc, problems = validate(LayerDocument, data, BODY, {})
    return _rules(data, LayerDocument) if doc is not None else problems


def check_asset(kind: AssetKind, data: Any) -> EnvironmentAsset | ComputeAsset | DatasourceAsset:
    model = ASSET_MODELS[kind]
    return _checked(model, data, lambda _doc: _rules(data, model))


def strip_nulls(value: Any) -> Any:
    """``value`` with every ``null`` of an object left out, at any depth: in a document ``null`` means "no
    opinion", and it is not stored; in Run:ai's requests (nullable where its answers are not:
    ``ResourcesNullable``, ``NodeTypesPerWorkload``'s lists, ``overtimeData``) it means "not set", and an
    answer says so by leaving the field out."""
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


def field_paths(
    texts: Sequence[str], field: str, expected: str = "a field path such as spec.image"
) -> list[tuple[Path, str, Path | Problem]]:
    """The field paths of a request's list ``field`` (``fieldsToClear``, ``reset``...), in its order, each
    as ``(where, text, path)``: ``where`` its place in the request, ``path`` the path it reads as, or the
    problem when it is too long or no field path (``expected`` says what one is)."""
    out: list[tuple[Path, str, Path | Problem]] = []
    for index, text in enumerate(texts):
        where: Path = (field, index)
        if len(text) > MAX_PATH_LENGTH:  # also keeps an index too long for int() out of parse_path
            size = f"a field path of {len(text)} characters"
            out.append((where, text, Problem(size, where, None, f"at most {MAX_PATH_LENGTH}")))
            continue
        try:
            out.append((where, text, parse_path(text)))
        except ValueError as exc:
            out.append((where, text, Problem(str(exc), where, None, expected)))
    return out


def clear_fields(
    doc: Mapping[str, Any],
    paths: Sequence[str],
    roots: Sequence[str],
    protected: Sequence[str] = (),
    field: str = "fieldsToClear",
) -> dict[str, Any]:
    """``doc`` without the values at ``paths`` (the request's ``field``); a path outside ``roots`` or in
    ``protected`` is a 400."""
    out = copy.deepcopy(dict(doc))
    problems: list[Problem] = []
    parsed: list[Path] = []
    for where, text, path in field_paths(paths, field):
        if isinstance(path, Problem):
            problems.append(path)
        elif path[0] not in roots:
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
