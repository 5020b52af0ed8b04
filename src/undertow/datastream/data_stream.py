"""``DataStream`` and ``KeyedStream``: PyFlink's stream classes with PyFlink's method names.

Each method only records a transformation with the right operator; the operators live in
:mod:`undertow.runtime.task`. Functions may be PyFlink function objects (``MapFunction`` ...)
or plain callables (bound by :mod:`.function_binding`); misuse is reported when the stream is
declared, naming the operator.

``KeyedStream`` is a ``DataStream`` (PyFlink's ``isinstance`` holds) and ``DataStream.key_by``
makes one, so the two share this module (apart, they would import each other). The rest is
elsewhere: the last operator's settings (:mod:`.operator_settings`), two-input streams
(:mod:`.connected_streams`), windowed streams (:mod:`.windowed_stream`), sinks
(:mod:`.data_stream_sink`) and field access (:mod:`.field_functions`).
"""

from __future__ import annotations

import operator
import uuid
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, NoReturn

from undertow.api.function_shapes import ProcessElementLike
from undertow.api.functions import Partitioner, ProcessFunction
from undertow.api.output_tag import OutputTag
from undertow.common.row import Row
from undertow.common.typeinfo import TupleTypeInfo
from undertow.connectors.global_committer import GlobalCommittingSink
from undertow.connectors.sink import SinkLike
from undertow.core.errors import GraphBuildError
from undertow.datastream import batch_stream
from undertow.datastream.connected_streams import (
    BroadcastConnectedStream,
    BroadcastStream,
    ConnectedStreams,
)
from undertow.datastream.data_stream_sink import CloseableIterator, DataStreamSink, typed_sink
from undertow.datastream.field_functions import Projection, built_in_aggregation
from undertow.datastream.function_binding import (
    FILTER,
    FLAT_MAP,
    INVOKE,
    MAP,
    PROCESS,
    REDUCE,
    bind,
    bind_key_selector,
    described,
)
from undertow.datastream.key_types import with_key_type
from undertow.datastream.operator_settings import OperatorSettings
from undertow.datastream.union_types import check_union_types
from undertow.datastream.windowed_stream import AllWindowedStream, WindowedStream
from undertow.graph.partitioners import (
    BroadcastPartitioner,
    CustomPartitionerWrapper,
    ForwardPartitioner,
    GlobalPartitioner,
    KeyGroupStreamPartitioner,
    RebalancePartitioner,
    RescalePartitioner,
    ShufflePartitioner,
    StreamPartitioner,
)
from undertow.graph.transformations import (
    OneInputTransformation,
    PartitionTransformation,
    SideOutputTransformation,
    Transformation,
    UnionTransformation,
)
from undertow.runtime.task.global_committer_operator import GlobalCommitterOperator
from undertow.runtime.task.keyed_operators import KeyedProcessOperator, StreamGroupedReduce
from undertow.runtime.task.operators import (
    CollectSinkOperator,
    PrintSinkOperator,
    ProcessOperator,
    SinkFunctionOperator,
    StreamFilter,
    StreamFlatMap,
    StreamMap,
)
from undertow.runtime.task.output_check import declared
from undertow.runtime.task.sink_operator import SinkWriterOperator
from undertow.runtime.task.source_operator import TimestampsAndWatermarksOperator

if TYPE_CHECKING:
    from undertow.datastream.stream_execution_environment import StreamExecutionEnvironment

#: PyFlink's ``pyflink.datastream.data_stream`` holds all of these; so does this module.
__all__ = ["BroadcastConnectedStream", "BroadcastStream", "CloseableIterator", "ConnectedStreams",
           "DataStream", "DataStreamSink", "KeyedStream"]  # fmt: skip


class DataStream(OperatorSettings):
    """A stream of records (PyFlink's ``DataStream``); its last operator's settings are
    :class:`OperatorSettings`'."""

    # helpers ------------------------------------------------------------------------------
    def _one_input(self, name: str, operator: Any, output_type: Any = None,
                   key_selector: Any = None) -> DataStream:  # fmt: skip
        t = OneInputTransformation(name=name, input=self._transformation, operator=operator,
                                   key_selector=key_selector, output_type=output_type)  # fmt: skip
        return DataStream(self._env, t)

    def _derive(self, transformation: Transformation) -> DataStream:
        """A plain ``DataStream`` over ``transformation`` in this stream's environment."""
        return DataStream(self._env, transformation)

    def _partition(self, partitioner: StreamPartitioner) -> DataStream:
        name = partitioner.kind.capitalize()
        return DataStream(self._env, PartitionTransformation(
            name=name, input=self._transformation, partitioner=partitioner
        ))  # fmt: skip

    # transformations ----------------------------------------------------------------------
    def map(self, func: Any, output_type: Any = None) -> DataStream:
        function, call = bind(func, MAP, "map()")
        op = declared(StreamMap(function, call), output_type, "map()")
        return self._one_input("Map", op, output_type)

    def flat_map(self, func: Any, output_type: Any = None) -> DataStream:
        function, call = bind(func, FLAT_MAP, "flat_map()")
        op = declared(StreamFlatMap(function, call), output_type, "flat_map()")
        return self._one_input("FlatMap", op, output_type)

    def filter(self, func: Any) -> DataStream:
        function, call = bind(func, FILTER, "filter()")
        return self._one_input("Filter", StreamFilter(function, call), self.get_type())

    def process(self, func: ProcessFunction, output_type: Any = None) -> DataStream:
        function, call = bind(func, PROCESS, "process()")
        op = declared(ProcessOperator(function, call), output_type, "process()")
        return self._one_input("Process", op, output_type)

    # batch streams (docs/columnar.md) --------------------------------------------------------
    def to_batches(
        self, schema: Any, max_rows: int = 8192, max_delay: int = 100
    ) -> batch_stream.BatchStream:
        """Records (``Row``/tuples by position, or dicts by name) into ``pyarrow.RecordBatch``
        records of ``schema``: a batch is emitted at ``max_rows`` rows, when its oldest row
        has waited ``max_delay`` ms, before each checkpoint barrier, before each watermark and
        at the end."""
        return batch_stream.to_batches(self, schema, max_rows, max_delay, DataStream)

    def as_batches(self) -> batch_stream.BatchStream:
        """Declare that this stream's records are ``pyarrow.RecordBatch`` (a batch source)."""
        return batch_stream.as_batches(self, DataStream)

    def _not_batches(self, method: str) -> Any:
        raise GraphBuildError(
            f"{method}() on the record stream of operator '{self._transformation.name}': it "
            "needs a batch stream; use to_batches(schema) (or as_batches() if its records are "
            "pyarrow.RecordBatch)"
        )

    def map_batches(self, fn: Any, schema: Any = None) -> Any:
        return self._not_batches("map_batches")

    def filter_batches(self, fn: Any) -> Any:
        return self._not_batches("filter_batches")

    def flat_map_batches(self, fn: Any) -> Any:
        return self._not_batches("flat_map_batches")

    def to_records(self) -> Any:
        return self._not_batches("to_records")

    def key_by(self, key_selector: Any, key_type: Any = None) -> KeyedStream:
        t = self._transformation
        if isinstance(t, PartitionTransformation) and isinstance(
            t.partitioner, CustomPartitionerWrapper
        ):
            raise GraphBuildError(
                f"key_by() cannot follow partition_custom() (operator '{t.name}'): a keyed "
                "stream must be partitioned by its key"
            )
        bound = bind_key_selector(key_selector, "key_by()")
        ks = with_key_type(bound, key_type, "key_by()")
        route = with_key_type(bound, key_type, "key_by()", route_only=True)
        maxp = self._env.get_max_parallelism()  # the partitioner checks keys with 1 channel too
        partitioner = KeyGroupStreamPartitioner(route, maxp, checks_keys=route is not bound)
        return KeyedStream(self._env, PartitionTransformation(
            name="Hash", input=t, partitioner=partitioner
        ), ks, self)  # fmt: skip

    def union(self, *streams: DataStream) -> DataStream:
        """As in PyFlink, a keyed input enters the union through its own
        ``_keyed_stream_values_operator`` (a map after the key partition, of the keyed
        stream's type), so the union keeps the key partitioning but not the keyed context.
        Streams of two types (no type is ``PICKLED_BYTE_ARRAY``) are refused as in Flink (the
        union has its first input's type: :mod:`.union_types`)."""
        inputs = [_union_input(s) for s in (self, *streams)]
        check_union_types(inputs[0], inputs[1:])
        union = UnionTransformation(name="Union", union_inputs=[s._transformation for s in inputs])
        return DataStream(self._env, union)

    def _key_selector_or_none(self) -> Callable[[Any], Any] | None:
        """The key selector of a keyed stream; ``None`` here."""
        return None

    def connect(self, ds: DataStream | BroadcastStream) -> Any:
        if isinstance(ds, BroadcastStream):
            return BroadcastConnectedStream(self, ds)
        return ConnectedStreams(self, ds)

    def shuffle(self) -> DataStream:
        return self._partition(ShufflePartitioner())

    def rebalance(self) -> DataStream:
        return self._partition(RebalancePartitioner())

    def rescale(self) -> DataStream:
        return self._partition(RescalePartitioner())

    def forward(self) -> DataStream:
        return self._partition(ForwardPartitioner())

    def global_(self) -> DataStream:
        return self._partition(GlobalPartitioner())

    def broadcast(self, *broadcast_state_descriptors: Any) -> Any:
        stream = self._partition(BroadcastPartitioner())
        if broadcast_state_descriptors:
            return BroadcastStream(stream, list(broadcast_state_descriptors))
        return stream

    def partition_custom(self, partitioner: Any, key_selector: Any) -> DataStream:
        part = partitioner.partition if isinstance(partitioner, Partitioner) else partitioner
        if not callable(part):
            raise GraphBuildError(
                "partition_custom(): partitioner must be a Partitioner or callable"
            )
        ks = bind_key_selector(key_selector, "partition_custom()")
        return self._partition(CustomPartitionerWrapper(part, ks, self.get_name()))

    def assign_timestamps_and_watermarks(self, watermark_strategy: Any) -> DataStream:
        return self._one_input(
            "Timestamps/Watermarks", TimestampsAndWatermarksOperator(watermark_strategy),
            self.get_type(),
        )  # fmt: skip

    def window_all(self, window_assigner: Any) -> Any:
        return AllWindowedStream(self, window_assigner)

    def count_window_all(self, size: int, slide: int | None = None) -> Any:
        from undertow.api.window import CountSlidingWindowAssigner, CountTumblingWindowAssigner

        assigner = (CountTumblingWindowAssigner.of(size) if slide is None
                    else CountSlidingWindowAssigner.of(size, slide))  # fmt: skip
        return self.window_all(assigner)

    def project(self, *field_indexes: int) -> DataStream:
        """Keeps the tuple fields at ``field_indexes``, in that order (PyFlink's ``project``);
        only streams declared as ``Types.TUPLE`` can be projected."""
        input_type = self.get_type()
        if not isinstance(input_type, TupleTypeInfo):
            raise GraphBuildError(
                f"Only Tuple DataStreams can be projected. (operator '{self._transformation.name}'"
                f" has type {input_type!r}; declare it with output_type=Types.TUPLE([...]))"
            )
        types = input_type.field_types
        bad = [i for i in field_indexes if not isinstance(i, int) or not 0 <= i < len(types)]
        if not field_indexes or bad:
            raise GraphBuildError(
                f"project(): field indexes must be among 0..{len(types) - 1} of "
                f"{input_type!r}, got {list(field_indexes)!r}"
            )
        indexes = tuple(field_indexes)
        output_type = TupleTypeInfo(tuple(types[i] for i in indexes))
        return self._one_input("Projection", StreamMap(None, Projection(indexes)), output_type)

    def get_side_output(self, output_tag: OutputTag) -> DataStream:
        if not isinstance(output_tag, OutputTag):
            raise GraphBuildError(f"get_side_output(): expected an OutputTag, got {output_tag!r}")
        tag_id, tag_type = output_tag.tag_id, output_tag.type_info
        self._env._request_side_output(self._transformation, tag_id, tag_type)
        return DataStream(self._env, SideOutputTransformation(
            name=f"SideOutput({output_tag.tag_id})", input=self._transformation,
            tag_id=output_tag.tag_id, output_type=output_tag.type_info,
        ))  # fmt: skip

    # sinks ------------------------------------------------------------------------------------
    def _sink(self, name: str, operator: Any) -> DataStreamSink:
        t = OneInputTransformation(name=name, input=self._transformation, operator=operator)
        self._env._add_sink(t)
        return DataStreamSink(t)

    def sink_to(self, sink: Any) -> DataStreamSink:
        """Write to a Sink V2 ``sink`` (for this stream's type: :func:`typed_sink`). A
        :class:`GlobalCommittingSink` becomes two operators: the parallel writers and a committer
        of parallelism 1 behind a GLOBAL edge (:mod:`undertow.connectors.global_committer`)."""
        if not isinstance(sink, SinkLike):
            raise GraphBuildError(
                f"sink_to(): {sink!r} is not a Sink (it needs create_writer(), restore_writer() "
                "and create_committer())"
            )
        name, sink = f"Sink: {type(sink).__name__}", typed_sink(sink, self.get_type())
        if not isinstance(sink, GlobalCommittingSink):
            return self._sink(name, SinkWriterOperator(sink))
        writer_op = SinkWriterOperator(sink, emit_committables=True)
        writer = OneInputTransformation(name=name, input=self._transformation, operator=writer_op)
        edge = PartitionTransformation(
            name="Global", input=writer,
            partitioner=GlobalPartitioner().disable_unaligned_checkpoints(),
        )  # fmt: skip
        committer = OneInputTransformation(
            name=DataStreamSink.committer_name(name), input=edge,
            operator=GlobalCommitterOperator(sink), parallelism=1, parallelism_set=True,
        )  # fmt: skip
        self._env._add_sink(committer)
        return DataStreamSink(writer, committer)

    def add_sink(self, sink_func: Any) -> DataStreamSink:
        function, call = bind(sink_func, INVOKE, "add_sink()")
        if function is None:
            return self._sink("Sink: Unnamed", SinkFunctionOperator(None, lambda v, _c: call(v)))
        return self._sink("Sink: Unnamed", SinkFunctionOperator(function, call))

    def print(self, sink_identifier: str | None = None) -> DataStreamSink:
        return self._sink(
            "Sink: Print to Std. Out", PrintSinkOperator(sink_identifier, self.get_type())
        )

    def execute_and_collect(
        self, job_execution_name: str | None = None, limit: int | None = None
    ) -> Any:
        """Run the job and iterate its records here. With ``limit``, return a list of at most
        ``limit`` records and cancel the job once they are in.

        As in Flink, the collect sink runs with parallelism 1, so records of a stream with
        parallelism 1 arrive in their order."""
        sink_id = uuid.uuid4().hex
        self._sink("Sink: Collect", CollectSinkOperator(sink_id)).set_parallelism(1)
        client = self._env.execute_async(job_execution_name)
        iterator = CloseableIterator(client, sink_id, self.get_type())
        if limit is None:
            return iterator
        with iterator:
            return [x for _, x in zip(range(limit), iterator)]


_add = operator.add


def _values(value: Any) -> Any:
    return value


def _union_input(stream: DataStream) -> DataStream:
    if isinstance(stream, KeyedStream):  # PyFlink's KeyedStream._values(): its type kept
        values = StreamMap(None, _values)
        return stream._one_input("_keyed_stream_values_operator", values, stream.get_type())
    return stream


class KeyedStream(DataStream):
    """A stream partitioned by key: state and timers are per key."""

    def __init__(self, env: StreamExecutionEnvironment, transformation: Transformation,
                 key_selector: Callable[[Any], Any], original: DataStream) -> None:  # fmt: skip
        super().__init__(env, transformation)
        self._key_selector = key_selector
        self._original = original

    def _key_selector_or_none(self) -> Callable[[Any], Any] | None:
        return self._key_selector

    def _keyed(self, name: str, operator: Any, output_type: Any = None) -> DataStream:
        return self._one_input(name, operator, output_type, key_selector=self._key_selector)

    def map(self, func: Any, output_type: Any = None) -> DataStream:
        function, call = bind(func, MAP, "map()")
        return self._keyed("Map", declared(StreamMap(function, call), output_type, "map()"),
                           output_type)  # fmt: skip

    def flat_map(self, func: Any, output_type: Any = None) -> DataStream:
        function, call = bind(func, FLAT_MAP, "flat_map()")
        op = declared(StreamFlatMap(function, call), output_type, "flat_map()")
        return self._keyed("FlatMap", op, output_type)

    def filter(self, func: Any) -> DataStream:
        function, call = bind(func, FILTER, "filter()")
        return self._keyed("Filter", StreamFilter(function, call), self.get_type())

    def process(self, func: Any, output_type: Any = None) -> DataStream:
        if not isinstance(func, ProcessElementLike):
            raise GraphBuildError(
                f"KeyedStream.process() needs a KeyedProcessFunction, got {described(func)}"
            )
        op = declared(KeyedProcessOperator(func), output_type, "KeyedStream.process()")
        return self._keyed("KeyedProcess", op, output_type)

    def reduce(self, func: Any) -> DataStream:
        function, call = bind(func, REDUCE, "reduce()")
        # PyFlink writes a rolling reduce's values with the input's type (its serializer fails
        # the job on a misfit: a None under INT, "an integer is required")
        op = declared(StreamGroupedReduce(function, call, self._key_selector), self.get_type(),
                      "KeyedStream.reduce() (the input's type)")  # fmt: skip
        return self._keyed("Keyed Reduce", op, self.get_type())

    def _aggregate(
        self, name: str, method: str, position: int | str,
        combine: Callable[[Any, Any], Any] | None = None,
        better: Callable[[Any, Any], bool] | None = None,
    ) -> DataStream:  # fmt: skip
        call, check, pair = built_in_aggregation(f"KeyedStream.{method}", position,
                                                 self.get_type(), combine, better)  # fmt: skip
        op = StreamGroupedReduce(None, call, self._key_selector, pair=pair, check_record=check)
        return self._keyed(name, op, self.get_type())

    def sum(self, position_to_sum: int | str = 0) -> DataStream:
        return self._aggregate("Keyed Sum", "sum", position_to_sum, _add)

    def min(self, position_to_min: int | str = 0) -> DataStream:
        return self._aggregate("Keyed Min", "min", position_to_min, min)

    def max(self, position_to_max: int | str = 0) -> DataStream:
        return self._aggregate("Keyed Max", "max", position_to_max, max)

    def min_by(self, position_to_min_by: int | str = 0) -> DataStream:
        return self._aggregate("Keyed MinBy", "min_by", position_to_min_by,
                               better=lambda x, y: x < y)  # fmt: skip

    def max_by(self, position_to_max_by: int | str = 0) -> DataStream:
        return self._aggregate("Keyed MaxBy", "max_by", position_to_max_by,
                               better=lambda x, y: x > y)  # fmt: skip

    def window(self, window_assigner: Any) -> Any:
        return WindowedStream(self, window_assigner)

    def count_window(self, size: int, slide: int | None = None) -> Any:
        from undertow.api.window import CountSlidingWindowAssigner, CountTumblingWindowAssigner

        assigner = (CountTumblingWindowAssigner.of(size) if slide is None
                    else CountSlidingWindowAssigner.of(size, slide))  # fmt: skip
        return self.window(assigner)

    def key_by(self, key_selector: Any, key_type: Any = None) -> KeyedStream:
        return self._original.key_by(key_selector, key_type)

    def execute_and_collect(
        self, job_execution_name: str | None = None, limit: int | None = None
    ) -> Any:
        """As in PyFlink, a keyed stream is collected as ``Row(f0=key, f1=record)``, through
        one key partition (Flink's collect sink has parallelism 1): in input order when the
        input has one subtask."""
        key_of = self._key_selector
        pairs = DataStream.map(self, lambda value: Row(f0=key_of(value), f1=value))
        pairs.set_parallelism(1)
        return pairs.execute_and_collect(job_execution_name, limit)

    # a KeyedStream is partitioned by its key: PyFlink refuses to override that, and so do we
    def _refuse_partitioning(self) -> DataStream:
        raise GraphBuildError(
            "Cannot override partitioning for KeyedStream. (the stream is partitioned by its key; "
            "apply an operator such as map(...) after key_by(...) first)"
        )

    def shuffle(self) -> DataStream:
        return self._refuse_partitioning()

    def rebalance(self) -> DataStream:
        return self._refuse_partitioning()

    def rescale(self) -> DataStream:
        return self._refuse_partitioning()

    def forward(self) -> DataStream:
        return self._refuse_partitioning()

    def global_(self) -> DataStream:
        return self._refuse_partitioning()

    def broadcast(self, *broadcast_state_descriptors: Any) -> Any:
        return self._refuse_partitioning()

    def partition_custom(self, partitioner: Any, key_selector: Any) -> DataStream:
        return self._refuse_partitioning()

    # configuring a KeyedStream configures the partitioning, which has none of these knobs
    def set_parallelism(self, parallelism: int) -> NoReturn:
        raise GraphBuildError("set_parallelism() is not allowed on a KeyedStream; set it on the "
                              "operator after key_by(...)")  # fmt: skip

    def name(self, name: str) -> NoReturn:
        raise GraphBuildError("name() is not allowed on a KeyedStream; name the operator after it")

    def get_name(self) -> str:
        raise GraphBuildError("Get name of KeyedStream is not supported.")

    def uid(self, uid: str) -> NoReturn:
        raise GraphBuildError("uid() is not allowed on a KeyedStream; set it on the next operator")

    def _unsupported(self, what: str) -> NoReturn:
        raise GraphBuildError(
            f"{what} for KeyedStream is not supported; apply it to the operator after key_by(...)"
        )

    def set_max_parallelism(self, max_parallelism: int) -> NoReturn:
        self._unsupported("Set max parallelism")

    def force_non_parallel(self) -> NoReturn:
        self._unsupported("Set force non-parallel")

    def set_buffer_timeout(self, timeout_millis: int) -> NoReturn:
        self._unsupported("Set buffer timeout")

    def start_new_chain(self) -> NoReturn:
        self._unsupported("Start new chain")

    def disable_chaining(self) -> NoReturn:
        self._unsupported("Disable chaining")

    def slot_sharing_group(self, slot_sharing_group: Any) -> NoReturn:
        self._unsupported("Setting slot sharing group")


def key_selector_of(stream: DataStream) -> Callable[[Any], Any] | None:
    """The stream's key selector if it is a :class:`KeyedStream`, else None."""
    return stream._key_selector_or_none()
