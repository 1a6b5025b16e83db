"""Every field of a training's, a workspace's and an inference's spec reaches their objects or is said not
to (issue 32), as ``test_model_walk.py`` proves it of the distributed specs: some value of the objects has
the field as its source, or a warning names it, or a table lists it (``NOT_REPRESENTABLE``, ``CHOOSERS``,
``KIND_NOT_REPRESENTABLE``)."""

from __future__ import annotations

from typing import Any

import pytest
from kind_specs import render
from test_model_walk import _as_path, _build, _covered, _fields, _normal, _value

from template_engine.cluster.mapping import CHOOSERS, NOT_REPRESENTABLE, SpecSource
from template_engine.cluster.workloads import KIND_NOT_REPRESENTABLE
from template_engine.kinds import KIND_BY_NAME

#: Values a field of a kind must hold to be written at all.
KIND_SPECIAL: dict[str, Any] = {"activationReplicas": 2, "metric": "throughput"}
KINDS = ("training", "workspace", "inference")
CASES = [(kind, path, ann) for kind in KINDS for path, ann in _fields(KIND_BY_NAME[kind].spec_model)]


def test_the_walk_sees_every_field_of_each_kind() -> None:
    assert {kind for kind, _, _ in CASES} == set(KINDS)
    assert len(CASES) > 3 * 100
    assert ("inference", ("autoscaling", "metricThreshold")) in [(k, p) for k, p, _ in CASES]


@pytest.mark.parametrize(
    ("kind", "path", "annotation"), CASES, ids=[f"{k}-{'.'.join(p)}" for k, p, _ in CASES]
)
def test_every_field_of_a_kind_is_mapped_or_not_representable(
    kind: str, path: tuple[str, ...], annotation: Any
) -> None:
    leaf = KIND_SPECIAL.get(path[-1])
    leaf = _value(path[-1], annotation) if leaf is None else leaf
    model = KIND_BY_NAME[kind].spec_model
    fragment = _build(model, path, leaf, KIND_BY_NAME[kind].plan())
    if path[0] == "servingPort" and path[1] != "container":  # a serving port is written with its number
        fragment["servingPort"] = {"container": 8000, **fragment["servingPort"]}
    result = render(kind, {"image": "i", **fragment})
    field = _normal(_as_path(fragment, path))
    sources = [
        _normal(s.path) for table in result.origins for s in table.values() if isinstance(s, SpecSource)
    ]
    warned = [_normal(w.field) for w in result.warnings]
    listed = [*NOT_REPRESENTABLE, *CHOOSERS, *KIND_NOT_REPRESENTABLE[kind]]
    item = field.rsplit(".", 1)[0]
    if item.endswith("[]") and any(known.startswith(item + ".") for known in sources):
        return  # a keyed item's key names its item: where the item lands, so does it
    assert any(_covered(field, known) for known in [*sources, *warned, *listed]), (
        f"{kind} {field}: neither in the objects nor listed as not representable"
    )
