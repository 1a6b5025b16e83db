"""The objects' YAML writer: PyYAML's own text without comments, and text that parses back with them."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

from template_engine.cluster.yamlout import dump_documents, dump_object, scalar
from template_engine.compose import compose
from template_engine.loader.tree import load_org

EXAMPLE = Path(__file__).resolve().parents[2] / "templates"


def pyyaml(value: Any) -> str:
    return yaml.safe_dump(
        value, sort_keys=False, allow_unicode=True, width=math.inf, default_flow_style=False
    )


def test_every_object_of_the_example_org_is_written_as_pyyaml_writes_it() -> None:
    org = load_org(EXAMPLE)
    seen = 0
    for view, template in org.views():
        manifests = compose(org, template, view).manifests
        assert manifests is not None
        for obj in manifests.objects:
            assert dump_object(obj) == pyyaml(obj)
            seen += 1
    assert seen >= 18  # one job per pair at least


def test_scalars_are_quoted_as_pyyaml_quotes_them() -> None:
    for value in ["32", "yes", "", "#x", "a: b", " lead", "~", "1e3", None, True, 1.5, math.inf, 10**20, "é"]:
        assert f"k: {scalar(value)}\n" == pyyaml({"k": value}), value
    assert scalar("x\ny") == '"x\\ny"'  # one line, so that a comment can follow


def test_a_comment_ends_the_line_of_its_value() -> None:
    obj = {
        "metadata": {"name": "a", "labels": {}},
        "args": ["-n", "32"],
        "env": [{"name": "A", "value": "1"}],
    }
    notes = {
        ("metadata", "name"): "the name",
        ("metadata", "labels"): "none",
        ("args", 1): "a # hash\nand a break",
    }
    notes[("env", 0, "name")] = "item"
    text = dump_object(obj, notes.get)
    assert text == (
        "metadata:\n"
        "  name: a  # the name\n"
        "  labels: {}  # none\n"
        "args:\n"
        "- -n\n"
        "- '32'  # a # hash and a break\n"
        "env:\n"
        "- name: A  # item\n"
        "  value: '1'\n"
    )
    assert yaml.safe_load(text) == obj


def test_documents_start_with_a_separator() -> None:
    text = dump_documents([{"a": 1}, {"b": [[1, 2], []]}], [None, lambda path: "x"])
    assert text == "---\na: 1\n---\nb:\n-\n  - 1  # x\n  - 2  # x\n- []  # x\n"
    assert list(yaml.safe_load_all(text)) == [{"a": 1}, {"b": [[1, 2], []]}]


_SCALARS = st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=12)
_VALUES = st.recursive(
    _SCALARS,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=6), inner, max_size=4),
    max_leaves=20,
)


@settings(max_examples=300, deadline=None)
@given(value=_VALUES, note=st.text(max_size=20))
def test_any_value_parses_back_with_or_without_comments(value: Any, note: str) -> None:
    assert yaml.safe_load(dump_object(value)) == value
    assert yaml.safe_load(dump_object(value, lambda path: note)) == value


def test_the_commented_writer_lays_out_every_object_as_the_library_writer_does() -> None:
    """``dump_object`` without comments is PyYAML's (libyaml's) writer; with a comment function it is the
    line writer: the two must agree on the text, line for line, when no comment is given."""
    org = load_org(EXAMPLE)
    for view, template in org.views():
        manifests = compose(org, template, view).manifests
        assert manifests is not None
        for obj in manifests.objects:
            assert dump_object(obj, lambda _path: None) == dump_object(obj)
