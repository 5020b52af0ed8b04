"""The options of the data and control connections: segment and buffer counts, buffer
debloating (FLIP-183), frame size, bind host, heartbeats and the slot request timeout; Flink's
keys and defaults where Flink has the option. Read into typed settings by
``runtime/network/settings.py``, ``runtime/worker/settings.py`` and
``runtime/master/settings.py``. Part of :class:`undertow.core.config.Options`.
"""

from __future__ import annotations

from undertow.core.config_option import (
    ConfigOption,
    bool_option,
    duration_option,
    int_option,
    memory_option,
    non_negative,
    positive,
    str_option,
)
from undertow.core.option_text import parse_duration_ms


class NetworkOptions:
    """Network, heartbeat and slot options."""

    # network -----------------------------------------------------------------------------
    SEGMENT_SIZE = memory_option("taskmanager.memory.segment-size", 32 * 1024, check=positive)
    BUFFERS_PER_CHANNEL = int_option(
        "taskmanager.network.memory.buffers-per-channel", 2, check=positive
    )
    FLOATING_BUFFERS_PER_GATE = int_option(
        "taskmanager.network.memory.floating-buffers-per-gate", 8, check=non_negative
    )
    MAX_BUFFERS_PER_CHANNEL = int_option(
        "taskmanager.network.memory.max-buffers-per-channel", 10, check=positive
    )
    MAX_OVERDRAFT_BUFFERS_PER_GATE = int_option(
        "taskmanager.network.memory.max-overdraft-buffers-per-gate", 5, check=non_negative
    )
    MIN_SEGMENT_SIZE = memory_option(
        "taskmanager.memory.min-segment-size", 256,
        "the smallest buffer size buffer debloating announces", check=positive,
    )  # fmt: skip
    BUFFER_DEBLOAT_ENABLED = bool_option(
        "taskmanager.network.memory.buffer-debloat.enabled", True,
        "size buffers so that in-flight data takes about .target to consume (FLIP-183)",
    )  # fmt: skip
    BUFFER_DEBLOAT_TARGET = duration_option(
        "taskmanager.network.memory.buffer-debloat.target", 1000,
        "the most time in-flight data of an input gate should take to consume",
        check=positive,
    )  # fmt: skip
    BUFFER_DEBLOAT_PERIOD = duration_option(
        "taskmanager.network.memory.buffer-debloat.period", 200,
        "how often throughput is measured and the buffer size recalculated", check=positive,
    )  # fmt: skip
    BUFFER_DEBLOAT_SAMPLES = int_option(
        "taskmanager.network.memory.buffer-debloat.samples", 20,
        "periods a rise of the buffer size is averaged over (EMA); drops apply at once",
        check=positive,
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
        check=lambda v: None if v is None else positive(v),
    )  # fmt: skip
    MAX_FRAME_SIZE = memory_option(
        "undertow.network.max-frame-size",
        64 * 1024 * 1024,
        "largest control or data frame accepted from a peer",
    )
    BIND_HOST = str_option("undertow.network.bind-host", "127.0.0.1")
    HEARTBEAT_INTERVAL = duration_option(
        "heartbeat.interval", 10_000, "how often workers tell the JobMaster they are alive",
        check=positive,
    )  # fmt: skip
    HEARTBEAT_TIMEOUT = duration_option(
        "heartbeat.timeout", 50_000,
        "a worker silent for longer fails the attempt (hung process, unreachable host)",
        check=positive,
    )  # fmt: skip
    SLOT_REQUEST_TIMEOUT = duration_option(
        "slot.request.timeout", 300_000,
        "how long an attempt waits for its workers to start and register (Spark scheduling "
        "the barrier stage, its Python workers starting); past it the attempt fails",
        check=positive,
    )  # fmt: skip
