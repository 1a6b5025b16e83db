"""The fast identities of ``x-kubernetes-list-type`` items find the same duplicates as ``_canonical``'s texts.

``schemas.list_duplicates`` (the one list-type rule of both schema validators) tells items apart by
``_canonical`` (Go's decoded JSON equality: ``1``, ``1.0`` and ``true`` differ); its fast twins
``_scalar_identities`` (list-set items) and ``_scalar_keys`` (list-map keys) take plain scalars as they are
(issue 20). Wherever a fast twin answers, it must find the same repeated items as ``_canonical``, on lists
made to repeat values of close types (``1``, ``1.0``, ``True``, ``"1"``, ``0.0``, ``-0.0``, ``None``).
"""

from __future__ import annotations

from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from template_engine.cluster import schemas

PROPERTIES = settings(max_examples=400, derandomize=True, deadline=None)

CLOSE = st.sampled_from([0, 1, -1, True, False, 1.0, 0.0, -0.0, "1", "", "a", "A", None, 10**18, -(10**18)])
PLAIN = st.sampled_from([0, 1, True, False, "1", "a", None])
SCALARS = st.one_of(CLOSE, st.integers(), st.text(max_size=3), st.floats(allow_nan=True))
VALUES = st.recursive(
    SCALARS,
    lambda inner: (
        st.lists(inner, max_size=2) | st.dictionaries(st.sampled_from(["a", "b"]), inner, max_size=2)
    ),
    max_leaves=4,
)
NAMES = st.lists(st.sampled_from(["name", "port"]), min_size=1, max_size=2)
ITEMS = st.lists(
    st.one_of(
        st.none(),
        st.dictionaries(st.sampled_from(["name", "port", "x"]), st.one_of(PLAIN, PLAIN, CLOSE, VALUES)),
    ),
    max_size=8,
)


def _canonical_repeats(values: list[Any]) -> list[int]:
    return schemas._repeated([schemas._canonical(value) for value in values])


@PROPERTIES
@given(st.lists(st.one_of(CLOSE, VALUES), max_size=8))
def test_the_set_identities_find_the_canonical_duplicates(items: list[Any]) -> None:
    fast = schemas._scalar_identities(items)
    if fast is not None:
        assert schemas._repeated(fast) == _canonical_repeats(items)


@PROPERTIES
@given(ITEMS, NAMES, st.dictionaries(st.sampled_from(["name", "port"]), CLOSE))
def test_the_map_keys_find_the_canonical_duplicates(
    items: list[Any], names: list[str], defaults: dict[str, Any]
) -> None:
    fast = schemas._scalar_keys(items, names, defaults)
    if fast is not None:
        assert schemas._repeated(fast) == _canonical_repeats(schemas._key_maps(items, names, defaults))


def test_the_fast_identities_answer_for_plain_scalars_and_doubt_the_rest() -> None:
    assert schemas._scalar_identities(["a", 1, True, None]) is not None
    assert schemas._scalar_identities([1.0]) is None  # JSON tells -0.0 from 0.0: _canonical decides
    assert (
        schemas._scalar_identities([10**18]) is None
    )  # json.dumps may refuse a long int: _canonical decides
    assert schemas._scalar_keys([{"name": "a"}, {"name": "a"}], ["name"], {}) is not None
    assert schemas._scalar_keys([{"name": {"x": 1}}], ["name"], {}) is None


def test_list_duplicates_tells_close_types_apart() -> None:
    found = list(schemas.list_duplicates("set", [1, True, "1", 1, None, None], [], {}))
    assert [index for index, _ in found] == [3, 5]
    items = [{"port": 80, "protocol": "TCP"}, {"port": 80}, {"port": 80, "protocol": "UDP"}, {"port": True}]
    found = list(schemas.list_duplicates("map", items, ["port", "protocol"], {"protocol": "TCP"}))
    assert found == [(1, "duplicate item by its keys (port=80, protocol=None)")]
