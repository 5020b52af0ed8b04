"""The operator chain of one subtask: fresh operator instances wired output to input.

Built tail-first from the vertex's :class:`~undertow.graph.job_graph.OperatorSpec` s, so every
operator's output exists when it is set up. An operator's output fans out to chained operators
(direct calls), record writers (network) and side outputs by tag. Watermarks and watermark
status go everywhere, side outputs included.

Lifecycle (driven by the task, on its loop thread): ``open`` head-last (tail operators open
first, so a head that emits in ``open`` finds its successors ready), ``finish`` head-first
(each operator's final output reaches successors before they finish), ``close`` all, also
after a failure.

The longer story: docs/design.md, "Module notes", under this module's name.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from undertow.api.output_tag import OutputTag
from undertow.core.config import Configuration
from undertow.core.types import AttemptNumber
from undertow.graph.job_graph import JobVertex, OperatorSpec
from undertow.runtime.checkpoint.snapshot import OperatorSnapshot, SubtaskSnapshot
from undertow.runtime.network.record_writer import RecordWriter
from undertow.runtime.task.context import (
    OperatorProcessingTimeService,
    StreamingRuntimeContext,
    now_ms,
)
from undertow.runtime.task.events import WatermarkEvent, WatermarkStatusEvent
from undertow.runtime.task.operator import (
    KeyGroupedState,
    OperatorSetup,
    Output,
    ProcessingTimeService,
    StreamOperator,
    TaskServices,
    Timestamps,
)
from undertow.runtime.task.output_check import CheckedOutput
from undertow.runtime.task.settings import TaskSettings
from undertow.runtime.task.source_operator import SourceOperator
from undertow.runtime.task.timers import OutputAvailability, TimerServiceManager
from undertow.state.backend import KeyedStateBackend
from undertow.state.factory import backend_factory_of
from undertow.state.key_groups import key_group_range_for_subtask
from undertow.state.operator_state import OperatorStateBackend

#: The ``native`` modes of a checkpoint (a NATIVE savepoint is ``"savepoint"``).
_CHECKPOINT_MODES = ("incremental", "full")


class ChainingOutput:
    """Hands records to the next operator of the chain (a direct call)."""

    __slots__ = ("op", "process")

    def __init__(self, op: Any) -> None:
        self.op = op
        self.process = op.process_batch

    def collect_batch(self, values: list[Any], timestamps: Timestamps) -> None:
        self.process(values, timestamps)

    def emit_watermark(self, watermark: int) -> None:
        self.op.process_watermark(watermark)

    def collect_side(self, tag_id: str, value: Any, timestamp: int | None) -> None:
        raise AssertionError("side outputs are routed by the emitting operator's output")

    def emit_watermark_status(self, idle: bool) -> None:
        self.op.output.emit_watermark_status(idle)


class WriterOutput:
    """Hands records to a record writer (the network)."""

    __slots__ = ("emit", "writer")

    def __init__(self, writer: RecordWriter) -> None:
        self.writer = writer
        self.emit = writer.emit

    def collect_batch(self, values: list[Any], timestamps: Timestamps) -> None:
        self.emit(values, timestamps)

    def emit_watermark(self, watermark: int) -> None:
        self.writer.broadcast_event(WatermarkEvent(watermark))

    def collect_side(self, tag_id: str, value: Any, timestamp: int | None) -> None:
        raise AssertionError("side outputs are routed by the emitting operator's output")

    def emit_watermark_status(self, idle: bool) -> None:
        self.writer.broadcast_event(WatermarkStatusEvent(idle))


class OperatorOutput:
    """The output an operator sees: main targets, side-output targets by tag.

    PyFlink's side outputs: when some side output of the operator is read downstream, an
    emitted record ``(OutputTag, value)`` (a process function's ``yield tag, value``) goes to
    that tag's side output instead of the main output; with no side output read, such a tuple
    stays an ordinary record, as in PyFlink (its ``has_side_output``).
    """

    def __init__(self, main: list[Any], side: dict[str, list[Any]]) -> None:
        self.main = main
        self.side = side
        self.everyone = main + [t for targets in side.values() for t in targets]
        if side:
            self.collect_batch = self._collect_routing_tagged  # type: ignore[method-assign]
        elif len(main) == 1:
            self.collect_batch = main[0].collect_batch  # type: ignore[method-assign]

    def collect_batch(self, values: list[Any], timestamps: Timestamps) -> None:
        if values:
            for target in self.main:
                target.collect_batch(values, timestamps)

    def _collect_routing_tagged(self, values: list[Any], timestamps: Timestamps) -> None:
        """``collect_batch`` of an operator with side outputs: ``(OutputTag, value)`` records
        go to their side output, the others to the main output (order kept per output)."""
        tagged = [
            i
            for i, v in enumerate(values)
            if type(v) is tuple and len(v) == 2 and isinstance(v[0], OutputTag)
        ]
        if tagged:
            for i in tagged:
                tag, value = values[i]
                self.collect_side(tag.tag_id, value, None if timestamps is None else timestamps[i])
            routed = set(tagged)
            kept = [i for i in range(len(values)) if i not in routed]
            values = [values[i] for i in kept]
            if timestamps is not None:
                timestamps = [timestamps[i] for i in kept]
        OperatorOutput.collect_batch(self, values, timestamps)

    def emit_watermark(self, watermark: int) -> None:
        for target in self.everyone:
            target.emit_watermark(watermark)

    def collect_side(self, tag_id: str, value: Any, timestamp: int | None) -> None:
        for target in self.side.get(tag_id, ()):
            target.collect_batch([value], None if timestamp is None else [timestamp])

    def emit_watermark_status(self, idle: bool) -> None:
        for target in self.everyone:
            target.emit_watermark_status(idle)


class OperatorChain:
    def __init__(
        self,
        vertex: JobVertex,
        subtask_index: int,
        attempt: AttemptNumber,
        config: Configuration,
        writers: dict[int, RecordWriter],
        services: TaskServices,
        processing_time_service: ProcessingTimeService,
        job_parameters: dict[str, str] | None = None,
        output_availability: OutputAvailability | None = None,
        settings: TaskSettings | None = None,
    ) -> None:
        settings = settings if settings is not None else TaskSettings.of(config)
        self.vertex = vertex
        self.subtask_index = subtask_index
        self.parallelism = vertex.parallelism
        self.operators: list[Any] = []
        self.accumulators: dict[str, Any] = {}
        self.counters: dict[str, int] = {}
        self.timer_managers: list[TimerServiceManager] = []
        self._timers_of: dict[int, TimerServiceManager] = {}  # id(operator) -> its timers
        #: id(operator) -> its processing-time service (quiesced before its ``finish``)
        self._pts_of: dict[int, OperatorProcessingTimeService] = {}
        #: uid, operator, keyed backend, timers, operator state
        self._parts: list[
            tuple[str, Any, KeyedStateBackend | None, TimerServiceManager | None,
                  OperatorStateBackend]
        ] = []  # fmt: skip
        self._batch = settings.batch
        #: Name of the operator that feeds each network output, by edge id.
        self.output_operators: dict[int, str] = {}
        by_node: dict[int, Any] = {}
        make_keyed_backend = backend_factory_of(settings.state_backend)
        name_with_subtasks = f"{vertex.name} ({subtask_index + 1}/{vertex.parallelism})#{attempt}"
        for spec in reversed(vertex.operators):
            op, key_selector, key_selector2 = self._instantiate(spec)
            main: list[Any] = []
            side: dict[str, list[Any]] = {}
            check = op.output_check
            where = f"operator '{spec.name}' (subtask {subtask_index + 1}/{vertex.parallelism})"
            # PyFlink chains a Python function to its one consumer only: fanned out, its
            # output leaves through its type's serializer (checked, rows named) to each
            fans_out = len(spec.chained_outputs) + len(spec.network_outputs) > 1
            for node_id, tag in spec.chained_outputs:
                chained: Any = ChainingOutput(by_node[node_id])
                if check is not None and not tag and (fans_out or by_node[node_id].runs_in_java):
                    chained = CheckedOutput(chained, check, where)
                (side.setdefault(tag, []) if tag else main).append(chained)
            for edge_id in spec.network_outputs:
                edge = next(e for e in vertex.outputs if e.id == edge_id)
                self.output_operators[edge_id] = spec.name
                target: Any = WriterOutput(writers[edge_id])
                if check is not None and not edge.tag_id:
                    target = CheckedOutput(target, check, where)
                (side.setdefault(edge.tag_id, []) if edge.tag_id else main).append(target)
            output: Output = OperatorOutput(main, side)
            pts = OperatorProcessingTimeService(processing_time_service)
            backend = None
            timer_factory: Callable[..., Any] | None = None
            if key_selector is not None:
                kg_range = key_group_range_for_subtask(
                    vertex.max_parallelism, vertex.parallelism, subtask_index
                )
                backend = make_keyed_backend(spec.name, vertex.max_parallelism, kg_range, now_ms)
                manager = TimerServiceManager(backend, pts, output_availability)
                self.timer_managers.append(manager)
                timer_factory = manager.get
            setup = OperatorSetup(
                name=spec.name,
                uid=spec.uid,
                subtask_index=subtask_index,
                parallelism=vertex.parallelism,
                max_parallelism=vertex.max_parallelism,
                attempt_number=attempt,
                output=output,
                config=config,
                processing_time_service=pts,
                keyed_backend=backend,
                state_key_selector1=key_selector,
                state_key_selector2=key_selector2,
                timer_service_factory=timer_factory,
                job_parameters=dict(job_parameters or {}),
                accumulators=self.accumulators,
                counters=self.counters,
                task_name=vertex.name,
                task_name_with_subtasks=name_with_subtasks,
                operator_state_backend=OperatorStateBackend(spec.name),
                services=services,
                settings=settings,
            )
            setup.runtime_context = StreamingRuntimeContext(setup)
            op.setup(setup)
            self._pts_of[id(op)] = pts
            manager_of_op = None
            if timer_factory is not None:
                self._timers_of[id(op)] = manager
                manager_of_op = manager
            self._parts.insert(
                0, (spec.uid, op, backend, manager_of_op, setup.operator_state_backend)
            )
            by_node[spec.node_id] = op
            self.operators.insert(0, op)
        self.head = self.operators[0]
        self.is_source = isinstance(self.head, SourceOperator)

    @staticmethod
    def _instantiate(spec: OperatorSpec) -> tuple[Any, Any, Any]:
        """(operator, key selector of input 1, of input 2); a selector is ``None`` for a
        non-keyed input. The operator is keyed (has a keyed backend) iff input 1 is."""
        parts = spec.instantiate()
        if spec.kind == "source":
            return SourceOperator(parts["source"], parts["watermark_strategy"]), None, None
        if spec.kind == "two-input":
            return parts["operator"], parts["key_selector1"], parts["key_selector2"]
        return parts["operator"], parts["key_selector"], None

    def open(self) -> None:
        for op in reversed(self.operators):
            op.open()

    # -- checkpoints ---------------------------------------------------------------------------
    def prepare_snapshot_pre_barrier(self, checkpoint_id: int) -> None:
        """Before the barrier goes downstream: operators emit what must precede it."""
        for op in self.operators:
            op.prepare_snapshot_pre_barrier(checkpoint_id)

    @property
    def takes_native_snapshots(self) -> bool:
        """Whether a keyed backend of the chain takes native incremental checkpoints."""
        keyed = [part[2] for part in self._parts]
        return any(k is not None and k.takes_native_checkpoints for k in keyed)

    def snapshot_state(self, checkpoint_id: int, native: str = "") -> SubtaskSnapshot:
        """The synchronous part of a checkpoint: every operator's state, serialized to bytes.

        Serializing is the copy that lets the task go on while the bytes are written
        asynchronously; no state I/O happens here. ``native`` (``"incremental"`` or ``"full"``)
        asks backends that take native incremental checkpoints for their native snapshot
        instead of canonical blobs (uploaded asynchronously); ``"savepoint"`` (a NATIVE
        savepoint) asks every backend for its native savepoint (RocksDB's files, incremental
        or not; a backend without one, the heap's, writes its canonical blobs).
        Backends are asked through :class:`~undertow.state.snapshot_strategy.SnapshotStrategy`.
        An operator's custom snapshot may do the I/O
        that must be durable before the checkpoint can complete (a file sink fsyncs its open
        part files, as Flink's ``persist`` in the synchronous phase).
        """
        snapshot = SubtaskSnapshot(parallelism=self.parallelism)
        for uid, op, keyed, timers, opstate in self._parts:
            part = OperatorSnapshot()
            if keyed is not None:
                if native == "savepoint":
                    part.keyed_native = keyed.native_savepoint(checkpoint_id)
                elif native in _CHECKPOINT_MODES and keyed.takes_native_checkpoints:
                    part.keyed_native = keyed.native_checkpoint(checkpoint_id, native == "full")
                if part.keyed_native is None:
                    part.keyed = keyed.snapshot()
            elif isinstance(op, KeyGroupedState):
                part.keyed = op.snapshot_key_groups()
            if timers is not None:
                part.timers = timers.snapshot(native=part.keyed_native is not None)
            if opstate is not None and opstate.has_state():
                part.operator = opstate.snapshot()
            part.custom = op.snapshot_custom_state(checkpoint_id)
            if not part.is_empty:
                snapshot.operators[uid] = part
        return snapshot

    def restore(self, snapshots: list[SubtaskSnapshot]) -> None:
        """Load state before ``open``: ``snapshots`` of the old subtasks this one takes over.

        State is matched per operator uid, whatever the old chaining was: ``snapshots`` may come
        from several old vertices. For an operator whose old parallelism equals this one, the
        snapshots hold its own old subtask's state; after a change they hold every old
        subtask's. Keyed state and timers are filtered to this subtask's key groups by the
        backends; operator state is redistributed as Flink does (list state split evenly, union
        list state merged, broadcast state from old subtask 0); custom state (a source's
        splits) is handed to the operator, which takes its share.
        """
        for uid, op, keyed, timers, opstate in self._parts:
            holders = [s for s in snapshots if uid in s.operators]
            parts = [s.operators[uid] for s in holders]
            if not parts:
                continue
            rescaled = any(
                (len(snapshots) > 1) if s.parallelism is None else s.parallelism != self.parallelism
                for s in holders
            )
            if keyed is not None:
                natives = [p.keyed_native for p in parts if p.keyed_native is not None]
                if natives:
                    keyed.restore_native(natives)
                keyed.restore({g: b for p in parts for g, b in p.keyed.items()})
            elif isinstance(op, KeyGroupedState):
                op.restore_key_groups({g: b for p in parts for g, b in p.keyed.items()})
            if timers is not None:
                timers.restore({g: b for p in parts for g, b in p.timers.items()})
            operator_blobs = [p.operator for p in parts if p.operator is not None]
            if opstate is not None and operator_blobs:
                if not rescaled:
                    opstate.restore(operator_blobs[0])
                else:
                    shares = OperatorStateBackend.redistribute(operator_blobs, self.parallelism)
                    opstate.restore(shares[self.subtask_index])
            custom = [p.custom for p in parts if p.custom is not None]
            if custom:
                op.restore_custom_state(custom, rescaled)

    def notify_checkpoint_complete(self, checkpoint_id: int) -> None:
        for _, _, keyed, _, _ in self._parts:
            if keyed is not None:
                keyed.notify_checkpoint_complete(checkpoint_id)
        for op in self.operators:
            op.notify_checkpoint_complete(checkpoint_id)

    def notify_checkpoint_aborted(self, checkpoint_id: int) -> None:
        for op in self.operators:
            op.notify_checkpoint_aborted(checkpoint_id)

    def finish(self) -> None:
        """End of data with drain, head-first: per operator, (BATCH: fire its processing-time
        timers,) quiesce its processing-time service, then ``finish()`` it."""
        for op in self.operators:
            timers = self._timers_of.get(id(op))
            if self._batch and timers is not None:
                timers.fire_all_processing_timers()
            self._pts_of[id(op)].quiesce()
            op.finish()

    def quiesce_processing_time(self) -> None:
        """End of data without drain (stop with savepoint): no operator finishes, but none of
        their processing-time timers may fire any more; the timers stay in keyed state."""
        for op in self.operators:
            self._pts_of[id(op)].quiesce()

    def close(self) -> list[BaseException]:
        """Close every operator; returns the errors instead of stopping at the first."""
        errors: list[BaseException] = []
        for op in self.operators:
            try:
                op.close()
            except Exception as err:
                errors.append(err)
        for manager in self.timer_managers:
            manager.dispose()
        for _, _, keyed, _, _ in self._parts:
            if keyed is not None:
                keyed.dispose()  # a RocksDB backend deletes its local directory
        return errors

    def operator_named(self, name: str) -> StreamOperator | SourceOperator | None:
        return next((op for op in self.operators if op.name == name), None)
