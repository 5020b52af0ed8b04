"""The DataStream API, with PyFlink's module paths and names.

A PyFlink DataStream job ports by changing ``pyflink`` to ``undertow`` in its imports.
"""

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
    BroadcastProcessFunction,
    CoFlatMapFunction,
    CoMapFunction,
    CoProcessFunction,
    FilterFunction,
    FlatMapFunction,
    Function,
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
from undertow.datastream.state_backend import (
    EmbeddedRocksDBStateBackend,
    HashMapStateBackend,
    StateBackend,
)
from undertow.datastream.stream_execution_environment import StreamExecutionEnvironment
from undertow.runtime.cluster.job_master import JobExecutionResult, JobStatus

__all__ = [
    "AggregateFunction",
    "AllWindowFunction",
    "AsyncDataStream",
    "AsyncFunction",
    "AsyncRetryPredicate",
    "AsyncRetryStrategy",
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
    "DataStream",
    "DataStreamSink",
    "EmbeddedRocksDBStateBackend",
    "ExternalizedCheckpointRetention",
    "FilterFunction",
    "FlatMapFunction",
    "Function",
    "HashMapStateBackend",
    "JobClient",
    "JobExecutionResult",
    "JobStatus",
    "KeySelector",
    "KeyedBroadcastProcessFunction",
    "KeyedCoProcessFunction",
    "KeyedProcessFunction",
    "KeyedStream",
    "MapFunction",
    "OutputTag",
    "Partitioner",
    "ProcessAllWindowFunction",
    "ProcessFunction",
    "ProcessWindowFunction",
    "ReduceFunction",
    "RuntimeContext",
    "RuntimeExecutionMode",
    "SinkFunction",
    "StateBackend",
    "StreamExecutionEnvironment",
    "TimeDomain",
    "TimerService",
    "WindowFunction",
    "async_retry_predicates",
    "async_retry_strategies",
]
