"""Typed configuration options under Flink's keys, and the ``Configuration`` map.

A ``Configuration`` stores strings, the way PyFlink's does (``set_string`` / ``get_string``
and typed variants). Typed access goes through a :class:`ConfigOption`, which parses durations
("100 ms", "10 min", or plain milliseconds), memory sizes ("32kb", "1 mb") and booleans, and
raises :class:`~undertow.core.errors.ConfigurationError` naming the key and the bad value.

Option keys and defaults are Flink's (its "Configuration" reference page), so an existing
Flink configuration carries over. Why one piece (over 600 lines): ``Options`` is the one
catalogue of every key the project reads, each declared once with its default and description;
it splits into per-layer option groups with the typed settings objects of issue 13 step 4.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, Generic, TypeVar

from undertow.core.errors import ConfigurationError

T = TypeVar("T")

_DURATION_UNITS_MS = {
    "": 1.0, "ms": 1.0, "milli": 1.0, "millis": 1.0, "millisecond": 1.0, "milliseconds": 1.0,
    "s": 1000.0, "sec": 1000.0, "secs": 1000.0, "second": 1000.0, "seconds": 1000.0,
    "min": 60_000.0, "mins": 60_000.0, "minute": 60_000.0, "minutes": 60_000.0, "m": 60_000.0,
    "h": 3_600_000.0, "hour": 3_600_000.0, "hours": 3_600_000.0,
    "d": 86_400_000.0, "day": 86_400_000.0, "days": 86_400_000.0,
    "us": 0.001, "micro": 0.001, "micros": 0.001, "microsecond": 0.001, "microseconds": 0.001,
    "ns": 1e-6, "nano": 1e-6, "nanos": 1e-6, "nanosecond": 1e-6, "nanoseconds": 1e-6,
}  # fmt: skip
_MEMORY_UNITS = {
    "": 1, "b": 1, "bytes": 1,
    "k": 1024, "kb": 1024, "kibibytes": 1024,
    "m": 1024**2, "mb": 1024**2, "mebibytes": 1024**2,
    "g": 1024**3, "gb": 1024**3, "gibibytes": 1024**3,
    "t": 1024**4, "tb": 1024**4, "tebibytes": 1024**4,
}  # fmt: skip
_NUMBER_UNIT = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([a-zA-Z]*)\s*$")


def parse_precise_duration_ms(text: str | int | float) -> float:
    """Parse ``"100 ms"``, ``"500 us"``, ``"1.5 s"`` or a number of milliseconds, keeping
    fractions of a millisecond."""
    if isinstance(text, (int, float)) and not isinstance(text, bool):
        return float(text)
    match = _NUMBER_UNIT.match(str(text))
    unit = match.group(2).lower() if match else None
    if match is None or unit not in _DURATION_UNITS_MS:
        raise ConfigurationError(f"cannot parse duration {text!r} (examples: '100 ms', '10 min')")
    return float(match.group(1)) * _DURATION_UNITS_MS[unit]


def parse_duration_ms(text: str | int | float) -> int:
    """Parse ``"100 ms"``, ``"10 min"``, ``"5s"`` or a number of milliseconds: a whole number
    of milliseconds. A value with a fraction of a millisecond (``"0.5 ms"``, ``"1500 us"``) is
    refused rather than cut to a different duration."""
    ms = parse_precise_duration_ms(text)
    whole = round(ms)
    if abs(ms - whole) > 1e-9:
        raise ConfigurationError(
            f"duration {text!r} is not a whole number of milliseconds ({ms:g} ms)"
        )
    return whole


def parse_memory_size(text: str | int) -> int:
    """Parse ``"32kb"``, ``"1 mb"`` or a number of bytes."""
    if isinstance(text, int) and not isinstance(text, bool):
        return text
    match = _NUMBER_UNIT.match(str(text))
    unit = match.group(2).lower() if match else None
    if match is None or unit not in _MEMORY_UNITS:
        raise ConfigurationError(f"cannot parse memory size {text!r} (examples: '32kb', '1 mb')")
    return int(float(match.group(1)) * _MEMORY_UNITS[unit])


def _parse_bool(text: str | bool) -> bool:
    if isinstance(text, bool):
        return text
    lowered = str(text).strip().lower()
    if lowered in ("true", "1", "yes", "on"):
        return True
    if lowered in ("false", "0", "no", "off"):
        return False
    raise ConfigurationError(f"cannot parse boolean {text!r}")


def _parse_int(text: str | int) -> int:
    try:
        return int(text)
    except (TypeError, ValueError) as err:
        raise ConfigurationError(f"cannot parse integer {text!r}") from err


def _parse_float(text: str | float) -> float:
    try:
        return float(text)
    except (TypeError, ValueError) as err:
        raise ConfigurationError(f"cannot parse float {text!r}") from err


def format_map(parameters: dict[str, str]) -> str:
    """Write a map in Flink's format (the inverse of :func:`parse_map`)."""

    def quote(text: str) -> str:
        if any(c in text for c in ",:'\"") or text != text.strip():
            return "'" + text.replace("'", "''") + "'"
        return text

    return ",".join(f"{quote(k)}:{quote(v)}" for k, v in parameters.items())


def parse_map(text: str) -> dict[str, str]:
    """Parse Flink's map format (``key:value,key2:value2``; single or double quotes around a
    part holding ``,`` ``:`` or a quote, quotes inside doubled; unquoted parts are stripped)."""
    entries: list[list[str]] = []
    fields: list[str] = []
    current: list[str] = []
    quoted = False
    quote: str | None = None

    def end_field() -> None:
        nonlocal current, quoted
        value = "".join(current)
        fields.append(value if quoted else value.strip())
        current, quoted = [], False

    i = 0
    while i < len(text):
        c = text[i]
        if quote is not None:
            if c == quote and text[i + 1 : i + 2] == quote:
                current.append(c)
                i += 1
            elif c == quote:
                quote = None
            else:
                current.append(c)
        elif c in "'\"":
            quote, quoted = c, True
            current = []  # whitespace before a quote is not part of the field
        elif c == ":" and not fields:  # the first colon ends the key
            end_field()
        elif c == ",":
            end_field()
            entries.append(fields)
            fields = []
        else:
            current.append(c)
        i += 1
    end_field()
    entries.append(fields)
    parameters: dict[str, str] = {}
    for entry in entries:
        if entry == [""]:
            continue
        if len(entry) != 2 or quote is not None:
            raise ConfigurationError(f"cannot parse {text!r} as a map (key:value,key2:value2)")
        parameters[entry[0]] = entry[1]
    return parameters


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


def _positive(value: float) -> str | None:
    return None if value > 0 else "must be > 0"


def _at_least_one(value: float) -> str | None:
    return None if value >= 1 else "must be >= 1"


def _non_negative(value: int) -> str | None:
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
    return ConfigOption(key, _parse_int, default, description, **kw)


def bool_option(key: str, default: bool, description: str = "", **kw: Any) -> ConfigOption[bool]:
    return ConfigOption(key, _parse_bool, default, description, **kw)


def str_option(key: str, default: str, description: str = "", **kw: Any) -> ConfigOption[str]:
    return ConfigOption(key, str, default, description, **kw)


def memory_option(key: str, default: int, description: str = "", **kw: Any) -> ConfigOption[int]:
    return ConfigOption(key, parse_memory_size, default, description, **kw)


def map_option(key: str, description: str = "", **kw: Any) -> ConfigOption[dict[str, str]]:
    return ConfigOption(key, lambda text: parse_map(str(text)), {}, description, **kw)


def _choice(*allowed: str) -> Callable[[str], str | None]:
    def check(value: str) -> str | None:
        return None if value in allowed else f"must be one of {', '.join(allowed)}"

    return check


def _backend_type(value: str) -> str | None:
    """``state.backend.type``: a built-in backend, or a factory's dotted name (as Flink takes
    the fully qualified class name of a ``StateBackendFactory``)."""
    if value in ("hashmap", "rocksdb"):
        return None
    module, _, name = value.rpartition(".")
    if module and name.isidentifier() and all(p.isidentifier() for p in module.split(".")):
        return None
    return "must be one of hashmap, rocksdb, or the dotted name of a state backend factory"


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
        return self._parsed(key, _parse_int, default_value)

    def set_boolean(self, key: str, value: bool) -> Configuration:
        return self.set_string(key, bool(value))

    def get_boolean(self, key: str, default_value: bool) -> bool:
        return self._parsed(key, _parse_bool, default_value)

    def set_float(self, key: str, value: float) -> Configuration:
        return self.set_string(key, float(value))

    def get_float(self, key: str, default_value: float) -> float:
        return self._parsed(key, _parse_float, default_value)

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


class Options:
    """The options undertow reads, under Flink's keys and with Flink's defaults."""

    # execution ---------------------------------------------------------------------------
    TARGET = str_option(
        "execution.target",
        "spark",
        "where the job runs: spark (a barrier stage on local or remote Spark), local (worker "
        "processes, no Spark), local-threads (worker threads)",
        check=_choice("local", "local-threads", "spark"),
    )
    LOCAL_FORK_SERVER = bool_option(
        "execution.local.fork-server",
        True,
        "target local: fork worker processes from a server process that has undertow's worker "
        "modules imported (as Spark's Python daemon forks its workers), so a worker skips an "
        "interpreter's start and imports; false starts every worker as a fresh interpreter (as "
        "does a job that sets python.executable or python.requirements)",
    )
    RUNTIME_MODE = str_option(
        "execution.runtime-mode",
        "STREAMING",
        "STREAMING, BATCH or AUTOMATIC",
        check=_choice("STREAMING", "BATCH", "AUTOMATIC"),
    )
    BUFFER_TIMEOUT = duration_option(
        "execution.buffer-timeout",
        100,
        "flush partially filled output buffers after this time",
        deprecated_keys=("execution.buffer-timeout.interval",),
    )
    FLUSH_WHEN_IDLE = bool_option(
        "undertow.network.flush-when-idle",
        True,
        "a task about to wait for input sends its partly filled output buffers at once, "
        "instead of after execution.buffer-timeout (only when that timeout is above 0: -1 "
        "keeps flushing full buffers only)",
    )
    PARALLELISM = int_option(
        "parallelism.default",
        1,
        "default parallelism of operators; unset, a job on one machine (targets local and "
        "local-threads, or a local Spark master) gets that machine's cores, as in Flink's "
        "MiniCluster (see default_parallelism)",
        check=_positive,
    )
    MAX_PARALLELISM = int_option(
        "pipeline.max-parallelism", 128, "number of key groups", check=_positive
    )
    OPERATOR_CHAINING = bool_option(
        "pipeline.operator-chaining.enabled", True, deprecated_keys=("pipeline.operator-chaining",)
    )
    WORKERS = int_option(
        "undertow.workers", 0, "number of workers; 0 = one per core (<= slots)", check=_non_negative
    )
    AUTO_WATERMARK_INTERVAL = duration_option(
        "pipeline.auto-watermark-interval", 200, "periodic watermark interval; 0 disables"
    )
    GLOBAL_JOB_PARAMETERS = map_option(
        "pipeline.global-job-parameters", "read by functions with get_job_parameter"
    )
    WORKER_GC_THRESHOLD = int_option(
        "undertow.worker.gc-threshold", 20_000,
        "a worker raises its interpreter's young-generation collection threshold to this "
        "many net container allocations (Python's default: 700; never lowered; 0 leaves it)",
        check=_non_negative,
    )  # fmt: skip
    MAILBOX_SLICE = precise_duration_option(
        "undertow.task.mailbox-slice",
        2,
        "longest stretch of record processing between mails",
        check=_positive,
    )
    MAILBOX_SLICE_CHECKPOINT = precise_duration_option(
        "undertow.task.mailbox-slice-during-checkpoint",
        0.25,
        "the slice while a checkpoint passes through the worker (see runtime/task/pace.py)",
        check=_positive,
    )
    # network -----------------------------------------------------------------------------
    SEGMENT_SIZE = memory_option("taskmanager.memory.segment-size", 32 * 1024, check=_positive)
    BUFFERS_PER_CHANNEL = int_option(
        "taskmanager.network.memory.buffers-per-channel", 2, check=_positive
    )
    FLOATING_BUFFERS_PER_GATE = int_option(
        "taskmanager.network.memory.floating-buffers-per-gate", 8, check=_non_negative
    )
    MAX_BUFFERS_PER_CHANNEL = int_option(
        "taskmanager.network.memory.max-buffers-per-channel", 10, check=_positive
    )
    MAX_OVERDRAFT_BUFFERS_PER_GATE = int_option(
        "taskmanager.network.memory.max-overdraft-buffers-per-gate", 5, check=_non_negative
    )
    MIN_SEGMENT_SIZE = memory_option(
        "taskmanager.memory.min-segment-size", 256,
        "the smallest buffer size buffer debloating announces", check=_positive,
    )  # fmt: skip
    BUFFER_DEBLOAT_ENABLED = bool_option(
        "taskmanager.network.memory.buffer-debloat.enabled", True,
        "size buffers so that in-flight data takes about .target to consume (FLIP-183)",
    )  # fmt: skip
    BUFFER_DEBLOAT_TARGET = duration_option(
        "taskmanager.network.memory.buffer-debloat.target", 1000,
        "the most time in-flight data of an input gate should take to consume",
        check=_positive,
    )  # fmt: skip
    BUFFER_DEBLOAT_PERIOD = duration_option(
        "taskmanager.network.memory.buffer-debloat.period", 200,
        "how often throughput is measured and the buffer size recalculated", check=_positive,
    )  # fmt: skip
    BUFFER_DEBLOAT_SAMPLES = int_option(
        "taskmanager.network.memory.buffer-debloat.samples", 20,
        "periods a rise of the buffer size is averaged over (EMA); drops apply at once",
        check=_positive,
    )  # fmt: skip
    BUFFER_DEBLOAT_THRESHOLD = int_option(
        "taskmanager.network.memory.buffer-debloat.threshold-percentages", 25,
        "smaller rises of the buffer size are not announced (drops always are)",
        check=lambda v: None if 0 <= v <= 100 else "must be in [0, 100]",
    )  # fmt: skip
    BUFFER_DEBLOAT_MIN_TARGET: ConfigOption[int | None] = ConfigOption(
        "undertow.network.buffer-debloat.min-target", parse_duration_ms, None,
        "while the consumer never waits for input, in-flight data shrinks towards this time; "
        "unset (the default): half of .target; at or above .target: always aim at .target, "
        "as Flink does",
        check=lambda v: None if v is None else _positive(v),
    )  # fmt: skip
    MAX_FRAME_SIZE = memory_option(
        "undertow.network.max-frame-size",
        64 * 1024 * 1024,
        "largest control or data frame accepted from a peer",
    )
    BIND_HOST = str_option("undertow.network.bind-host", "127.0.0.1")
    HEARTBEAT_INTERVAL = duration_option(
        "heartbeat.interval", 10_000, "how often workers tell the JobMaster they are alive",
        check=_positive,
    )  # fmt: skip
    HEARTBEAT_TIMEOUT = duration_option(
        "heartbeat.timeout", 50_000,
        "a worker silent for longer fails the attempt (hung process, unreachable host)",
        check=_positive,
    )  # fmt: skip
    SLOT_REQUEST_TIMEOUT = duration_option(
        "slot.request.timeout", 300_000,
        "how long an attempt waits for its workers to start and register (Spark scheduling "
        "the barrier stage, its Python workers starting); past it the attempt fails",
        check=_positive,
    )  # fmt: skip
    # checkpointing (read by later layers; declared here so keys are known) ----------------
    CHECKPOINT_INTERVAL = duration_option(
        "execution.checkpointing.interval", 0, "0 disables periodic checkpoints"
    )
    CHECKPOINT_MODE = str_option(
        "execution.checkpointing.mode",
        "EXACTLY_ONCE",
        check=_choice("EXACTLY_ONCE", "AT_LEAST_ONCE"),
    )
    CHECKPOINT_TIMEOUT = duration_option("execution.checkpointing.timeout", 600_000)
    MIN_PAUSE = duration_option("execution.checkpointing.min-pause", 0)
    MAX_CONCURRENT = int_option("execution.checkpointing.max-concurrent-checkpoints", 1)
    TOLERABLE_FAILURES = int_option("execution.checkpointing.tolerable-failed-checkpoints", 0)
    NUM_RETAINED = int_option("execution.checkpointing.num-retained", 1, check=_positive)
    CHECKPOINT_DIR = str_option(
        "execution.checkpointing.dir", "", deprecated_keys=("state.checkpoints.dir",)
    )
    SAVEPOINT_DIR = str_option(
        "execution.checkpointing.savepoint-dir",
        "",
        "default directory of savepoints (trigger_savepoint, stop_with_savepoint, undertow "
        "stop) taken without one",
        deprecated_keys=("state.savepoints.dir",),
    )
    UNALIGNED = bool_option(
        "execution.checkpointing.unaligned.enabled",
        False,
        "unaligned checkpoints: barriers overtake in-flight data, which becomes channel state",
    )
    CHECKPOINTS_AFTER_TASKS_FINISH = bool_option(
        "execution.checkpointing.checkpoints-after-tasks-finish",
        True,
        "FLIP-147: checkpoints go on after some tasks finished, and a finishing task waits for "
        "a final checkpoint (which commits two-phase-commit sinks) before it closes",
    )
    UNALIGNED_FORCED = bool_option(
        "execution.checkpointing.unaligned.forced",
        False,
        "unaligned checkpoints also on edges without key context (forward, rescale, broadcast)",
    )
    HMAC_KEY = str_option(
        "undertow.checkpointing.hmac-key",
        "",
        "key authenticating checkpoint metadata (hex or text); when empty, the key file "
        "undertow.checkpointing.hmac-key-file is used",
    )
    HMAC_KEY_FILE = str_option(
        "undertow.checkpointing.hmac-key-file",
        "",
        "local file holding the metadata key, created 0600 when missing; empty: "
        "$XDG_CONFIG_HOME/undertow/checkpoint.key (or ~/.config/undertow/checkpoint.key)",
    )
    METADATA_MAX_SIZE = memory_option(
        "undertow.checkpointing.metadata.max-size",
        256 * 1024 * 1024,
        "largest _metadata file a checkpoint may write and a restore reads; a checkpoint "
        "whose metadata is larger fails instead of completing unrestorable",
        check=_positive,
    )
    CHECKPOINT_RETENTION = str_option(
        "execution.checkpointing.externalized-checkpoint-retention", "NO_EXTERNALIZED_CHECKPOINTS",
        "what happens to retained checkpoints when the job ends",
        check=_choice("NO_EXTERNALIZED_CHECKPOINTS", "RETAIN_ON_CANCELLATION",
                      "DELETE_ON_CANCELLATION"),
    )  # fmt: skip
    RECOVERY_PATH = str_option(
        "execution.state-recovery.path",
        "",
        "start from this retained checkpoint",
        deprecated_keys=("execution.savepoint.path",),
    )
    RECOVERY_CLAIM_MODE = ConfigOption(
        "execution.state-recovery.claim-mode",
        lambda text: str(text).strip().upper().replace("-", "_"),
        "NO_CLAIM",
        "who owns the snapshot of execution.state-recovery.path: NO_CLAIM (the user; never "
        "deleted or modified) or CLAIM (the job; deleted once newer checkpoints subsume it)",
        deprecated_keys=("execution.savepoint-restore-mode",),
        check=lambda mode: None if mode in ("CLAIM", "NO_CLAIM") else (
            "must be CLAIM or NO_CLAIM"
            + (" (LEGACY was deprecated in Flink 1.19 and removed in 2.0)"
               if mode == "LEGACY" else "")
        ),
    )  # fmt: skip
    IGNORE_UNCLAIMED_STATE = bool_option(
        "execution.state-recovery.ignore-unclaimed-state",
        False,
        "restore even if the checkpoint has state of operators the job no longer has (dropped)",
        deprecated_keys=("execution.savepoint.ignore-unclaimed-state",),
    )
    ALIGNED_TIMEOUT = duration_option(
        "execution.checkpointing.aligned-checkpoint-timeout",
        0,
        "with unaligned checkpoints: start aligned, switch to unaligned this long after the "
        "trigger; 0 = unaligned from the start",
        deprecated_keys=("execution.checkpointing.alignment-timeout",),
    )
    UNALIGNED_MAX_INFLIGHT_DATA = memory_option(
        "execution.checkpointing.unaligned.max-inflight-data",
        0,
        "with an aligned-checkpoint timeout: switch to unaligned at once when more than this "
        "many bytes are queued ahead of the barrier (FLIP-76's UNALIGNED_WITH_MAX_INFLIGHT_DATA, "
        "never shipped by Flink); 0 = by time only",
    )
    UNALIGNED_INCREMENTAL_CHANNEL_STATE = bool_option(
        # no Flink key (FLIP-76 lists incremental channel state as future work)
        "execution.checkpointing.unaligned.incremental-channel-state.enabled",
        True,
        "an unaligned checkpoint refers to the in-flight buffers the subtask's previous "
        "(completed) checkpoint persisted and that are still queued, instead of writing them "
        "again; false: every checkpoint writes all of its in-flight data",
    )
    UNALIGNED_DURING_RECOVERY = bool_option(
        # the key Flink 2.3.0 reads (CheckpointingOptions.CHECKPOINTING_DURING_RECOVERY_ENABLED);
        # FLIP-547 and undertow before it named it with the unaligned. prefix
        "execution.checkpointing.during-recovery.enabled",
        True,
        "FLIP-76 / FLIP-547: checkpoints are taken while restored in-flight data (channel "
        "state restored in place) is still being consumed; the data not yet consumed becomes "
        "the new checkpoint's channel state. false: no checkpoint is triggered before every "
        "subtask consumed its restored in-flight data (Flink before 2.3)",
        deprecated_keys=("execution.checkpointing.unaligned.during-recovery.enabled",),
    )
    UNALIGNED_RECOVER_OUTPUT_ON_DOWNSTREAM = bool_option(
        "execution.checkpointing.unaligned.recover-output-on-downstream.enabled",
        False,
        "FLIP-547: recover a producer's output channel state at the consumer's input. "
        "undertow restores it into the producer's subpartitions, where a checkpoint during "
        "recovery captures it as output state, so only false is accepted",
        check=lambda on: None if not on else (
            "must be false: undertow restores output channel state into the producer's "
            "subpartitions (an unaligned barrier overtakes it there, so checkpoints during "
            "recovery need no downstream recovery); recovering it at the consumer's input is "
            "not implemented"
        ),
    )  # fmt: skip
    MAX_SUBTASKS_PER_CHANNEL_STATE_FILE = int_option(
        "execution.checkpointing.unaligned.max-subtasks-per-channel-state-file",
        5,
        "subtasks of a worker that share one channel-state file per checkpoint; 1 gives one "
        "file per subtask",
        check=_positive,
    )
    # REST and metrics --------------------------------------------------------------------
    REST_PORT = int_option(
        "rest.port",
        8081,
        "port of the JobMaster's REST API; 0 picks a free port, -1 disables the server. Unset "
        "on the local targets (local, local-threads) it means 0, as in Flink's MiniCluster",
        check=lambda port: None if -1 <= port <= 65535 else "must be in [-1, 65535]",
    )
    REST_BIND_ADDRESS = str_option(
        "rest.bind-address",
        "127.0.0.1",
        "address the REST API listens on; off loopback, requests that change the job need the "
        "REST token (rest.token)",
    )
    REST_TOKEN = str_option(
        "rest.token",
        "",
        "token that requests changing the job (stop, savepoint, cancel) must send as "
        "'Authorization: Bearer <token>'; empty: rest.token-file, else a token made per job and "
        "printed where it starts when rest.bind-address is off loopback (none needed on loopback)",
    )
    REST_TOKEN_FILE = str_option(
        "rest.token-file",
        "",
        "local file holding the REST token, created 0600 with a fresh token when missing",
    )
    REST_SAVEPOINT_ANY_DIRECTORY = bool_option(
        "rest.savepoint.allow-any-directory",
        False,
        "while a REST token is required, savepoints requested over REST may go outside "
        "execution.checkpointing.savepoint-dir",
    )
    CHECKPOINTS_HISTORY = int_option(
        "web.checkpoints.history", 10, "checkpoints the REST API remembers", check=_positive
    )
    METRICS_REPORT_INTERVAL = duration_option(
        "undertow.metrics.report-interval",
        1000,
        "how often workers send task metrics (records, busy / backpressured / idle time) to "
        "the JobMaster",
        check=_positive,
    )
    # deployment on Spark -----------------------------------------------------------------
    PIPELINE_NAME = str_option("pipeline.name", "", "the job's name (Spark application name)")
    SPARK_MASTER = str_option(
        "spark.master",
        "local[*]",
        "Spark master of the session undertow builds (ignored when a session is active)",
    )
    SPARK_LOG_LEVEL = str_option(
        "undertow.spark.log-level",
        "WARN",
        "log level of the Spark session undertow builds",
        check=_choice("ALL", "DEBUG", "ERROR", "FATAL", "INFO", "OFF", "TRACE", "WARN"),
    )
    SPARK_SHIP_PACKAGE = str_option(
        "undertow.spark.ship-package",
        "auto",
        "ship undertow to the executors with the job: auto (unless the master is local), "
        "always, never",
        check=_choice("auto", "always", "never"),
    )
    # state -------------------------------------------------------------------------------
    STATE_BACKEND = str_option(
        "state.backend.type",
        "hashmap",
        "keyed state backend: hashmap (Python dicts), rocksdb (embedded RocksDB, on disk), or "
        "the dotted name of a state backend factory (module.name)",
        check=_backend_type,
    )
    INCREMENTAL_CHECKPOINTS = bool_option(
        "execution.checkpointing.incremental",
        False,
        "incremental checkpoints: RocksDB uploads only new SST files into <job>/shared/, "
        "hashmap only the key groups changed since the last completed checkpoint",
    )
    HEAP_COMPACTION_INTERVAL = int_option(
        "state.backend.hashmap.incremental.compaction-interval",
        10,
        "hashmap incremental checkpoints: every n-th checkpoint after a full one is full again "
        "(1: every checkpoint is full)",
        check=_positive,
    )
    HEAP_MAX_SPACE_AMPLIFICATION = ConfigOption(
        "state.backend.hashmap.incremental.max-space-amplification",
        float,
        2.0,
        "hashmap incremental checkpoints: a checkpoint is full again when the shared files it "
        "would reference exceed this many times the live state's bytes (dead key groups)",
        check=_at_least_one,
    )
    ROCKSDB_LOCAL_DIR = str_option(
        "state.backend.rocksdb.localdir",
        "",
        "local working directory of the RocksDB state backend (default: the temp directory)",
    )
    ROCKSDB_TIMER_SERVICE = str_option(
        "state.backend.rocksdb.timer-service.factory",
        "ROCKSDB",
        "where the RocksDB backend keeps timers: ROCKSDB (a column family per timer queue, "
        "with a small in-memory head) or HEAP (Python heaps, in the snapshot as blobs)",
        check=_choice("ROCKSDB", "HEAP"),
    )
    ROCKSDB_BLOCK_CACHE_SIZE = memory_option(
        "state.backend.rocksdb.block.cache-size",
        8 * 2**20,
        "RocksDB block cache per DB (unbounded mode)",
        check=_positive,
    )
    ROCKSDB_WRITE_BUFFER_SIZE = memory_option(
        "state.backend.rocksdb.writebuffer.size",
        64 * 2**20,
        "RocksDB memtable size per column family (unbounded mode)",
        check=_positive,
    )
    ROCKSDB_WRITE_BUFFER_COUNT = int_option(
        "state.backend.rocksdb.writebuffer.count",
        2,
        "RocksDB memtables per column family (unbounded mode)",
        check=_positive,
    )
    ROCKSDB_FIXED_PER_SLOT = memory_option(
        "state.backend.rocksdb.memory.fixed-per-slot",
        0,
        "bound each RocksDB keyed backend: block cache and memtables share this size "
        "(0: unbounded)",
        check=_non_negative,
    )
    ROCKSDB_WRITE_BUFFER_RATIO = ConfigOption(
        "state.backend.rocksdb.memory.write-buffer-ratio",
        float,
        0.5,
        "share of fixed-per-slot the memtables may take",
    )
    ROCKSDB_MEMORY_MANAGED = bool_option(
        "state.backend.rocksdb.memory.managed", False,
        "Flink's managed memory for RocksDB: not available in undertow (true is refused)",
    )  # fmt: skip
    # restart -----------------------------------------------------------------------------
    RESTART_STRATEGY = str_option("restart-strategy.type", "none")

    @classmethod
    def all(cls) -> Iterable[ConfigOption[Any]]:
        return (v for v in vars(cls).values() if isinstance(v, ConfigOption))


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
