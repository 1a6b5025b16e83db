"""A request's list of field paths is read once (``service/documents.field_paths``): ``fieldsToClear`` and
a policy PATCH's ``reset`` refuse a path too long or not a path in the same words, in the request's order."""

from __future__ import annotations

import pytest

from template_engine.errors import Problem
from template_engine.service.documents import MAX_PATH_LENGTH, clear_fields, field_paths
from template_engine.service.errors import ApiError
from template_engine.service.policy_reset import reset_targets

LONG = "a" * (MAX_PATH_LENGTH + 1)


def test_each_path_is_read_in_order_with_its_place_in_the_request() -> None:
    read = field_paths(["spec.image", "spec..x", LONG], "fieldsToClear")
    assert [(where, text) for where, text, _ in read] == [
        (("fieldsToClear", 0), "spec.image"),
        (("fieldsToClear", 1), "spec..x"),
        (("fieldsToClear", 2), LONG),
    ]
    assert read[0][2] == ("spec", "image")
    assert isinstance(read[1][2], Problem) and read[1][2].expected == "a field path such as spec.image"
    assert read[2][2] == Problem(
        f"a field path of {len(LONG)} characters", ("fieldsToClear", 2), None, f"at most {MAX_PATH_LENGTH}"
    )


def _refusal(run: object) -> list[tuple[object, ...]]:
    with pytest.raises(ApiError) as caught:
        run()  # type: ignore[operator]
    return [(p.path[1], p.message) for p in caught.value.problems]


def test_clearing_and_resetting_refuse_a_bad_path_alike_in_the_request_s_order() -> None:
    texts = [LONG, "spec..x"]
    cleared = _refusal(lambda: clear_fields({}, [*texts, "other.x"], ("spec",)))
    reset = _refusal(lambda: reset_targets(texts))
    assert cleared[:2] == reset
    assert [index for index, _ in cleared] == [0, 1, 2]


def test_the_asset_kinds_of_data_sources_are_the_table_s() -> None:
    from template_engine.models.data_sources import DATA_SOURCES
    from template_engine.service.asset_shapes import BY_STORAGE, LIST_SPEC_KEYS

    served = {kind.storage: kind.runai for kind in DATA_SOURCES if kind.runai is not None}
    assert {storage: (k.kind, k.path) for storage, k in BY_STORAGE.items()} == {
        storage: (source.kind, source.path) for storage, source in served.items()
    }
    assert {source.kind: source.list_key for source in served.values()} == LIST_SPEC_KEYS
    assert LIST_SPEC_KEYS["secret-volume"] == "secret"
    assert BY_STORAGE["hostPath"].path == "datasource/host-path"
