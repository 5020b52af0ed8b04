"""A typed option: its Flink key, the parser from text, its default, its deprecated keys and a
check of the parsed value; builders per kind of value and the common checks.

An option reads a string map (a ``Configuration``'s values); a bad value raises
:class:`~undertow.core.errors.ConfigurationError` naming the key (the deprecated one it came
under, if so) and the value. Options are immutable and shared; the catalogue of every option
undertow reads is :class:`undertow.core.config.Options`, declared by area in the
``options_*`` modules.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Generic, TypeVar

from undertow.core.errors import ConfigurationError
from undertow.core.option_text import (
    parse_bool,
    parse_duration_ms,
    parse_float,
    parse_int,
    parse_map,
    parse_memory_size,
    parse_precise_duration_ms,
)

T = TypeVar("T")


@dataclass(frozen=True)
class ConfigOption(Generic[T]):
    """One option: its Flink key, a parser from string, a default and deprecated keys."""

    key: str
    parse: Callable[[Any], T]
    default: T
    description: str = ""
    deprecated_keys: tuple[str, ...] = ()
    check: Callable[[T], str | None] | None = field(default=None, compare=False)

    def read(self, values: Mapping[str, str]) -> T:
        """The option's value in ``values``, or its default; raises on a bad value."""
        for key in (self.key, *self.deprecated_keys):
            if key in values:
                raw = values[key]
                try:
                    value = self.parse(raw)
                except ConfigurationError as err:
                    raise ConfigurationError(f"option '{key}': {err}") from None
                if self.check is not None:
                    problem = self.check(value)
                    if problem:
                        raise ConfigurationError(f"option '{key}' = {raw!r}: {problem}")
                return value
        return self.default


def positive(value: float) -> str | None:
    return None if value > 0 else "must be > 0"


def at_least_one(value: float) -> str | None:
    return None if value >= 1 else "must be >= 1"


def non_negative(value: int) -> str | None:
    return None if value >= 0 else "must be >= 0"


def duration_option(
    key: str, default_ms: int, description: str = "", **kw: Any
) -> ConfigOption[int]:
    return ConfigOption(key, parse_duration_ms, default_ms, description, **kw)


def precise_duration_option(
    key: str, default_ms: float, description: str = "", **kw: Any
) -> ConfigOption[float]:
    """A duration in (possibly fractional) milliseconds."""
    return ConfigOption(key, parse_precise_duration_ms, default_ms, description, **kw)


def int_option(key: str, default: int, description: str = "", **kw: Any) -> ConfigOption[int]:
    return ConfigOption(key, parse_int, default, description, **kw)


def float_option(key: str, default: float, description: str = "", **kw: Any) -> ConfigOption[float]:
    return ConfigOption(key, parse_float, default, description, **kw)


def bool_option(key: str, default: bool, description: str = "", **kw: Any) -> ConfigOption[bool]:
    return ConfigOption(key, parse_bool, default, description, **kw)


def str_option(key: str, default: str, description: str = "", **kw: Any) -> ConfigOption[str]:
    return ConfigOption(key, str, default, description, **kw)


def memory_option(key: str, default: int, description: str = "", **kw: Any) -> ConfigOption[int]:
    return ConfigOption(key, parse_memory_size, default, description, **kw)


def map_option(key: str, description: str = "", **kw: Any) -> ConfigOption[dict[str, str]]:
    return ConfigOption(key, lambda text: parse_map(str(text)), {}, description, **kw)


def choice(*allowed: str) -> Callable[[str], str | None]:
    def check(value: str) -> str | None:
        return None if value in allowed else f"must be one of {', '.join(allowed)}"

    return check
