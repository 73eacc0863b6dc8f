"""Flink's value syntax: durations, memory sizes, booleans and numbers (examples and properties)."""

import re
from datetime import timedelta

import pytest
from hypothesis import given
from hypothesis import strategies as st

from flinkish_cli.config.units import (
    DURATION_UNITS,
    MAX_BYTES,
    MEMORY_UNITS,
    ValueProblem,
    format_duration,
    format_memory,
    parse_bool,
    parse_duration,
    parse_float,
    parse_int,
    parse_memory,
)

US = timedelta(microseconds=1)
MAX_DAYS = 10**6  # comfortably inside timedelta's range for every unit


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("10s", timedelta(seconds=10)),
        ("10 s", timedelta(seconds=10)),
        ("1 min", timedelta(minutes=1)),
        ("1m", timedelta(minutes=1)),
        ("500 ms", timedelta(milliseconds=500)),
        ("2h", timedelta(hours=2)),
        ("1d", timedelta(days=1)),
        ("3 days", timedelta(days=3)),
        ("250", timedelta(milliseconds=250)),
        ("0", timedelta(0)),
        ("  7 SECONDS  ", timedelta(seconds=7)),
        ("5 µs", timedelta(microseconds=5)),
        ("5us", timedelta(microseconds=5)),
        ("5 μs", timedelta(microseconds=5)),
        ("3000 ns", timedelta(microseconds=3)),
        ("2 millis", timedelta(milliseconds=2)),
        ("10min", timedelta(minutes=10)),
    ],
)
def test_duration_examples(text: str, expected: timedelta) -> None:
    assert parse_duration(text) == expected


@pytest.mark.parametrize(
    "text", ["", "   ", "s", "10 parsecs", "-5 s", "1.5 s", "ten seconds", "10 s s", "1500 ns"]
)
def test_duration_rejects(text: str) -> None:
    with pytest.raises(ValueProblem):
        parse_duration(text)


def test_duration_error_names_expected_form() -> None:
    with pytest.raises(ValueProblem) as error:
        parse_duration("10 parsecs")
    assert error.value.problem == "is not a duration"
    assert error.value.expected.startswith("e.g. 10 s, 500 ms, 1 min")


@pytest.mark.parametrize(
    ("value", "text"),
    [
        (timedelta(seconds=10), "10 s"),
        (timedelta(minutes=1), "1 min"),
        (timedelta(milliseconds=500), "500 ms"),
        (timedelta(hours=2), "2 h"),
        (timedelta(days=1), "1 d"),
        (timedelta(0), "0 ms"),
        (timedelta(seconds=90), "90 s"),
        (timedelta(microseconds=7), "7 µs"),
    ],
)
def test_duration_format(value: timedelta, text: str) -> None:
    assert format_duration(value) == text


@given(st.timedeltas(min_value=timedelta(0), max_value=timedelta(days=MAX_DAYS)))
def test_duration_round_trip(value: timedelta) -> None:
    assert parse_duration(format_duration(value)) == value


def _random_case(draw: st.DrawFn, text: str) -> str:
    flips = draw(st.lists(st.booleans(), min_size=len(text), max_size=len(text)))
    return "".join(
        c.upper() if flip and c.isascii() else c for c, flip in zip(text, flips, strict=True)
    )


@st.composite
def written_durations(draw: st.DrawFn) -> tuple[str, timedelta]:
    unit = draw(st.sampled_from(sorted(DURATION_UNITS)))
    size_ns = DURATION_UNITS[unit]
    step = 1000 if size_ns < 1000 else 1  # nanoseconds only in whole microseconds
    amount = draw(st.integers(0, MAX_DAYS * 86_400_000_000_000 // size_ns // step)) * step
    spaces = draw(st.sampled_from(["", " ", "  ", "\t"]))
    pad = draw(st.sampled_from(["", " ", "\n"]))
    text = f"{pad}{amount}{spaces}{_random_case(draw, unit)}{pad}"
    return text, timedelta(microseconds=amount * size_ns // 1000)


@given(written_durations())
def test_duration_units_whitespace_and_case(case: tuple[str, timedelta]) -> None:
    text, expected = case
    assert parse_duration(text) == expected


@given(st.integers(0, 10**12))
def test_bare_number_is_milliseconds(amount: int) -> None:
    assert parse_duration(str(amount)) == timedelta(milliseconds=amount)


@given(st.text())
def test_duration_garbage_is_rejected_cleanly(text: str) -> None:
    """Any text either parses (digits, then a known unit) or raises ValueProblem."""
    match = re.fullmatch(r"([0-9]+)(.*)", text.strip(), re.DOTALL)
    valid = match is not None and match.group(2).strip().lower() in {"", *DURATION_UNITS}
    try:
        parse_duration(text)
    except ValueProblem:
        return
    assert valid


@given(
    st.text(alphabet=st.characters(categories=["L"]), min_size=1).filter(
        lambda u: u.strip().lower() not in DURATION_UNITS and u.strip() == u
    )
)
def test_duration_unknown_unit(unit: str) -> None:
    with pytest.raises(ValueProblem):
        parse_duration(f"10 {unit}")


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("128mb", 128 << 20),
        ("128m", 128 << 20),
        ("128 MB", 128 << 20),
        ("2 gb", 2 << 30),
        ("1g", 1 << 30),
        ("64k", 64 << 10),
        ("64 kibibytes", 64 << 10),
        ("1t", 1 << 40),
        ("1 tebibytes", 1 << 40),
        ("100", 100),
        ("100 b", 100),
        ("100 bytes", 100),
        ("1600m", 1600 << 20),
    ],
)
def test_memory_examples(text: str, expected: int) -> None:
    assert parse_memory(text) == expected


@pytest.mark.parametrize("text", ["", "mb", "1.5 gb", "-1 mb", "12 parsecs", "99999999999 tb"])
def test_memory_rejects(text: str) -> None:
    with pytest.raises(ValueProblem):
        parse_memory(text)


@pytest.mark.parametrize(
    ("size", "text"),
    [(128 << 20, "128 mb"), (1 << 30, "1 gb"), (64 << 10, "64 kb"), (5, "5 bytes"), (0, "0 bytes")],
)
def test_memory_format(size: int, text: str) -> None:
    assert format_memory(size) == text


@given(st.integers(0, MAX_BYTES))
def test_memory_round_trip(size: int) -> None:
    assert parse_memory(format_memory(size)) == size


@st.composite
def written_sizes(draw: st.DrawFn) -> tuple[str, int]:
    unit = draw(st.sampled_from(sorted(MEMORY_UNITS)))
    amount = draw(st.integers(0, MAX_BYTES // MEMORY_UNITS[unit]))
    spaces = draw(st.sampled_from(["", " ", "   "]))
    return f" {amount}{spaces}{_random_case(draw, unit)} ", amount * MEMORY_UNITS[unit]


@given(written_sizes())
def test_memory_units_whitespace_and_case(case: tuple[str, int]) -> None:
    text, expected = case
    assert parse_memory(text) == expected


@given(st.integers(0, MAX_BYTES))
def test_bare_number_is_bytes(size: int) -> None:
    assert parse_memory(str(size)) == size


@given(st.text())
def test_memory_garbage_is_rejected_cleanly(text: str) -> None:
    match = re.fullmatch(r"([0-9]+)(.*)", text.strip(), re.DOTALL)
    valid = match is not None and match.group(2).strip().lower() in {"", *MEMORY_UNITS}
    try:
        parse_memory(text)
    except ValueProblem:
        return
    assert valid


@given(st.sampled_from(["true", "false"]), st.data())
def test_bool_any_case(word: str, data: st.DataObject) -> None:
    flips = data.draw(st.lists(st.booleans(), min_size=len(word), max_size=len(word)))
    text = "".join(c.upper() if f else c for c, f in zip(word, flips, strict=True))
    assert parse_bool(f" {text} ") is (word == "true")


@pytest.mark.parametrize("text", ["yes", "no", "on", "off", "1", "0", ""])
def test_bool_rejects_yaml_11_words(text: str) -> None:
    with pytest.raises(ValueProblem):
        parse_bool(text)


@given(st.integers(-(2**31), 2**31 - 1))
def test_int_round_trip(value: int) -> None:
    assert parse_int(str(value)) == value


@pytest.mark.parametrize("text", ["1.0", "x", "", "2147483648", "1_000", "٣"])
def test_int_rejects(text: str) -> None:
    with pytest.raises(ValueProblem):
        parse_int(text)


@given(st.floats(allow_nan=False, allow_infinity=False))
def test_float_round_trip(value: float) -> None:
    assert parse_float(repr(value)) == value


@pytest.mark.parametrize("text", ["nan", "inf", "-Infinity", "0.5.1", "", "1e999"])
def test_float_rejects(text: str) -> None:
    with pytest.raises(ValueProblem):
        parse_float(text)
