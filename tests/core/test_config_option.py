"""A typed option (:mod:`undertow.core.config_option`): read from a string map, its default
when absent, deprecated keys, and a bad value raising with the key and the value."""

from __future__ import annotations

import pytest

from undertow.core.config import Configuration
from undertow.core.config_option import (
    ConfigOption,
    bool_option,
    choice,
    duration_option,
    int_option,
    memory_option,
    non_negative,
    positive,
    str_option,
)
from undertow.core.errors import ConfigurationError


@pytest.mark.parametrize(
    ("text", "value"),
    [("true", True), ("TRUE", True), (" yes ", True), ("1", True), ("on", True),
     ("false", False), ("False", False), ("no", False), ("0", False), ("off", False)],
)  # fmt: skip
def test_bool_option_parsing(text: str, value: bool) -> None:
    option = bool_option("some.flag", not value)
    assert Configuration({"some.flag": text}).get(option) is value


def test_option_builders() -> None:
    assert duration_option("a.b", 5).read({"a.b": "2 s"}) == 2000
    assert int_option("a.b", 5).read({}) == 5
    assert memory_option("a.b", 1).read({"a.b": "1kb"}) == 1024
    assert str_option("a.b", "x").read({"a.b": "y"}) == "y"
    assert bool_option("a.b", False, deprecated_keys=("old.b",)).read({"old.b": "on"}) is True


def test_a_deprecated_key_is_read_only_when_the_key_is_absent() -> None:
    option = int_option("new.key", 1, deprecated_keys=("old.key",))
    assert option.read({"old.key": "2"}) == 2
    assert option.read({"old.key": "2", "new.key": "3"}) == 3
    with pytest.raises(ConfigurationError, match=r"option 'old.key': cannot parse integer 'x'"):
        option.read({"old.key": "x"})


def test_a_check_refuses_a_parsed_value_naming_key_and_text() -> None:
    option = ConfigOption("a.size", int, 1, check=positive)
    with pytest.raises(ConfigurationError, match=r"option 'a.size' = '-4': must be > 0"):
        option.read({"a.size": "-4"})
    assert non_negative(0) is None and non_negative(-1) == "must be >= 0"
    assert choice("x", "y")("y") is None
    assert choice("x", "y")("z") == "must be one of x, y"
