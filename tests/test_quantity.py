"""Kubernetes quantities compared by value (``20M`` < ``1Gi``)."""

from __future__ import annotations

from decimal import Decimal

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from template_engine.quantity import parse_quantity


@pytest.mark.parametrize(
    ("text", "value"),
    [
        ("1Gi", Decimal(2**30)),
        ("1024Mi", Decimal(2**30)),
        ("1Ki", Decimal(1024)),
        ("1Ti", Decimal(2**40)),
        ("20M", Decimal(20_000_000)),
        ("1k", Decimal(1000)),
        ("4G", Decimal(4 * 10**9)),
        ("500m", Decimal("0.5")),
        ("250m", Decimal("0.25")),
        ("1.5Gi", Decimal(3 * 2**29)),
        ("1e3", Decimal(1000)),
        ("2E6", Decimal(2_000_000)),
        ("1E", Decimal(10**18)),
        ("8", Decimal(8)),
        ("0.5", Decimal("0.5")),
        (".5", Decimal("0.5")),
        ("+1", Decimal(1)),
        (" 1Gi ", Decimal(2**30)),
        (4, Decimal(4)),
        (0.5, Decimal("0.5")),
    ],
)
def test_values(text: str | float, value: Decimal) -> None:
    assert parse_quantity(text) == value


def test_comparisons() -> None:
    def q(text: str) -> Decimal:
        value = parse_quantity(text)
        assert value is not None, text
        return value

    assert q("20M") < q("1Gi")
    assert q("1Gi") == q("1024Mi")
    assert q("1G") < q("1Gi")
    assert q("2Gi") > q("1Gi")
    assert q("4G") < q("16Gi")
    assert q("900G") < q("1Ti")
    assert q("500m") < q("1")
    assert q("1000m") == q("1")


@pytest.mark.parametrize(
    "value",
    [
        "",
        "abc",
        "Gi",
        "1Gb",
        "1gi",
        "1.2.3",
        "--1",
        "-1",
        "1 Gi",
        "0x10",
        "1_000",
        "1e",
        "1i",
        None,
        True,
        False,
        [],
        {},
    ],
)
def test_invalid(value: object) -> None:
    assert parse_quantity(value) is None


@settings(max_examples=100, deadline=None)
@given(n=st.integers(0, 10**6), suffix=st.sampled_from(["Ki", "Mi", "Gi", "Ti"]))
def test_binary_suffixes_scale_by_1024(n: int, suffix: str) -> None:
    power = ["Ki", "Mi", "Gi", "Ti"].index(suffix) + 1
    assert parse_quantity(f"{n}{suffix}") == Decimal(n) * 1024**power
    assert parse_quantity(f"{n}{suffix}") == parse_quantity(str(n * 1024**power))


@settings(max_examples=100, deadline=None)
@given(
    a=st.integers(0, 10**6), b=st.integers(0, 10**6), suffix=st.sampled_from(["", "k", "M", "G", "Mi", "Gi"])
)
def test_order_follows_the_numbers(a: int, b: int, suffix: str) -> None:
    left, right = parse_quantity(f"{a}{suffix}"), parse_quantity(f"{b}{suffix}")
    assert left is not None and right is not None
    assert (left < right) == (a < b)
