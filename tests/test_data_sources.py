"""The data source kinds are one table (``models/data_sources.DATA_SOURCES``); what else lists them
reads it."""

from __future__ import annotations

import template_engine.layers as layers
from template_engine.merge.plan import SPEC_PLAN
from template_engine.models.data_sources import CONTAINER_PATH_FIELD, DATA_SOURCE, DATA_SOURCES
from template_engine.models.spec import Storage
from template_engine.runnable import REQUIRED_ITEM_FIELDS


def test_the_table_has_a_row_per_storage_list_in_the_model_s_order() -> None:
    assert tuple(Storage.model_fields) == tuple(kind.storage for kind in DATA_SOURCES)
    storage = SPEC_PLAN.child("storage")
    keys = {kind.storage: storage.child(kind.storage).key for kind in DATA_SOURCES}
    assert {name: key.field for name, key in keys.items() if key is not None} == {
        kind.storage: "id" if kind.storage == "dataVolume" else "name" for kind in DATA_SOURCES
    }


def test_the_required_fields_of_an_item_are_the_table_s() -> None:
    assert {path[1]: fields for path, fields in REQUIRED_ITEM_FIELDS.items() if path[0] == "storage"} == {
        kind.storage: kind.required for kind in DATA_SOURCES
    }
    assert DATA_SOURCE["nfs"].required == ("server", "path", "mountPath")


def test_the_container_path_field_is_the_table_s() -> None:
    assert layers.CONTAINER_PATH_FIELD is CONTAINER_PATH_FIELD  # layers.py reads the table's, not a copy
    assert CONTAINER_PATH_FIELD["nfs"] == "mountPath" and CONTAINER_PATH_FIELD["pvc"] == "path"
    assert DATA_SOURCE["dataVolume"].runai is None and DATA_SOURCE["emptyDirVolume"].runai is None
