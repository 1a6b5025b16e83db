"""The objects against the schemas the API server holds: the vendored CRDs and Kubernetes' own.

A job object is checked against its CRD's ``openAPIV3Schema`` (``crds/``, copies of the Training Operator
v1.9.4 and MPI Operator v0.8.0 manifests) by ``jsonschema``, extended with the meaning Kubernetes gives its
structural-schema extensions, as the API server applies them when the object is created with strict field
validation (kubectl's default since 1.27). The sources are in kubernetes/apiextensions-apiserver:

- ``pkg/apiserver/schema/pruning/algorithm.go``: a field that no ``properties`` entry and no
  ``additionalProperties`` describes is pruned, and strict field validation reports it (here
  ``schema.unknownField``), unless ``x-kubernetes-preserve-unknown-fields``; the resource root and an
  ``x-kubernetes-embedded-resource`` keep ``apiVersion``, ``kind`` and ``metadata`` (ObjectMeta, validated
  natively: strictly, so here against Kubernetes' ObjectMeta schema as kubernetes-validate ships it;
  :mod:`~template_engine.cluster.kube` checks the name and label syntax).
- ``pkg/apiserver/schema/defaulting/prunenulls.go``: a ``null`` field that is not ``nullable`` and has no
  ``default`` is dropped before validation (no error then; a required field given ``null`` is missing).
- ``pkg/apiserver/validation/validation.go``: ``x-kubernetes-int-or-string`` is the type
  ``[integer, string]`` (the ``anyOf`` beside it is its structural spelling, not a second rule);
  ``nullable`` lets ``null`` through; ``formats.go``: ``int32``/``int64`` (range-checked here) and
  ``date-time`` are the formats these schemas use.
- ``pkg/apiserver/schema/listtype/validation.go``: ``x-kubernetes-list-type: map`` items are objects unique by
  their ``x-kubernetes-list-map-keys`` (a key left out takes its ``default``, as defaulting runs first:
  ``protocol: TCP`` of container ports); ``set`` items are unique; ``atomic`` is no rule.
- ``x-kubernetes-map-type`` only says how server-side apply merges: no rule on create.

Core objects the mapping emits (``PersistentVolumeClaim``) are checked against Kubernetes' own schemas as
``kubernetes-validate`` ships them (:func:`core_problems`).

The schemas are package data, read on first use and kept; importing this module reads nothing.
"""

from __future__ import annotations

import importlib.util
import json
import re
from collections.abc import Callable, Hashable, Iterable, Iterator, Mapping, Sequence
from functools import cache
from importlib import resources
from pathlib import Path
from typing import TYPE_CHECKING, Any

from template_engine.cluster.fastpath import list_map_keys
from template_engine.cluster.problems import ObjectPath, ObjectProblem

if TYPE_CHECKING:
    from jsonschema.protocols import Validator

#: Each job kind -> (its apiVersion, the vendored CRD file its schema is in).
KINDS: Mapping[str, tuple[str, str]] = {
    "PyTorchJob": ("kubeflow.org/v1", "kubeflow.org_pytorchjobs.yaml"),
    "TFJob": ("kubeflow.org/v1", "kubeflow.org_tfjobs.yaml"),
    "XGBoostJob": ("kubeflow.org/v1", "kubeflow.org_xgboostjobs.yaml"),
    "JAXJob": ("kubeflow.org/v1", "kubeflow.org_jaxjobs.yaml"),
    "MPIJob": ("kubeflow.org/v2beta1", "kubeflow.org_mpijobs.v2beta1.yaml"),
}

#: The Kubernetes release whose core schemas check the core objects: the Training Operator 1.9 line's
#: Kubernetes (kubeflow/trainer v1.9.0 to v1.9.3, ``go.mod``: ``k8s.io/api v0.31.3``). Its v1.9.4, whose CRDs
#: are vendored, moved to ``k8s.io/api v0.36.3`` (CI on Kubernetes 1.34 and 1.35); 1.31 is the oldest
#: cluster the line supports, so an object valid here is valid on every cluster it runs on.
KUBERNETES_VERSION = "1.31"

_PRESERVE = "x-kubernetes-preserve-unknown-fields"
_EMBEDDED = "x-kubernetes-embedded-resource"
_INT_OR_STRING = "x-kubernetes-int-or-string"
_LIST_TYPE = "x-kubernetes-list-type"
_LIST_MAP_KEYS = "x-kubernetes-list-map-keys"
_VALIDATIONS = "x-kubernetes-validations"
_META_FIELDS = frozenset({"apiVersion", "kind", "metadata"})

#: The rule of a problem, from the keyword that found it (``schema.<rule>``).
_RULES: Mapping[str, str] = {
    _INT_OR_STRING: "intOrString",
    _LIST_MAP_KEYS: "listMapKeys",
    _LIST_TYPE: "listSet",
    _EMBEDDED: "embeddedResource",
    _VALIDATIONS: "validations",
}
_MESSAGE_LIMIT = 240

_INT_RANGES: Mapping[str, tuple[int, int]] = {"int32": (-(2**31), 2**31 - 1), "int64": (-(2**63), 2**63 - 1)}
#: RFC 3339, the layout Kubernetes writes times in (``metav1.Time``): ASCII digits, as Go reads them.
DATE_TIME_PATTERN = (
    r"^[0-9]{4}-(0[1-9]|1[0-2])-(0[1-9]|[12][0-9]|3[01])[Tt]([01][0-9]|2[0-3]):[0-5][0-9]:([0-5][0-9]|60)"
    r"(\.[0-9]+)?([Zz]|[+-]([01][0-9]|2[0-3]):[0-5][0-9])$"
)


@cache
def go_regex(pattern: str) -> re.Pattern[str]:
    """``pattern`` as Go's RE2 reads it (go-openapi's ``pattern``): an unescaped ``$`` outside a class is the
    end of the text, where Python's ``re`` also matches before a final newline; so it is written ``\\Z``."""
    out: list[str] = []
    escaped = in_class = False
    for char in pattern:
        if escaped:
            escaped = False
        elif char == "\\":
            escaped = True
        elif char == "[":
            in_class = True
        elif char == "]":
            in_class = False
        elif char == "$" and not in_class:
            out.append(r"\Z")
            continue
        out.append(char)
    return re.compile("".join(out))


# -- the vendored CRDs -------------------------------------------------------------------------------------


@cache
def crd_schema(kind: str) -> Mapping[str, Any]:
    """The ``openAPIV3Schema`` of the served version of ``kind``'s vendored CRD (read once)."""
    import yaml

    api_version, file_name = KINDS[kind]
    version = api_version.rsplit("/", 1)[1]
    text = resources.files(__package__).joinpath("crds", file_name).read_text(encoding="utf-8")
    loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
    crd = yaml.load(text, Loader=loader)
    for served in crd["spec"]["versions"]:
        if served["name"] == version and served["served"]:
            schema: Mapping[str, Any] = served["schema"]["openAPIV3Schema"]
            return schema
    raise LookupError(f"{file_name} serves no version {version}")


# -- Kubernetes' meaning of the keywords ---------------------------------------------------------------------


def _is_integer(_checker: object, instance: object) -> bool:
    """go-openapi's integer: an int, or a float with no fraction (``swag.IsFloat64AJSONInteger``)."""
    if isinstance(instance, bool):
        return False
    return isinstance(instance, int) or (isinstance(instance, float) and instance.is_integer())


def _pruned_null(value: object, schema: object) -> bool:
    """A ``null`` the API server drops before validating: not ``nullable``, no ``default`` (prunenulls.go)."""
    return (
        value is None
        and isinstance(schema, Mapping)
        and not schema.get("nullable", False)
        and "default" not in schema
    )


def _error(message: str, rule: str, *path: str | int) -> Any:
    from jsonschema.exceptions import ValidationError

    return ValidationError(message, validator=rule, path=list(path))


def _keywords(root: Mapping[str, Any]) -> dict[str, Callable[..., Iterator[Any]]]:
    """The keyword functions for one CRD; ``root`` is its schema, whose node is the resource root.

    Twin: :func:`template_engine.cluster.fastpath.structural_schema` spells the same meaning as a plain JSON
    Schema for ``jsonschema_rs`` (the yes-or-no of :func:`fast_accepts`); a change here is made there too,
    and ``tests/cluster/test_fast_schemas.py`` proves the two equal.
    """
    from jsonschema import _keywords as draft_keywords

    def embedded(schema: Mapping[str, Any]) -> bool:
        return schema is root or bool(schema.get(_EMBEDDED, False))

    def meta_fields(instance: Mapping[str, Any], schema: Mapping[str, Any]) -> Iterator[Any]:
        """TypeMeta and ObjectMeta of an embedded resource (objectmeta/validation.go); the root's are
        checked by :func:`schema_problems` itself."""
        if "metadata" in instance and not isinstance(instance["metadata"], Mapping):
            yield _error(
                f"metadata must be an object, not {_short(instance['metadata'])}", "type", "metadata"
            )
        if schema is root:
            return
        for name in ("apiVersion", "kind"):
            value = instance.get(name)
            if not isinstance(value, str) or not value:
                yield _error(f"an embedded resource needs a non-empty string {name}", _EMBEDDED, name)

    def unknown(
        instance: Mapping[str, Any], schema: Mapping[str, Any], known: Mapping[str, Any]
    ) -> Iterator[Any]:
        """Fields strict field validation reports: pruning/algorithm.go."""
        if schema.get(_PRESERVE, False) or "additionalProperties" in schema:
            return
        skip = _META_FIELDS if embedded(schema) else frozenset()
        for name in instance:
            if name not in known and name not in skip:
                yield _error(f"unknown field {name!r}", "unknownField", name)

    def properties(
        validator: Validator, props: Mapping[str, Any], instance: Any, schema: Mapping[str, Any]
    ) -> Iterator[Any]:
        if not isinstance(instance, Mapping):
            return
        is_embedded = embedded(schema)
        if is_embedded:
            yield from meta_fields(instance, schema)
        yield from unknown(instance, schema, props)
        for name, value in instance.items():
            if (
                name not in props
                or (is_embedded and name in _META_FIELDS)
                or _pruned_null(value, props[name])
            ):
                continue
            yield from validator.descend(value, props[name], path=name, schema_path=name)

    def additional_properties(
        validator: Validator, extra: Any, instance: Any, schema: Mapping[str, Any]
    ) -> Iterator[Any]:
        if not isinstance(instance, Mapping) or not isinstance(extra, Mapping):
            yield from draft_keywords.additionalProperties(validator, extra, instance, schema)
            return
        known = schema.get("properties", {})
        skip = _META_FIELDS if embedded(schema) else frozenset()
        for name, value in instance.items():
            if name in known or name in skip or _pruned_null(value, extra):
                continue
            yield from validator.descend(value, extra, path=name)

    def type_(validator: Validator, types: Any, instance: Any, schema: Mapping[str, Any]) -> Iterator[Any]:
        if instance is None and schema.get("nullable", False):
            return
        yield from draft_keywords.type(validator, types, instance, schema)
        if (
            types == "object"
            and isinstance(instance, Mapping)
            and "properties" not in schema
            and schema is not root
        ):
            if embedded(schema):
                yield from meta_fields(instance, schema)
            yield from unknown(instance, schema, {})

    def required(validator: Validator, names: Any, instance: Any, schema: Mapping[str, Any]) -> Iterator[Any]:
        if not isinstance(instance, Mapping):
            return
        props = schema.get("properties", {})
        for name in names:
            sub = props.get(name, {})
            if (name not in instance and "default" not in sub) or _pruned_null(instance.get(name, 0), sub):
                yield _error(f"{name!r} is required", "required", name)

    def int_or_string(
        validator: Validator, on: Any, instance: Any, schema: Mapping[str, Any]
    ) -> Iterator[Any]:
        if not on or isinstance(instance, str) or _is_integer(None, instance):
            return
        if instance is None and schema.get("nullable", False):
            return
        yield _error(f"must be an integer or a string, not {_short(instance)}", _INT_OR_STRING)

    def any_of(validator: Validator, choices: Any, instance: Any, schema: Mapping[str, Any]) -> Iterator[Any]:
        if schema.get(_INT_OR_STRING, False):
            return  # the structural spelling of int-or-string, checked by its keyword
        yield from draft_keywords.anyOf(validator, choices, instance, schema)

    def list_type(validator: Validator, kind: Any, instance: Any, schema: Mapping[str, Any]) -> Iterator[Any]:
        if not isinstance(instance, list):
            return
        names, defaults = list_map_keys(schema)
        rule = _LIST_TYPE if kind == "set" else _LIST_MAP_KEYS
        for index, message in list_duplicates(str(kind), instance, names, defaults):
            yield _error(message, rule, index)

    def pattern(validator: Validator, regex: str, instance: Any, schema: Mapping[str, Any]) -> Iterator[Any]:
        if isinstance(instance, str) and not go_regex(regex).search(instance):
            yield _error(f"{instance!r} does not match {regex!r}", "pattern")

    def validations(
        validator: Validator, rules: Any, instance: Any, schema: Mapping[str, Any]
    ) -> Iterator[Any]:
        """CEL rules: every rule of the vendored CRDs is the transition rule ``self == oldSelf`` (a queue that
        cannot change), which the API server evaluates only on update: on create it holds. Any other rule
        is reported, since this validator does not evaluate CEL."""
        for rule in rules:
            if "oldSelf" not in str(rule.get("rule", "")):
                yield _error(f"the CEL rule {rule.get('rule')!r} is not evaluated here", _VALIDATIONS)

    return {
        "properties": properties,
        "additionalProperties": additional_properties,
        "type": type_,
        "required": required,
        "anyOf": any_of,
        "pattern": pattern,
        _INT_OR_STRING: int_or_string,
        _LIST_TYPE: list_type,
        _VALIDATIONS: validations,
    }


def list_duplicates(
    kind: str, items: list[Any], names: list[str], defaults: Mapping[str, Any]
) -> Iterator[tuple[int, str]]:
    """The index and sentence of each item a ``x-kubernetes-list-type`` refuses (listtype/validation.go):
    ``set`` items are unique; ``map`` items are objects, unique by their keys ``names`` after defaulting
    (``defaults``: a key's default). The one rule both validators call (the full one's ``list_type`` and
    the fast one's keyword, :func:`template_engine.cluster.fastpath.list_keyword`)."""
    if kind == "set":
        found = _scalar_identities(items)
        for index in _repeated(found if found is not None else [_canonical(item) for item in items]):
            yield index, f"duplicate item {_short(items[index])}"
        return
    if kind != "map":
        return
    for index, item in enumerate(items):
        if item is not None and not isinstance(item, Mapping):
            yield index, "must be an object in a list of list-type map"
            return
    keys = _scalar_keys(items, names, defaults)
    if keys is None:
        keys = [_canonical(key) for key in _key_maps(items, names, defaults)]
    for index in _repeated(keys):
        shown = ", ".join(f"{name}={items[index].get(name)!r}" for name in names if items[index])
        yield index, f"duplicate item by its keys ({shown})"


def _key_maps(items: list[Any], names: list[str], defaults: Mapping[str, Any]) -> list[dict[str, Any]]:
    """Each list-map item's keys ``names``, a default standing in for a key the item lacks."""
    keys: list[dict[str, Any]] = []
    for item in items:
        key = {}
        for name in names:
            if item is not None and name in item:
                key[name] = item[name]
            elif name in defaults:
                key[name] = defaults[name]
        keys.append(key)
    return keys


#: The exact types whose values the fast identities below take as they are (``float`` is not one: JSON
#: tells ``-0.0`` from ``0.0``, Python's equality does not).
_SCALARS = frozenset({str, int, bool, type(None)})
#: Integers at or beyond this size go to :func:`_canonical` (whose ``json.dumps`` may refuse them: Python's
#: limit on the digits of ``int`` -> ``str``).
_BIG = 10**18


def _scalar_identities(values: list[Any]) -> list[Hashable] | None:
    """Fast twin of :func:`_canonical` for a list-set: when every value is a scalar of :data:`_SCALARS`,
    ``(type, value)`` for each, equal exactly when :func:`_canonical`'s texts are (the type tells ``1``
    from ``true``); ``None`` (the caller takes :func:`_canonical` of every value) when any is anything
    else. Proved equal by ``tests/cluster/test_list_identities.py``."""
    out: list[Hashable] = []
    for value in values:
        kind = type(value)
        if kind not in _SCALARS or (kind is int and not -_BIG < value < _BIG):
            return None
        out.append((kind, value))
    return out


def _scalar_keys(items: list[Any], names: list[str], defaults: Mapping[str, Any]) -> list[Hashable] | None:
    """Fast twin of :func:`_canonical` of :func:`_key_maps` for a list-map: when every key (or its default)
    is a scalar of :data:`_SCALARS`, a tuple of ``(name, type, value)`` in the order of ``names`` for each
    item, equal exactly when the canonical texts of the key maps are (the same keys with the same typed
    values); ``None`` (the caller takes :func:`_canonical`) when any is anything else. Proved equal by
    ``tests/cluster/test_list_identities.py``."""
    out: list[Hashable] = []
    for item in items:
        key = []
        for name in names:
            if item is not None and name in item:
                value = item[name]
            elif name in defaults:
                value = defaults[name]
            else:
                continue
            kind = type(value)
            if kind not in _SCALARS or (kind is int and not -_BIG < value < _BIG):
                return None
            key.append((name, kind, value))
        out.append(tuple(key))
    return out


def _repeated(keys: Sequence[Hashable]) -> list[int]:
    """The index of each key's second appearance, as Kubernetes reports duplicates (``validateListSet``)."""
    seen: dict[Hashable, int] = {}
    out = []
    for index, key in enumerate(keys):
        seen[key] = seen.get(key, 0) + 1
        if seen[key] == 2:
            out.append(index)
    return out


def _canonical(value: Any) -> str:
    """Equality as Go's decoded JSON has it: ``1``, ``1.0`` and ``true`` differ; maps by sorted keys."""

    def tag(item: Any) -> Any:
        if isinstance(item, Mapping):
            return {key: tag(inner) for key, inner in item.items()}
        if isinstance(item, list):
            return [tag(inner) for inner in item]
        return [type(item).__name__, item]

    return json.dumps(tag(value), sort_keys=True, default=str)


def _short(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def _format_checker() -> Any:
    from jsonschema import FormatChecker

    checker = FormatChecker(formats=())
    for name, (low, high) in _INT_RANGES.items():

        def in_range(instance: object, low: int = low, high: int = high) -> bool:
            return not _is_integer(None, instance) or low <= int(instance) <= high  # type: ignore[call-overload]

        checker.checks(name)(in_range)

    def date_time(instance: object) -> bool:
        return not isinstance(instance, str) or go_regex(DATE_TIME_PATTERN).search(instance) is not None

    checker.checks("date-time")(date_time)

    return checker


@cache
def _crd_validator(kind: str) -> Validator:
    """``kind``'s validator, built once: Draft 4 (OpenAPI v3's schema dialect) with Kubernetes' keywords."""
    return _structural_validator(crd_schema(kind))


def _structural_validator(schema: Mapping[str, Any]) -> Validator:
    """A validator of ``schema`` (a resource's root) with Kubernetes' meaning of its keywords."""
    from jsonschema import Draft4Validator, validators

    type_checker = Draft4Validator.TYPE_CHECKER.redefine("integer", _is_integer)
    extended = validators.extend(Draft4Validator, validators=_keywords(schema), type_checker=type_checker)
    validator: Validator = extended(schema, format_checker=_format_checker())
    return validator


# -- problems ------------------------------------------------------------------------------------------------


def schema_problems(obj: Mapping[str, Any]) -> list[ObjectProblem]:
    """Every reason the API server refuses ``obj`` by its CRD's schema, ordered by path, then rule: none when
    the fast validator accepts it (:func:`fast_accepts`), else the full validator's explanation."""
    return [] if fast_accepts(obj) else full_schema_problems(obj)


def full_schema_problems(obj: Mapping[str, Any]) -> list[ObjectProblem]:
    """Every reason the API server refuses ``obj`` by its CRD's schema, by ``jsonschema`` with Kubernetes'
    keywords (:func:`_keywords`). Twin: :func:`fast_accepts` says yes exactly when this finds nothing."""
    kind = obj.get("kind")
    if not isinstance(kind, str) or kind not in KINDS:
        known = ", ".join(KINDS)
        return [ObjectProblem(str(kind), ("kind",), "schema.kind", f"kind {kind!r} is none of {known}")]
    problems = []
    api_version = KINDS[kind][0]
    if obj.get("apiVersion") != api_version:
        message = f"apiVersion must be {api_version!r}, not {obj.get('apiVersion')!r}"
        problems.append(ObjectProblem(kind, ("apiVersion",), "schema.apiVersion", message))
    metadata = obj.get("metadata")
    if metadata is None:
        problems.append(ObjectProblem(kind, ("metadata",), "schema.required", "metadata is required"))
    elif isinstance(metadata, Mapping):
        problems.extend(_strict_problems(kind, _object_meta_validator().iter_errors(metadata), ("metadata",)))
    problems.extend(_problem(kind, error) for error in _crd_validator(kind).iter_errors(obj))
    return _ordered(problems)


def _problem(kind: str, error: Any, prefix: ObjectPath = ()) -> ObjectProblem:
    rule = str(error.validator)
    message = str(error.message)
    if len(message) > _MESSAGE_LIMIT:
        message = message[: _MESSAGE_LIMIT - 3] + "..."
    path = (*prefix, *error.absolute_path)
    return ObjectProblem(kind, path, f"schema.{_RULES.get(rule, rule)}", message)


def _strict_problems(kind: str, errors: Iterable[Any], prefix: ObjectPath = ()) -> Iterator[ObjectProblem]:
    """Errors of a kubernetes-validate strict schema, whose ``additionalProperties: false`` spells an unknown
    field: one problem per unknown field, at the field."""
    for error in errors:
        if error.validator == "additionalProperties" and error.validator_value is False:
            known = error.schema.get("properties", {})
            for name in error.instance:
                if name not in known:
                    path: ObjectPath = (*prefix, *error.absolute_path, name)
                    yield ObjectProblem(kind, path, "schema.unknownField", f"unknown field {name!r}")
        else:
            yield _problem(kind, error, prefix)


def _ordered(problems: list[ObjectProblem]) -> list[ObjectProblem]:
    def key(problem: ObjectProblem) -> tuple[tuple[tuple[int, int, str], ...], str, str]:
        path = tuple((0, s, "") if isinstance(s, int) else (1, 0, s) for s in problem.path)
        return path, problem.rule, problem.message

    return sorted(problems, key=key)


# -- Knative Serving's Service ------------------------------------------------------------------------------

#: An inference's object and the vendored CRD that holds its schema (Knative Serving knative-v1.23.0, commit
#: 7ed4aa2a, ``config/core/300-resources/service.yaml``; the file's header says so).
KNATIVE_SERVICE: tuple[str, str] = ("serving.knative.dev/v1", "knative/serving.knative.dev_services.yaml")


@cache
def knative_schema() -> Mapping[str, Any]:
    """The ``openAPIV3Schema`` of the vendored Knative ``services.serving.knative.dev`` CRD's ``v1``."""
    import yaml

    text = resources.files(__package__).joinpath("crds", KNATIVE_SERVICE[1]).read_text(encoding="utf-8")
    crd = yaml.load(text, Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader))
    for served in crd["spec"]["versions"]:
        if served["name"] == "v1" and served["served"]:
            schema: Mapping[str, Any] = served["schema"]["openAPIV3Schema"]
            return schema
    raise LookupError(f"{KNATIVE_SERVICE[1]} serves no version v1")


@cache
def _knative_validator() -> Validator:
    return _structural_validator(knative_schema())


def knative_schema_problems(obj: Mapping[str, Any]) -> list[ObjectProblem]:
    """Every reason the API server refuses a Knative ``Service`` by its CRD's schema, as
    :func:`full_schema_problems` checks a job: the apiVersion, the ``metadata`` as strict ObjectMeta, then the
    CRD's ``openAPIV3Schema`` with Kubernetes' structural keywords (what it leaves to
    ``x-kubernetes-preserve-unknown-fields`` is not checked here: docs/cluster.md, "Inference")."""
    kind = "Service"
    problems = []
    if obj.get("apiVersion") != KNATIVE_SERVICE[0]:
        message = f"apiVersion must be {KNATIVE_SERVICE[0]!r}, not {obj.get('apiVersion')!r}"
        problems.append(ObjectProblem(kind, ("apiVersion",), "schema.apiVersion", message))
    metadata = obj.get("metadata")
    if metadata is None:
        problems.append(ObjectProblem(kind, ("metadata",), "schema.required", "metadata is required"))
    elif isinstance(metadata, Mapping):
        problems.extend(_strict_problems(kind, _object_meta_validator().iter_errors(metadata), ("metadata",)))
    problems.extend(_problem(kind, error) for error in _knative_validator().iter_errors(obj))
    return _ordered(problems)


# -- Kubernetes' core objects --------------------------------------------------------------------------------


def core_problems(obj: Mapping[str, Any]) -> list[ObjectProblem]:
    """Every reason the API server refuses a core object: none when :func:`fast_core_accepts` accepts it,
    else :func:`full_core_problems`."""
    return [] if fast_core_accepts(obj) else full_core_problems(obj)


def full_core_problems(obj: Mapping[str, Any]) -> list[ObjectProblem]:
    """Every reason the API server refuses a core object (``v1 PersistentVolumeClaim``) by Kubernetes'
    schema for :data:`KUBERNETES_VERSION`, strict (no unknown field), as ``kubernetes-validate`` ships it.

    ``kubernetes_validate.validate`` stops at the first error; its schema files are read here and every
    error is listed. Those schemas are plain JSON Schema (no list-map or int-or-string extensions). Twin:
    :func:`fast_core_accepts` (the same schema files, compiled by ``jsonschema_rs``).
    """
    kind = str(obj.get("kind"))
    validator = _core_validator(str(obj.get("apiVersion")), kind)
    if validator is None:
        message = f"Kubernetes {KUBERNETES_VERSION} has no {obj.get('apiVersion')} {kind}"
        return [ObjectProblem(kind, ("kind",), "schema.kind", message)]
    return _ordered(list(_strict_problems(kind, validator.iter_errors(obj))))


@cache
def _core_folder() -> Path:
    """kubernetes-validate's schema files for :data:`KUBERNETES_VERSION`, found without importing the package
    (its ``import`` costs more than a check of the starter org: it is never imported here)."""
    spec = importlib.util.find_spec("kubernetes_validate")
    if spec is None or not spec.submodule_search_locations:
        raise LookupError("kubernetes-validate is not installed")
    package = Path(next(iter(spec.submodule_search_locations)))
    return package / "kubernetes-json-schema" / f"v{KUBERNETES_VERSION}.0-local-strict"


@cache
def _core_definitions() -> Mapping[str, Any]:
    """kubernetes-validate's ``_definitions.json`` (every type the kinds' schemas refer to), read once."""
    text = (_core_folder() / "_definitions.json").read_text(encoding="utf-8")
    definitions: Mapping[str, Any] = json.loads(text)
    return definitions


def _core_validator_of(schema: Mapping[str, Any]) -> Validator:
    from jsonschema import Draft202012Validator
    from referencing import Registry, Resource

    registry: Registry[Any] = Resource.from_contents(_core_definitions()) @ Registry()
    if "$id" in schema:
        registry = Resource.from_contents(schema) @ registry
    validator: Validator = Draft202012Validator(schema, registry=registry)
    return validator


@cache
def _core_validator(api_version: str, kind: str) -> Validator | None:
    """The strict schema of one core kind (kubernetes-validate's file name: ``<kind>-<group>-<version>``)."""
    schema = _core_schema(api_version, kind)
    return None if schema is None else _core_validator_of(schema)


@cache
def _core_schema(api_version: str, kind: str) -> Mapping[str, Any] | None:
    """kubernetes-validate's strict schema file of one kind, read once, or ``None``."""
    name = re.sub(r"^([^./]*)(?:\.[^/]*)?/", r"\1-", api_version)
    schema_file = _core_folder() / f"{kind.lower()}-{name}.json"
    if not schema_file.is_file():
        return None
    schema: Mapping[str, Any] = json.loads(schema_file.read_text(encoding="utf-8"))
    return schema


@cache
def _object_meta_validator() -> Validator:
    """A job's ``metadata``: the API server decodes it into ObjectMeta, strictly when field validation is
    strict (apiextensions-apiserver ``pkg/apiserver/schema/objectmeta/coerce.go``,
    ``GetObjectMetaWithOptions`` with ``ReturnUnknownFieldPaths``): Kubernetes' ObjectMeta schema, strict."""
    return _core_validator_of({"$ref": _object_meta_ref()})


def _object_meta_ref() -> str:
    return f"{_core_definitions()['$id']}#/$defs/io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"


# -- the fast path: a yes from jsonschema_rs, the full validators above explain a no -------------------------


def fast_accepts(obj: Mapping[str, Any]) -> bool:
    """Whether ``obj`` is a valid job by its CRD, decided by ``jsonschema_rs`` on the CRD as
    :func:`template_engine.cluster.fastpath.structural_schema` spells it; the root's ``apiVersion`` and
    ``metadata`` as :func:`full_schema_problems` checks them. Twin of :func:`full_schema_problems`: yes
    exactly when it finds nothing (``tests/cluster/test_fast_schemas.py``). A value that is no JSON (a key
    that is no string, a date) is a no: the full validator decides."""
    kind = obj.get("kind")
    if not isinstance(kind, str) or kind not in KINDS or obj.get("apiVersion") != KINDS[kind][0]:
        return False
    metadata = obj.get("metadata")
    validator = _fast_crd(kind)
    if not isinstance(metadata, Mapping) or validator is None:
        return False
    try:
        return bool(_fast_object_meta().is_valid(metadata) and validator.is_valid(obj))
    except (ValueError, TypeError, OverflowError):
        return False


def fast_core_accepts(obj: Mapping[str, Any]) -> bool:
    """Whether ``obj`` is a valid core object, by ``jsonschema_rs`` on kubernetes-validate's strict schema;
    twin of :func:`full_core_problems` (yes exactly when it finds nothing)."""
    validator = _fast_core(str(obj.get("apiVersion")), str(obj.get("kind")))
    if validator is None:
        return False
    try:
        return bool(validator.is_valid(obj))
    except (ValueError, TypeError, OverflowError):
        return False


def fast_crd_schema(kind: str) -> dict[str, Any] | None:
    """``kind``'s CRD schema rewritten for the fast validator
    (:func:`template_engine.cluster.fastpath.structural_schema`), from the vendored YAML; ``None`` if the
    rewriting declines it."""
    from template_engine.cluster.fastpath import structural_schema

    return structural_schema(crd_schema(kind), _INT_RANGES, DATE_TIME_PATTERN)


def fast_schema_file(kind: str) -> str:
    """The name of the packaged JSON file (in ``fast_schemas/``, beside the vendored ``crds/``, which stay
    byte for byte the shared copies) that holds :func:`fast_crd_schema` of ``kind``:
    the CRD's YAML file's stem with ``.fast.json``."""
    return KINDS[kind][1].removesuffix(".yaml") + ".fast.json"


def write_fast_schemas(folder: Path) -> list[Path]:
    """Write :func:`fast_crd_schema` of every kind into ``folder`` (the package's ``fast_schemas/``) as
    JSON: run ``python -c 'from template_engine.cluster.schemas import *; write_fast_schemas(Path(...))'``
    after a vendored CRD or the rewriting changes (``tests/cluster/test_fast_schemas.py`` fails until
    then)."""
    written = []
    for kind in KINDS:
        target = folder / fast_schema_file(kind)
        target.write_text(json.dumps(fast_crd_schema(kind)) + "\n", encoding="utf-8")
        written.append(target)
    return written


def _packaged_fast_schema(kind: str) -> dict[str, Any] | None:
    """:func:`fast_crd_schema` of ``kind`` as the package holds it (one ``json.loads``, about 1 ms, where
    reading the YAML CRD takes about 40); computed when the file is missing. Twin of
    :func:`fast_crd_schema`: equal for every kind (``tests/cluster/test_fast_schemas.py``)."""
    packaged = resources.files(__package__).joinpath("fast_schemas", fast_schema_file(kind))
    if not packaged.is_file():
        return fast_crd_schema(kind)
    schema: dict[str, Any] | None = json.loads(packaged.read_text(encoding="utf-8"))
    return schema


@cache
def _fast_crd(kind: str) -> Any:
    """``kind``'s fast validator, compiled once; ``None`` if its schema says what the rewriting declines."""
    import jsonschema_rs

    from template_engine.cluster.fastpath import LIST_KEYWORD, list_keyword

    schema = _packaged_fast_schema(kind)
    if schema is None:
        return None
    keywords = {LIST_KEYWORD: list_keyword(list_duplicates)}
    return jsonschema_rs.Draft7Validator(schema, validate_formats=False, keywords=keywords)


def _fast_core_of(schema: Mapping[str, Any]) -> Any:
    import jsonschema_rs

    definitions = _core_definitions()
    found: list[tuple[str, Any]] = [(str(definitions["$id"]), definitions)]
    if "$id" in schema:
        found.append((str(schema["$id"]), dict(schema)))
    registry = jsonschema_rs.Registry(found)
    return jsonschema_rs.Draft202012Validator(dict(schema), validate_formats=False, registry=registry)


@cache
def _fast_core(api_version: str, kind: str) -> Any:
    schema = _core_schema(api_version, kind)
    return None if schema is None else _fast_core_of(schema)


@cache
def _fast_object_meta() -> Any:
    """A job's ``metadata``, as :func:`_object_meta_validator` checks it."""
    return _fast_core_of({"$ref": _object_meta_ref()})


__all__ = [
    "DATE_TIME_PATTERN",
    "KINDS",
    "KNATIVE_SERVICE",
    "KUBERNETES_VERSION",
    "core_problems",
    "crd_schema",
    "fast_accepts",
    "fast_core_accepts",
    "fast_crd_schema",
    "fast_schema_file",
    "full_core_problems",
    "full_schema_problems",
    "go_regex",
    "knative_schema",
    "knative_schema_problems",
    "list_duplicates",
    "schema_problems",
    "write_fast_schemas",
]
