"""Option values as text (:mod:`undertow.core.option_text`): durations, memory sizes and maps
in Flink's notation; bad text raises naming the value."""

from __future__ import annotations

import pytest

from undertow.core.errors import ConfigurationError
from undertow.core.option_text import (
    format_map,
    parse_bool,
    parse_duration_ms,
    parse_map,
    parse_memory_size,
    parse_precise_duration_ms,
)


@pytest.mark.parametrize(
    ("text", "ms"),
    [
        ("100 ms", 100), ("100ms", 100), (" 7 MS ", 7), ("250", 250), (250, 250), (2.0, 2),
        ("5s", 5_000), ("5 sec", 5_000), ("2 seconds", 2_000), ("1.5 s", 1_500),
        ("10 min", 600_000), ("3m", 180_000), ("1 minute", 60_000),
        ("2h", 7_200_000), ("1 hour", 3_600_000), ("1 d", 86_400_000), ("2 days", 172_800_000),
        ("2000 us", 2), ("2000000 ns", 2), ("3000 microseconds", 3), ("1.1 s", 1_100),
        ("4000000 nanoseconds", 4), ("0", 0),
    ],
)  # fmt: skip
def test_parse_duration(text: str | int | float, ms: int) -> None:
    assert parse_duration_ms(text) == ms


@pytest.mark.parametrize("text", ["", "ms", "-5 ms", "5 parsecs", "1 2 s", "fast", "5s later"])
def test_bad_durations_raise_naming_the_value(text: str) -> None:
    with pytest.raises(ConfigurationError, match="cannot parse duration") as info:
        parse_duration_ms(text)
    assert repr(text) in str(info.value)


@pytest.mark.parametrize("text", ["0.5 ms", "1500 us", 1.9, "1 ns"])
def test_a_fraction_of_a_millisecond_is_refused_not_cut(text: str | float) -> None:
    with pytest.raises(ConfigurationError, match="not a whole number of milliseconds"):
        parse_duration_ms(text)


@pytest.mark.parametrize(
    ("text", "ms"), [("0.25 ms", 0.25), ("500 us", 0.5), ("2", 2.0), (0.1, 0.1), ("1 s", 1000.0)]
)
def test_precise_durations_keep_fractions(text: str | float, ms: float) -> None:
    assert parse_precise_duration_ms(text) == pytest.approx(ms)


def test_bool_is_not_a_duration() -> None:
    with pytest.raises(ConfigurationError, match="True"):
        parse_duration_ms(True)


@pytest.mark.parametrize(
    ("text", "size"),
    [
        ("32kb", 32 * 1024), ("32 KB", 32 * 1024), ("32k", 32 * 1024), ("1 mb", 1 << 20),
        ("2m", 2 << 20), ("1g", 1 << 30), ("3 gibibytes", 3 << 30), ("100", 100), ("7 b", 7),
        ("10 bytes", 10), (4096, 4096), ("0.5 kb", 512), ("1 kibibytes", 1024),
        ("1 mebibytes", 1 << 20), ("2 tb", 2 << 40), ("1t", 1 << 40),
    ],
)  # fmt: skip
def test_parse_memory_size(text: str | int, size: int) -> None:
    assert parse_memory_size(text) == size


@pytest.mark.parametrize("text", ["", "kb", "-1 kb", "12 parsecs", "lots", "1 pb"])
def test_bad_memory_sizes_raise_naming_the_value(text: str) -> None:
    with pytest.raises(ConfigurationError, match="cannot parse memory size") as info:
        parse_memory_size(text)
    assert repr(text) in str(info.value)


@pytest.mark.parametrize(
    ("text", "value"),
    [("true", True), ("TRUE", True), (" yes ", True), ("1", True), ("on", True),
     ("false", False), ("False", False), ("no", False), ("0", False), ("off", False), (True, True)],
)  # fmt: skip
def test_parse_bool(text: str | bool, value: bool) -> None:
    assert parse_bool(text) is value


def test_a_bad_boolean_raises_naming_the_value() -> None:
    with pytest.raises(ConfigurationError, match="cannot parse boolean 'maybe'"):
        parse_bool("maybe")


@pytest.mark.parametrize(
    "parameters",
    [{}, {"a": "1"}, {"k": "v", "k2": "v2"}, {"a,b": "c:d", "it's": '"quoted"'}, {" pad ": "x"}],
)
def test_a_map_written_by_format_map_reads_back(parameters: dict[str, str]) -> None:
    assert parse_map(format_map(parameters)) == parameters


@pytest.mark.parametrize("text", ["a", "'a:b", "a:b,c"])
def test_a_bad_map_raises_naming_the_text(text: str) -> None:
    with pytest.raises(ConfigurationError, match=r"cannot parse .* as a map"):
        parse_map(text)
