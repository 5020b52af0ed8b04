"""The modes the configuration chooses between, as enums (PyFlink's names and ordinals).

The options in :mod:`.config` stay strings (Flink's keys and values); code that decides on a
mode reads one of these enums, built once from the configuration (e.g.
:class:`~undertow.runtime.checkpoint.settings.CheckpointSettings`), instead of comparing
strings. ``undertow.datastream`` re-exports them under PyFlink's import paths.
"""

from __future__ import annotations

import enum


class CheckpointingMode(enum.Enum):
    EXACTLY_ONCE = 0
    AT_LEAST_ONCE = 1


class ExternalizedCheckpointRetention(enum.Enum):
    DELETE_ON_CANCELLATION = 0
    RETAIN_ON_CANCELLATION = 1
    NO_EXTERNALIZED_CHECKPOINTS = 2


class RuntimeExecutionMode(enum.Enum):
    """STREAMING: continuous results. BATCH (bounded inputs only): final results only, keyed
    reductions emit one record per key and event time jumps to the end when input ends.
    AUTOMATIC: BATCH when every source is bounded, else STREAMING."""

    STREAMING = 0
    BATCH = 1
    AUTOMATIC = 2


class SavepointFormatType(enum.Enum):
    """The format of a savepoint (Flink's ``org.apache.flink.core.execution.SavepointFormatType``;
    PyFlink 2.3's Python API does not expose it). CANONICAL (the default): the same bytes on
    every state backend, so a job may switch backends when it resumes. NATIVE: the backend's
    own files (RocksDB: its SST files, copied into the savepoint), faster to take and to
    restore, restorable only into the same backend. On the heap backend NATIVE writes the
    canonical bytes, as in Flink."""

    CANONICAL = 0
    NATIVE = 1
    #: Java's ``SavepointFormatType.DEFAULT`` (an alias of CANONICAL).
    DEFAULT = 0

    @classmethod
    def parse(cls, value: str | SavepointFormatType, where: str) -> SavepointFormatType:
        """``value`` as a format (a member, or its name in any case); ``ValueError`` naming
        ``where`` (the parameter or field) and the value otherwise."""
        if isinstance(value, SavepointFormatType):
            return value
        if isinstance(value, str) and value.upper() in cls.__members__:
            return cls[value.upper()]
        raise ValueError(
            f"{where}: {value!r} is not a savepoint format; use CANONICAL or NATIVE "
            "(SavepointFormatType)"
        )
