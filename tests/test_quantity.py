"""Kubernetes quantities compared by value (``20M`` < ``1Gi``)."""

from __future__ import annotations

import re
from collections.abc import Iterator
from decimal import Decimal

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from template_engine import quantity
from template_engine.quantity import MAX_EXPONENT, MAX_QUANTITY_LENGTH, parse_quantity


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


# -- bounded parsing (a hostile text costs a length check, never a long match or an exception) ---------------


class _Recorder:
    """Stands in for the compiled pattern: records the length of every text it is asked to match, and fails
    at once (without matching) on a text longer than the limit."""

    def __init__(self, real: re.Pattern[str]) -> None:
        self.real = real
        self.lengths: list[int] = []

    def _record(self, text: str) -> None:
        self.lengths.append(len(text))
        assert len(text) <= quantity.MAX_QUANTITY_LENGTH, f"asked to match {len(text)} characters"

    def match(self, text: str) -> re.Match[str] | None:
        self._record(text)
        return self.real.match(text)

    def fullmatch(self, text: str) -> re.Match[str] | None:
        self._record(text)
        return self.real.fullmatch(text)


@pytest.fixture
def recorder(monkeypatch: pytest.MonkeyPatch) -> Iterator[_Recorder]:
    spy = _Recorder(quantity._QUANTITY)
    monkeypatch.setattr(quantity, "_QUANTITY", spy)
    quantity._parse_text.cache_clear()
    yield spy
    quantity._parse_text.cache_clear()


@pytest.mark.parametrize(
    "text",
    [
        "1" * 40_000 + "!",  # froze the server for 46 s with the old pattern
        "1" * 40_000,
        "." + "1" * 40_000 + "!",
        " " * 100 + "1Gi",
        "1" * (MAX_QUANTITY_LENGTH + 1),
    ],
)
def test_a_long_text_is_refused_before_any_matching(recorder: _Recorder, text: str) -> None:
    assert parse_quantity(text) is None
    assert all(n <= MAX_QUANTITY_LENGTH for n in recorder.lengths)


def test_the_longest_accepted_text_is_still_a_quantity(recorder: _Recorder) -> None:
    longest = "1" * (MAX_QUANTITY_LENGTH - 2) + "Gi"
    assert parse_quantity(longest) == Decimal("1" * (MAX_QUANTITY_LENGTH - 2)) * 2**30
    assert recorder.lengths == [MAX_QUANTITY_LENGTH]


@pytest.mark.parametrize(
    "value",
    [
        "1e99999999999999999999",  # decimal.Overflow before
        "1e-99999999999999999999",
        "1e" + "9" * 5000,  # ValueError before (int()'s digit limit)
        f"1e{MAX_EXPONENT + 1}",
        f"1e-{MAX_EXPONENT + 1}",
        f"1E+{MAX_EXPONENT + 1}",
        float("inf"),
        float("-inf"),
        float("nan"),
        10**5000,  # str() of it raised ValueError before
        -(10**5000),
        10**MAX_QUANTITY_LENGTH,
    ],
    ids=lambda v: repr(v)[:30] if not isinstance(v, int) else f"int-{v.bit_length()}-bits-{v > 0}",
)
def test_what_cannot_be_represented_is_not_a_quantity(value: object) -> None:
    assert parse_quantity(value) is None


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        (f"1e{MAX_EXPONENT}", Decimal(10) ** MAX_EXPONENT),
        (f"1e-{MAX_EXPONENT}", Decimal(10) ** -MAX_EXPONENT),
        (f"2E+{MAX_EXPONENT}", 2 * Decimal(10) ** MAX_EXPONENT),
        (10**MAX_QUANTITY_LENGTH - 1, Decimal(10**MAX_QUANTITY_LENGTH - 1)),
        (-4, Decimal(-4)),
        (1e300, Decimal("1e300")),
        ("1.", Decimal(1)),
        ("+.5", Decimal("0.5")),
        ("1e+3", Decimal(1000)),
    ],
)
def test_the_bounds_themselves_are_quantities(value: object, expected: Decimal) -> None:
    assert parse_quantity(value) == expected


# The pattern before it was made linear, and how its matches were read: the accepted language and the values
# must not change (beyond the exponent bound).
_OLD = re.compile(r"^([+]?[0-9]*\.?[0-9]+|[+]?[0-9]+\.)(([eE][-+]?[0-9]+)|[a-zA-Z]*)$")


def _old_parse(text: str) -> Decimal | None:
    m = _OLD.match(text.strip())
    if m is None:
        return None
    number = Decimal(m.group(1))
    if m.group(3):
        exponent = int(m.group(3)[1:])
        return None if abs(exponent) > MAX_EXPONENT else number * Decimal(10) ** exponent
    factor = quantity._SUFFIX.get(m.group(2))
    return None if factor is None else number * factor


@settings(max_examples=400, deadline=None)
@given(text=st.text(alphabet="0123456789.+-eEGiKkMmnu! ", max_size=12))
def test_the_same_texts_parse_to_the_same_values(text: str) -> None:
    assert parse_quantity(text) == _old_parse(text)


@settings(max_examples=200, deadline=None)
@given(
    whole=st.text(alphabet="0123456789", max_size=6),
    dot=st.sampled_from(["", "."]),
    fraction=st.text(alphabet="0123456789", max_size=6),
    sign=st.sampled_from(["", "+"]),
    tail=st.sampled_from(
        ["", "e3", "E-2", "e+7", "e", "Ki", "Mi", "Gi", "m", "k", "M", "G", "T", "P", "E", "Ei"]
    ),
)
def test_every_number_form_parses_as_before(
    whole: str, dot: str, fraction: str, sign: str, tail: str
) -> None:
    text = f"{sign}{whole}{dot}{fraction}{tail}"
    assert parse_quantity(text) == _old_parse(text)


@pytest.mark.parametrize(
    ("written", "meant"),
    [
        ("2GB", ("2G", "2Gi")),
        ("2Gb", ("2G", "2Gi")),
        ("512mb", ("512M", "512Mi")),
        ("1gib", ("1Gi",)),
        ("1.5 GiB", ("1.5Gi",)),
        ("512 Mi", ("512Mi",)),
        ("2KB", ("2k", "2Ki")),
        ("10 g", ("10G", "10Gi")),
        ("lots", ()),
        ("4x", ()),
        ("2" * 70 + "GB", ()),
    ],
)
def test_a_unit_kubernetes_does_not_read_has_its_nearest_quantities(
    written: str, meant: tuple[str, ...]
) -> None:
    """Issue 31: ``2GB`` is ``2G`` or ``2Gi`` in Kubernetes' words (a byte unit is never read as milli)."""
    from template_engine.quantity import nearest_quantities

    assert nearest_quantities(written) == meant
    assert all(quantity.is_quantity_text(text) for text in meant)
