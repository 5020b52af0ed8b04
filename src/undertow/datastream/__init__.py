"""The DataStream API, with PyFlink's module paths and names.

A PyFlink DataStream job ports by changing ``pyflink`` to ``undertow`` in its imports.
"""

from undertow.core.modes import SavepointFormatType
from undertow.datastream import async_retry_predicates, async_retry_strategies
from undertow.datastream.async_data_stream import AsyncDataStream
from undertow.datastream.checkpoint_config import (
    CheckpointConfig,
    CheckpointingMode,
    ExternalizedCheckpointRetention,
)
from undertow.datastream.data_stream import (
    BroadcastConnectedStream,
    BroadcastStream,
    CloseableIterator,
    ConnectedStreams,
    DataStream,
    DataStreamSink,
    KeyedStream,
)
from undertow.datastream.execution_mode import RuntimeExecutionMode
from undertow.datastream.functions import (
    AggregateFunction,
    AllWindowFunction,
    AsyncFunction,
    AsyncRetryPredicate,
    AsyncRetryStrategy,
    BatchValueStateDescriptor,
    BroadcastProcessFunction,
    CoFlatMapFunction,
    CoMapFunction,
    CoProcessFunction,
    FilterFunction,
    FlatMapFunction,
    Function,
    KeyedBatchProcessFunction,
    KeyedBroadcastProcessFunction,
    KeyedCoProcessFunction,
    KeyedProcessFunction,
    KeySelector,
    MapFunction,
    Partitioner,
    ProcessAllWindowFunction,
    ProcessFunction,
    ProcessWindowFunction,
    ReduceFunction,
    RuntimeContext,
    SinkFunction,
    TimeDomain,
    TimerService,
    WindowFunction,
)
from undertow.datastream.job_client import JobClient
from undertow.datastream.output_tag import OutputTag
from undertow.datastream.slot_sharing_group import MemorySize, SlotSharingGroup
from undertow.datastream.state_backend import (
    EmbeddedRocksDBStateBackend,
    HashMapStateBackend,
    StateBackend,
)
from undertow.datastream.stream_execution_environment import StreamExecutionEnvironment
from undertow.datastream.window import (
    CountWindow,
    GlobalWindow,
    MergingWindowAssigner,
    TimeWindow,
    Trigger,
    TriggerResult,
    Window,
    WindowAssigner,
)
from undertow.datastream.windowed_stream import AllWindowedStream, WindowedStream
from undertow.runtime.master.job_master import JobExecutionResult, JobStatus

__all__ = [
    "AggregateFunction",
    "AllWindowFunction",
    "AllWindowedStream",
    "AsyncDataStream",
    "AsyncFunction",
    "AsyncRetryPredicate",
    "AsyncRetryStrategy",
    "BatchValueStateDescriptor",
    "BroadcastConnectedStream",
    "BroadcastProcessFunction",
    "BroadcastStream",
    "CheckpointConfig",
    "CheckpointingMode",
    "CloseableIterator",
    "CoFlatMapFunction",
    "CoMapFunction",
    "CoProcessFunction",
    "ConnectedStreams",
    "CountWindow",
    "DataStream",
    "DataStreamSink",
    "EmbeddedRocksDBStateBackend",
    "ExternalizedCheckpointRetention",
    "FilterFunction",
    "FlatMapFunction",
    "Function",
    "GlobalWindow",
    "HashMapStateBackend",
    "JobClient",
    "JobExecutionResult",
    "JobStatus",
    "KeySelector",
    "KeyedBatchProcessFunction",
    "KeyedBroadcastProcessFunction",
    "KeyedCoProcessFunction",
    "KeyedProcessFunction",
    "KeyedStream",
    "MapFunction",
    "MemorySize",
    "MergingWindowAssigner",
    "OutputTag",
    "Partitioner",
    "ProcessAllWindowFunction",
    "ProcessFunction",
    "ProcessWindowFunction",
    "ReduceFunction",
    "RuntimeContext",
    "RuntimeExecutionMode",
    "SavepointFormatType",
    "SinkFunction",
    "SlotSharingGroup",
    "StateBackend",
    "StreamExecutionEnvironment",
    "TimeDomain",
    "TimeWindow",
    "TimerService",
    "Trigger",
    "TriggerResult",
    "Window",
    "WindowAssigner",
    "WindowFunction",
    "WindowedStream",
    "async_retry_predicates",
    "async_retry_strategies",
]
