"""The independent check of the objects: validators that share no code with ``template_engine.cluster``.

The engine checks a job with ``jsonschema`` and its own reading of Kubernetes' extensions
(``cluster/schemas.py``); the proof must not lean on that reading, so here:

- a job object is checked by **jsonschema-rs** (a Rust validator) against its CRD's ``openAPIV3Schema`` read
  straight from ``template_engine/cluster/crds/*.yaml``, after one small transformation made for this test
  only (:func:`strict_schema`): every object schema that lists ``properties`` and says nothing of
  ``additionalProperties`` refuses any other field (``additionalProperties: false``), which is what the API
  server's strict field validation does with a field its structural schema does not know.  The vendored CRDs
  use no ``x-kubernetes-preserve-unknown-fields`` and no ``x-kubernetes-embedded-resource``, so nothing needs
  to stay open (checked below); ``x-kubernetes-int-or-string`` is spelt beside its ``anyOf`` of integer and
  string, which jsonschema-rs reads as is.  What this check does not see: the uniqueness of list-map items and
  CEL ``x-kubernetes-validations`` (the engine checks both; Kubernetes itself checks the pods below);
- every pod template (``PodTemplateSpec``) of a job is checked by **kubernetes-validate** (strict: unknown
  fields refused) for Kubernetes 1.31, wrapped in a ``v1 PodTemplate`` (the kind whose ``template`` is a
  ``PodTemplateSpec``), and so is every ``PersistentVolumeClaim``.
"""

from __future__ import annotations

import copy
from collections.abc import Iterator, Mapping, Sequence
from functools import cache
from pathlib import Path
from typing import Any

import jsonschema_rs
import kubernetes_validate
import yaml

REPO = Path(__file__).resolve().parents[2]
CRDS = REPO / "template_engine" / "cluster" / "crds"
KUBERNETES = "1.31"
#: The replica specs' key of each job kind.
REPLICAS_KEY = {
    "PyTorchJob": "pytorchReplicaSpecs",
    "TFJob": "tfReplicaSpecs",
    "XGBoostJob": "xgbReplicaSpecs",
    "JAXJob": "jaxReplicaSpecs",
    "MPIJob": "mpiReplicaSpecs",
}
#: Extensions that would keep part of an object open; the transformation assumes the CRDs have none.
OPEN_EXTENSIONS = ("x-kubernetes-preserve-unknown-fields", "x-kubernetes-embedded-resource")


def strict_schema(schema: Any) -> Any:
    """``schema`` with ``additionalProperties: false`` wherever ``properties`` is given alone (a copy)."""
    if isinstance(schema, list):
        return [strict_schema(item) for item in schema]
    if not isinstance(schema, Mapping):
        return schema
    found = {key: strict_schema(value) for key, value in schema.items()}
    if "properties" in found and "additionalProperties" not in found:
        found["additionalProperties"] = False
    return found


def _walk(schema: Any) -> Iterator[Mapping[str, Any]]:
    if isinstance(schema, list):
        for item in schema:
            yield from _walk(item)
    elif isinstance(schema, Mapping):
        yield schema
        for value in schema.values():
            yield from _walk(value)


@cache
def crd_validators() -> Mapping[str, tuple[str, Any]]:
    """Each kind's ``apiVersion`` and its jsonschema-rs validator (the served, storage version of its CRD)."""
    found: dict[str, tuple[str, Any]] = {}
    for path in sorted(CRDS.glob("*.yaml")):
        crd = yaml.load(
            path.read_text(encoding="utf-8"), Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader)
        )
        kind = crd["spec"]["names"]["kind"]
        group = crd["spec"]["group"]
        for version in crd["spec"]["versions"]:
            if version["served"] and version.get("storage", True):
                schema = version["schema"]["openAPIV3Schema"]
                assert not any(key in node for node in _walk(schema) for key in OPEN_EXTENSIONS), path
                found[kind] = (
                    f"{group}/{version['name']}",
                    jsonschema_rs.Draft4Validator(strict_schema(schema)),
                )
    return found


def crd_errors(obj: Mapping[str, Any]) -> list[str]:
    """jsonschema-rs's errors for a job object against its strict CRD schema."""
    api_version, validator = crd_validators()[str(obj["kind"])]
    if obj.get("apiVersion") != api_version:
        return [f"apiVersion {obj.get('apiVersion')!r}: the CRD serves {api_version}"]
    return [f"{list(error.instance_path)}: {error.message}" for error in validator.iter_errors(dict(obj))]


@cache
def _schema_contents(filename: str, desired_version: str) -> Any:
    return _READ_SCHEMA(filename, desired_version)


#: kubernetes-validate reads its schema files (``_definitions.json``: 2 MB) at every call; its validation is
#: left as it is, only what it read is kept between calls.
_READ_SCHEMA = kubernetes_validate.utils.schema_contents
kubernetes_validate.utils.schema_contents = _schema_contents  # type: ignore[assignment]


def kubernetes_errors(obj: Mapping[str, Any]) -> list[str]:
    """kubernetes-validate's error for a core object (strict, Kubernetes 1.31), or none."""
    try:
        kubernetes_validate.validate(copy.deepcopy(dict(obj)), KUBERNETES, strict=True)
    except kubernetes_validate.ValidationError as error:
        return [f"{list(error.path)}: {error.message}"]
    return []


def pod_templates(obj: Mapping[str, Any]) -> Iterator[tuple[str, Mapping[str, Any]]]:
    """``(replica type, pod template)`` of a job object."""
    for rtype, replica in (obj.get("spec", {}).get(REPLICAS_KEY[str(obj["kind"])]) or {}).items():
        yield rtype, replica["template"]


def independent_errors(objects: Sequence[Mapping[str, Any]]) -> list[str]:
    """Every error the independent validators find in a composition's objects, each naming its object."""
    errors: list[str] = []
    for obj in objects:
        kind = str(obj.get("kind"))
        if kind in REPLICAS_KEY:
            errors += [f"{kind}: {e}" for e in crd_errors(obj)]
            for rtype, template in pod_templates(obj):
                wrapped = {"apiVersion": "v1", "kind": "PodTemplate", "metadata": {"name": "x"}}
                errors += [
                    f"{kind} {rtype} pod: {e}" for e in kubernetes_errors({**wrapped, "template": template})
                ]
        elif kind == "PersistentVolumeClaim":
            errors += [f"{kind}: {e}" for e in kubernetes_errors(obj)]
        elif kind in _OTHER_KINDS:  # the objects of a training, a workspace, an inference (issue 32)
            from kind_specs import independent_errors as other_kinds_errors

            errors += other_kinds_errors([obj])
        else:
            errors.append(f"an object of an unexpected kind {kind!r}")
    return errors


#: The objects the other kinds run as: checked by ``kind_specs.independent_errors``.
_OTHER_KINDS = frozenset({"Job", "StatefulSet", "Service"})
