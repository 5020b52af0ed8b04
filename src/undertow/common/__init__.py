"""The PyFlink-shaped common API: ``from undertow.common import Types, Row, WatermarkStrategy``.

Mirrors ``pyflink.common``: time and durations, type information, ``Row``, watermark strategies,
encoders and serialization schemas, ``Configuration``, and ``SavepointFormatType`` (Flink's
``org.apache.flink.core.execution.SavepointFormatType``; PyFlink 2.3's Python has none). This
module only re-exports; the definitions live in the submodules (``undertow.common.time``,
``.typeinfo``, ``.row``, ``.watermark_strategy``, ``.serialization``, ``.job_status``,
``.job_execution_result``, ``.restart_strategy``), whose paths are PyFlink's too.
"""

from undertow.common.completable_future import CompletableFuture
from undertow.common.execution_config import ExecutionConfig
from undertow.common.job_execution_result import JobExecutionResult
from undertow.common.job_status import JobStatus
from undertow.common.restart_strategy import RestartStrategies, RestartStrategyConfiguration
from undertow.common.row import Row, RowKind
from undertow.common.serialization import (
    ByteArraySchema,
    DeserializationSchema,
    Encoder,
    SerializationSchema,
    SimpleStringSchema,
)
from undertow.common.time import Duration, Instant, Time
from undertow.common.typeinfo import TypeInformation, Types
from undertow.common.watermark_strategy import TimestampAssigner, WatermarkStrategy
from undertow.core.config import Configuration
from undertow.core.modes import SavepointFormatType

__all__ = [
    "ByteArraySchema",
    "CompletableFuture",
    "Configuration",
    "DeserializationSchema",
    "Duration",
    "Encoder",
    "ExecutionConfig",
    "Instant",
    "JobExecutionResult",
    "JobStatus",
    "RestartStrategies",
    "RestartStrategyConfiguration",
    "Row",
    "RowKind",
    "SavepointFormatType",
    "SerializationSchema",
    "SimpleStringSchema",
    "Time",
    "TimestampAssigner",
    "TypeInformation",
    "Types",
    "WatermarkStrategy",
]
