"""The ``Configuration`` map, and ``Options``: the catalogue of every option undertow reads.

A ``Configuration`` stores strings, the way PyFlink's does (``set_string`` / ``get_string``
and typed variants). Typed access goes through a :class:`ConfigOption`
(:mod:`undertow.core.config_option`), which parses the text (:mod:`undertow.core.option_text`)
and raises :class:`~undertow.core.errors.ConfigurationError` naming the key and the bad value.

Option keys and defaults are Flink's (its "Configuration" reference page), so an existing
Flink configuration carries over. ``Options`` gathers the options declared by area
(``options_execution``, ``options_network``, ``options_checkpointing``, ``options_rest``,
``options_state``), each key once; this module re-exports what it used to hold, so
``undertow.core.config`` still names the whole of it.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Iterable, Mapping
from typing import Any, TypeVar

from undertow.core.config_option import (
    ConfigOption,
    bool_option,
    duration_option,
    int_option,
    map_option,
    memory_option,
    precise_duration_option,
    str_option,
)
from undertow.core.errors import ConfigurationError
from undertow.core.option_text import (
    format_map,
    parse_bool,
    parse_duration_ms,
    parse_float,
    parse_int,
    parse_map,
    parse_memory_size,
    parse_precise_duration_ms,
)
from undertow.core.options_checkpointing import CheckpointingOptions
from undertow.core.options_execution import ExecutionOptions
from undertow.core.options_network import NetworkOptions
from undertow.core.options_rest import RestOptions
from undertow.core.options_state import StateOptions

__all__ = [
    "ConfigOption",
    "Configuration",
    "Options",
    "bool_option",
    "default_parallelism",
    "duration_option",
    "format_map",
    "int_option",
    "map_option",
    "memory_option",
    "parse_duration_ms",
    "parse_map",
    "parse_memory_size",
    "parse_precise_duration_ms",
    "precise_duration_option",
    "str_option",
]

T = TypeVar("T")


class Configuration:
    """A string map of options, API-compatible with PyFlink's ``Configuration``.

    Not thread-safe; build it before the job starts. ``get(option)`` is the typed read.
    """

    def __init__(self, other: Configuration | Mapping[str, Any] | None = None) -> None:
        self._values: dict[str, str] = {}
        if isinstance(other, Configuration):
            self._values.update(other._values)
        elif other is not None:
            for key, value in other.items():
                self.set_string(key, value)

    # PyFlink-compatible accessors --------------------------------------------------------
    def set_string(self, key: str, value: Any) -> Configuration:
        self._values[key] = str(value).lower() if isinstance(value, bool) else str(value)
        return self

    def get_string(self, key: str, default_value: str) -> str:
        return self._values.get(key, default_value)

    def _parsed(self, key: str, parse: Callable[[str], T], default_value: T) -> T:
        if key not in self._values:
            return default_value
        try:
            return parse(self._values[key])
        except ConfigurationError as err:
            raise ConfigurationError(f"option '{key}': {err}") from err

    def set_integer(self, key: str, value: int) -> Configuration:
        return self.set_string(key, int(value))

    def get_integer(self, key: str, default_value: int) -> int:
        return self._parsed(key, parse_int, default_value)

    def set_boolean(self, key: str, value: bool) -> Configuration:
        return self.set_string(key, bool(value))

    def get_boolean(self, key: str, default_value: bool) -> bool:
        return self._parsed(key, parse_bool, default_value)

    def set_float(self, key: str, value: float) -> Configuration:
        return self.set_string(key, float(value))

    def get_float(self, key: str, default_value: float) -> float:
        return self._parsed(key, parse_float, default_value)

    def key_set(self) -> set[str]:
        return set(self._values)

    def keys(self) -> set[str]:
        return set(self._values)

    def add_all_to_dict(self, target_dict: dict[str, Any]) -> None:
        target_dict.update(self._values)

    def contains_key(self, key: str) -> bool:
        return key in self._values

    def remove_config(self, key: str) -> bool:
        return self._values.pop(key, None) is not None

    def add_all(
        self, other: Configuration | Mapping[str, Any], prefix: str | None = None
    ) -> Configuration:
        items = other.to_dict().items() if isinstance(other, Configuration) else other.items()
        for key, value in items:
            self.set_string(f"{prefix}{key}" if prefix else key, value)
        return self

    def to_dict(self) -> dict[str, str]:
        return dict(self._values)

    # typed access --------------------------------------------------------------------------
    def get(self, option: ConfigOption[T]) -> T:
        return option.read(self._values)

    def set(self, option: ConfigOption[Any], value: Any) -> Configuration:
        return self.set_string(option.key, value)

    def __repr__(self) -> str:
        return f"Configuration({self._values!r})"

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Configuration) and other._values == self._values

    def __hash__(self) -> int:
        return hash(tuple(sorted(self._values.items())))


class Options(ExecutionOptions, NetworkOptions, CheckpointingOptions, RestOptions, StateOptions):
    """The options undertow reads, under Flink's keys and with Flink's defaults: every area's
    (``Options.BUFFER_TIMEOUT``, ``Options.CHECKPOINT_INTERVAL``, ...)."""

    @classmethod
    def all(cls) -> Iterable[ConfigOption[Any]]:
        """Every option of every area, area by area in declaration order."""
        return (
            value
            for area in cls.__mro__
            for value in vars(area).values()
            if isinstance(value, ConfigOption)
        )


_LOCAL_MASTER = re.compile(r"local(?:\[(\*|\d+)(?:,\s*\d+)?\])?")


def default_parallelism(config: Configuration) -> int:
    """The job's default parallelism: ``parallelism.default`` if set; otherwise, as in Flink's
    local MiniCluster (and PyFlink's local environment), the cores of the one machine the job
    runs on -- targets ``local`` and ``local-threads``, or ``spark`` with master ``local[*]``
    (``local[N]``: N, ``local``: 1) -- and 1 on a cluster (or under ``spark-submit`` without
    an explicit ``spark.master``), Flink's configured default."""
    if config.contains_key(Options.PARALLELISM.key):
        return config.get(Options.PARALLELISM)
    cores = os.cpu_count() or 1
    target = config.get(Options.TARGET)
    if target in ("local", "local-threads"):
        return cores
    if os.environ.get("PYSPARK_GATEWAY_PORT") and not config.contains_key(Options.SPARK_MASTER.key):
        return Options.PARALLELISM.default
    match = _LOCAL_MASTER.fullmatch(config.get(Options.SPARK_MASTER).strip())
    if match is None:
        return Options.PARALLELISM.default
    count = match.group(1)
    if count is None:
        return 1
    return cores if count == "*" else int(count)
