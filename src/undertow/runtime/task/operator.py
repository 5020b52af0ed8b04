"""The internal operator contract: batch-at-a-time stream operators and their outputs.

Records move through a chain as *batches*: a list of values plus either ``None`` (no record
carries a timestamp) or a list of the same length with each record's timestamp (``None`` for a
record without one). Batching is what makes Python fast here; an operator that needs per-record
work loops over the batch itself.

Lifecycle of an operator (called by its task, on the task's mailbox loop, never concurrently)::

    setup(ctx) -> open() -> (process_batch* | process_watermark* | timers)* -> finish() -> close()

Threading: everything an operator does happens on its task's loop thread; operators take no
locks. Emitting never blocks: backpressure is applied by the task before it takes new input.

The longer story: docs/design.md, "Module notes", under this module's name.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, ClassVar, Protocol, runtime_checkable

from undertow.runtime.task.collect_credit import CollectCredit
from undertow.runtime.task.settings import TaskSettings
from undertow.runtime.task.time_service import ProcessingTimeService

__all__ = [
    "CheckpointHooks",
    "KeyGroupedState",
    "OneInputStreamOperator",
    "OperatorSetup",
    "Output",
    "ProcessingTimeService",
    "StreamOperator",
    "TaskServices",
    "Timestamps",
    "TwoInputStreamOperator",
]

if TYPE_CHECKING:
    from undertow.core.config import Configuration
    from undertow.runtime.task.timers import InternalTimerService, Triggerable
    from undertow.state.backend import KeyedStateBackend

Timestamps = list[Any] | None
"""Per-record timestamps of a batch (ints, or ``None`` for a record without one), or ``None``."""


class Output(Protocol):
    """Where an operator emits. Implemented by the next operator in the chain or a writer."""

    def collect_batch(self, values: list[Any], timestamps: Timestamps) -> None:
        """Emit records. The callee may keep the lists: the caller must not reuse them."""

    def emit_watermark(self, watermark: int) -> None: ...

    def collect_side(self, tag_id: str, value: Any, timestamp: int | None) -> None:
        """Emit one record to the side output named ``tag_id`` (dropped if nobody reads it)."""

    def emit_watermark_status(self, idle: bool) -> None:
        """The emitting operator became idle (no watermarks for a while) or active again."""


@runtime_checkable
class KeyGroupedState(Protocol):
    """An operator that keeps keyed state of its own, outside a keyed backend (the columnar
    aggregations of batch streams), snapshotted the way a backend's is: one blob per non-empty
    key group, in the operator snapshot's ``keyed`` map. On restore it gets the blobs of every
    old subtask it takes over and keeps those of its own key groups (so rescaling works).

    Called on the task's loop: ``restore_key_groups`` after ``setup`` and before ``open``;
    ``snapshot_key_groups`` in a checkpoint's synchronous phase (the bytes must not change
    afterwards)."""

    def snapshot_key_groups(self) -> dict[int, bytes]: ...

    def restore_key_groups(self, blobs: dict[int, bytes]) -> None: ...


@runtime_checkable
class BoundedInput(Protocol):
    """A head operator that takes only so many records at a time and holds work the task
    must let drain before it finishes (async I/O: its queue of requests). The input
    processor cuts its slices to :meth:`input_room`; the task does not end its data while
    :meth:`has_pending_work` (with drain). Called on the task's loop."""

    def input_room(self) -> int: ...

    def has_pending_work(self) -> bool: ...


class TaskServices(Protocol):
    """What a task offers operators beyond their output: forwarding to the job's client."""

    def print_lines(self, lines: list[str]) -> None:
        """Write lines to the standard output of the process that runs the job."""

    def collect(self, sink_id: str, payload: bytes, after_checkpoint: int) -> None:
        """Hand records (``payload``: their list, pickled) to ``execute_and_collect`` in the
        client; the sink processed them after its snapshot of checkpoint ``after_checkpoint``
        (0: before any)."""

    def collect_credit(self, sink_id: str) -> CollectCredit:
        """The credit of collect sink ``sink_id``: bytes the client lets it send."""

    def send_split_request(self) -> None:
        """A source reader of this task asks its enumerator for a split."""

    def wake(self) -> None:
        """Wake the task's mailbox loop; safe to call from any thread."""


@dataclass
class OperatorSetup:
    """Everything an operator learns from its task at ``setup`` time."""

    name: str
    uid: str
    subtask_index: int
    parallelism: int
    max_parallelism: int
    attempt_number: int
    output: Output
    config: Configuration
    processing_time_service: ProcessingTimeService
    #: Present iff the operator's input is keyed.
    keyed_backend: KeyedStateBackend | None = None
    #: The key of a record of input 1 / input 2 (``None`` for a non-keyed input), as Flink's
    #: ``stateKeySelector1/2``: see :meth:`StreamOperator.with_key_context`.
    state_key_selector1: Callable[[Any], Any] | None = None
    state_key_selector2: Callable[[Any], Any] | None = None
    #: Non-keyed operator state (list, union list and broadcast state) of this operator.
    operator_state_backend: Any = None
    #: Creates (or returns) the named timer service of this operator; keyed operators only.
    timer_service_factory: Callable[[str, Triggerable], InternalTimerService] | None = None
    job_parameters: dict[str, str] = field(default_factory=dict)
    #: What the task's functions publish as job accumulators (``get_metrics_group()[name]``).
    accumulators: dict[str, Any] = field(default_factory=dict)
    #: What the runtime counts for the job's task counters (name -> count; late records
    #: dropped, async requests restored), never the user's accumulators.
    counters: dict[str, int] = field(default_factory=dict)
    #: The task's name (its chain's, as Flink's ``TaskInfo.getTaskName``) and that name with
    #: ``(index/parallelism)#attempt`` after it.
    task_name: str = ""
    task_name_with_subtasks: str = ""
    #: The ``RuntimeContext`` handed to user functions' ``open`` (set by the operator chain).
    runtime_context: Any = None
    services: TaskServices | None = None
    #: The task's settings (read once from ``config`` by the task; built from ``config`` here
    #: when a harness does not pass them).
    settings: TaskSettings | None = None

    def __post_init__(self) -> None:
        if self.settings is None:
            self.settings = TaskSettings.of(self.config)

    @property
    def task_settings(self) -> TaskSettings:
        """:attr:`settings`, never None after construction."""
        assert self.settings is not None
        return self.settings


class CheckpointHooks:
    """What an operator is told about checkpoints, each hook a no-op by default; an operator
    with checkpoint work overrides the hooks it needs. The operator chain calls them on the
    task's loop thread: ``prepare_snapshot_pre_barrier`` before the barrier goes downstream,
    ``snapshot_custom_state`` in the synchronous part (its I/O must be durable before the
    checkpoint completes), ``restore_custom_state`` before ``open``, the notifications after
    the JobMaster decided."""

    def prepare_snapshot_pre_barrier(self, checkpoint_id: int) -> None:
        """Emit what must precede the barrier of ``checkpoint_id`` (a sink's committables)."""

    def snapshot_custom_state(self, checkpoint_id: int) -> bytes | None:
        """State of the operator's own format (a source's splits); None: nothing."""
        return None

    def restore_custom_state(self, blobs: list[bytes], rescaled: bool) -> None:
        """The custom state of the old subtasks this one takes over (all of them after a
        change of parallelism, ``rescaled``; the operator takes its share)."""

    def notify_checkpoint_complete(self, checkpoint_id: int) -> None:
        """Checkpoint ``checkpoint_id`` completed (every subtask's state is durable)."""

    def notify_checkpoint_aborted(self, checkpoint_id: int) -> None:
        """Checkpoint ``checkpoint_id`` was aborted."""


class StreamOperator(CheckpointHooks, ABC):
    """Base of every operator. Subclasses keep per-record code free of attribute chains."""

    ctx: OperatorSetup
    output: Output
    #: The operator's results do not change when a record batch reaches it as consecutive
    #: row ranges (``batch.slice``) instead of whole, with the batch's timestamp and nothing
    #: in between: the input processor cuts large batches by rows only for a chain whose
    #: operators all say so (:mod:`undertow.runtime.task.row_cuts`).
    takes_row_ranges: ClassVar[bool] = False
    #: PyFlink runs this operator in Java (a sink): records reach it encoded with their
    #: declared type, so the chain checks a declared ``output_type`` before it (see
    #: :mod:`undertow.runtime.task.output_check`).
    runs_in_java: ClassVar[bool] = False
    #: The declared output type the chain checks where records leave the chain of Python
    #: functions (an :class:`~undertow.runtime.task.output_check.OutputCheck`); None: none.
    output_check: Any = None

    def setup(self, ctx: OperatorSetup) -> None:
        self.ctx = ctx
        self.output = ctx.output

    def open(self) -> None:
        """Called once before the first record."""

    def with_key_context(
        self, call: Callable[..., Any], input_index: int = 1, key_arg: int = 0
    ) -> Callable[..., Any]:
        """``call`` made to run in the key context of its record (Flink's
        ``setKeyContextElement1/2``): on a keyed input ``input_index``, every call first makes
        the key of its argument ``key_arg`` (the record) the keyed backend's current key, so
        keyed state and timers used during the call are that record's. On a non-keyed input
        ``call`` is returned as it is. Wrap every user-function call that may touch keyed
        state; cost on a keyed input: one key extraction and one ``set_current_key`` per call.
        """
        setup = self.ctx
        key_of = setup.state_key_selector1 if input_index == 1 else setup.state_key_selector2
        backend = setup.keyed_backend
        if key_of is None or backend is None:
            return call
        set_key = backend.set_current_key
        if key_arg == 0:

            def keyed_call(value: Any, *rest: Any) -> Any:
                set_key(key_of(value))
                return call(value, *rest)

            return keyed_call

        def keyed_call_at(*args: Any) -> Any:
            set_key(key_of(args[key_arg]))
            return call(*args)

        return keyed_call_at

    def process_watermark(self, watermark: int) -> None:
        """Default: forward. Operators with event-time timers fire them first."""
        self.output.emit_watermark(watermark)

    def finish(self) -> None:
        """No more input will come; emit what is buffered (bounded inputs, end of data)."""

    def close(self) -> None:
        """Release resources. Also called after a failure; must not raise on a half-open state."""

    @property
    def name(self) -> str:
        return self.ctx.name


class OneInputStreamOperator(StreamOperator):
    @abstractmethod
    def process_batch(self, values: list[Any], timestamps: Timestamps) -> None: ...


class TwoInputStreamOperator(StreamOperator):
    """Two inputs; watermarks are combined (minimum) before ``process_watermark`` sees them."""

    @abstractmethod
    def process_batch1(self, values: list[Any], timestamps: Timestamps) -> None: ...

    @abstractmethod
    def process_batch2(self, values: list[Any], timestamps: Timestamps) -> None: ...
