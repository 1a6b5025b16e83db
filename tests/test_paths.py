"""Field paths: typed values rendered as strings only at the edges."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from template_engine.paths import Match, Path, format_path, is_prefix, parse_path

EXAMPLES: list[tuple[Path, str]] = [
    (("image",), "image"),
    (("compute", "cpuCoreRequest"), "compute.cpuCoreRequest"),
    (("storage", "nfs", Match("name", "data"), "server"), "storage.nfs[name=data].server"),
    (("ports", Match("container", 8080)), "ports[container=8080]"),
    (("ports", Match("container", 8080), "serviceType"), "ports[container=8080].serviceType"),
    (("environmentVariables", 2, "value"), "environmentVariables[2].value"),
    (("environmentVariables", Match("name", "HTTP_PROXY")), "environmentVariables[name=HTTP_PROXY]"),
    (("labels", Match("name", "acme.io/owner"), "value"), "labels[name=acme.io/owner].value"),
    (
        ("relatedUrls", Match("url", "https://wandb.ai/acme"), "type"),
        "relatedUrls[url=https://wandb.ai/acme].type",
    ),
    (
        ("storage", "pvc", Match("name", "scratch"), "claimInfo", "addedAttrValues", Match("key", "a")),
        "storage.pvc[name=scratch].claimInfo.addedAttrValues[key=a]",
    ),
    (
        ("storage", "dataVolume", Match("id", "1111-aa"), "mountPath"),
        "storage.dataVolume[id=1111-aa].mountPath",
    ),
]


@pytest.mark.parametrize(("path", "text"), EXAMPLES, ids=[t for _, t in EXAMPLES])
def test_format(path: Path, text: str) -> None:
    assert format_path(path) == text


@pytest.mark.parametrize(("path", "text"), EXAMPLES, ids=[t for _, t in EXAMPLES])
def test_parse(path: Path, text: str) -> None:
    assert parse_path(text) == path
    assert format_path(parse_path(text)) == text


def test_a_matched_integer_is_an_integer() -> None:
    (_, match) = parse_path("ports[container=8080]")
    assert match == Match("container", 8080)
    assert isinstance(match, Match) and isinstance(match.value, int)


def test_surrounding_whitespace_is_ignored() -> None:
    assert parse_path("  compute.cpuCoreRequest \n") == ("compute", "cpuCoreRequest")


@pytest.mark.parametrize(
    "text",
    ["", "   ", ".image", "a..b", "a.", "a[", "a[name=x", "a[name]", "a b", "a]", "a.[0]", "a[-1]", "9a"],
)
def test_malformed_paths(text: str) -> None:
    with pytest.raises(ValueError):
        parse_path(text)


def test_match_renders_as_a_selector() -> None:
    assert str(Match("name", "HOME")) == "[name=HOME]"


def test_is_prefix() -> None:
    item: Path = ("environmentVariables", Match("name", "A"))
    assert is_prefix((), item)
    assert is_prefix(("environmentVariables",), item)
    assert is_prefix(item, (*item, "value"))
    assert not is_prefix((*item, "value"), item)
    assert not is_prefix(("environmentVariables", Match("name", "B")), (*item, "value"))
    assert not is_prefix(("labels",), item)


identifiers = st.from_regex(r"[A-Za-z_][A-Za-z0-9_]{0,8}", fullmatch=True)
# Matched values: text without "]" that does not look like an integer (those parse back as integers), or ints.
match_values = st.one_of(
    st.from_regex(r"[A-Za-z_./:-][A-Za-z0-9_./:=-]{0,12}", fullmatch=True),
    st.integers(0, 65535),
)
segments = st.one_of(identifiers, st.integers(0, 99), st.builds(Match, identifiers, match_values))


@settings(max_examples=100, deadline=None)
@given(path=st.lists(segments, min_size=1, max_size=6).map(tuple))
def test_format_and_parse_round_trip(path: Path) -> None:
    assert parse_path(format_path(path)) == path


def test_value_at_reads_nested_mappings_and_is_none_past_anything_else() -> None:
    from template_engine.paths import value_at

    data = {"spec": {"template": {"spec": {"containers": [1]}}, "n": 3}}
    assert value_at(data, "spec", "template", "spec", "containers") == [1]
    assert value_at(data, "spec", "n", "deeper") is None  # a number has no fields
    assert value_at(data, "missing", "x") is None
    assert value_at(data) is data
