"""Control messages between the JobMaster (driver) and workers.

Every message is a frozen dataclass, pickled in a frame of an authenticated connection (see
:mod:`undertow.runtime.network.framing`). Messages a worker sends carry its attempt number;
the JobMaster drops messages of an older attempt (fencing).
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, TypeAlias

from undertow.core.types import AttemptNumber, CheckpointId, SubtaskIndex, VertexId
from undertow.runtime.task.task_statistics import TaskStatistics

if TYPE_CHECKING:
    from undertow.runtime.checkpoint.barrier import CheckpointBarrier
    from undertow.runtime.checkpoint.channel_recovery.rescale import ReemitChannel
    from undertow.runtime.checkpoint.channel_state_handles import ChannelStateHandles
    from undertow.runtime.checkpoint.failure import CheckpointFailureReason
    from undertow.runtime.checkpoint.pending_checkpoint import CheckpointMetrics
    from undertow.runtime.checkpoint.restore_fault import RestoreFault
    from undertow.runtime.checkpoint.snapshot import SubtaskStateHandle
    from undertow.storage import FileHandle

#: A user value that travels as is (accumulator results, collected records, source splits):
#: pickled with the frame, never inspected by the control plane.
UserValue: TypeAlias = object

# worker -> master ----------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class TaskMetrics:
    """One sample of a subtask's counters (sent in a ``TaskMetricsReport``)."""

    vertex_id: int
    subtask: int
    #: The worker's wall clock (epoch ms) when sampled.
    timestamp_ms: int
    statistics: TaskStatistics
    #: The task ended (finished, failed or was cancelled): no sample follows.
    final: bool = False
    #: User metrics of the chain's operators, ``"<operator>.<identifier>"`` -> value.
    user_metrics: dict[str, float] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class RegisterWorker:
    attempt: AttemptNumber
    worker_index: int
    data_host: str
    data_port: int
    pid: int


@dataclass(frozen=True, slots=True)
class TaskFinished:
    attempt: AttemptNumber
    vertex_id: VertexId
    subtask: SubtaskIndex
    #: What its functions published (``get_metrics_group()[name]``), summed into the result's
    #: accumulators.
    accumulators: dict[str, UserValue] = field(default_factory=dict)
    #: What the runtime counted for it (records in, late records dropped ...), summed into
    #: the result's task counters.
    counters: dict[str, int] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class TaskEndOfData:
    """A subtask reached the end of its data (``EndOfData`` sent) and waits for its final
    checkpoint (FLIP-147): once every subtask did (or finished), the JobMaster requests that
    checkpoint at once (FLINK-28386), not at the next period."""

    attempt: AttemptNumber
    vertex_id: VertexId
    subtask: SubtaskIndex


@dataclass(frozen=True, slots=True)
class ChannelStateRecovered:
    """A subtask received all in-flight data re-emitted into its rescaled inputs (every
    channel of each such gate delivered ``EndOfChannelStateEvent``; with
    ``during-recovery.enabled`` false: and processed it) and, with that option false, consumed
    its input channel state restored in place: the JobMaster triggers no checkpoint before
    every such subtask said so (Flink's tasks stay INITIALIZING)."""

    attempt: AttemptNumber
    vertex_id: int
    subtask: int


@dataclass(frozen=True, slots=True)
class TaskFailed:
    """A task's function or operator raised. ``exception_name``: the raised class's name
    (``ValueError``), which the exception history serves; ``error``: one line, class and
    message; ``traceback``: the formatted traceback with the exception's notes."""

    attempt: AttemptNumber
    vertex_id: int
    subtask: int
    operator: str
    exception_name: str
    error: str
    traceback: str


@dataclass(frozen=True, slots=True)
class WorkerFailed:
    """A failure outside any task (network, deployment). ``fatal``: restarting cannot help
    (the checkpoint to restore is corrupt, or refused), so the job fails without a restart.
    ``restore_refused``: the worker refused the checkpoint (a ``RestoreError``), and the job
    fails with one. ``exception_name``: the raised class's name, as in :class:`TaskFailed`."""

    attempt: AttemptNumber
    worker_index: int
    exception_name: str
    error: str
    traceback: str
    fatal: bool = False
    restore_refused: bool = False


@dataclass(frozen=True, slots=True)
class TasksDeployed:
    """The worker built and wired all its tasks; they are running."""

    attempt: AttemptNumber
    worker_index: int


@dataclass(frozen=True, slots=True)
class SplitRequest:
    attempt: AttemptNumber
    vertex_id: int
    subtask: int
    hostname: str


@dataclass(frozen=True, slots=True)
class PrintLines:
    attempt: AttemptNumber
    lines: list[str]


@dataclass(frozen=True, slots=True)
class CollectRecords:
    """Records of an ``execute_and_collect`` sink, processed after its snapshot of checkpoint
    ``after_checkpoint`` (0: before any): the JobMaster holds them until they are final.
    ``payload``: the list of records pickled (its length is what the sink's credit paid;
    the client's iterator unpickles it)."""

    attempt: AttemptNumber
    sink_id: str
    payload: bytes
    after_checkpoint: int


@dataclass(frozen=True, slots=True)
class Heartbeat:
    """A worker is alive (sent every ``heartbeat.interval``; see ``cluster.heartbeat``)."""

    attempt: AttemptNumber
    worker_index: int


@dataclass(frozen=True, slots=True)
class TaskMetricsReport:
    """Samples of the worker's tasks: periodically for running tasks, and once for a task that
    ended (``final``), before its ``TaskFinished`` or ``TaskFailed``."""

    attempt: AttemptNumber
    worker_index: int
    metrics: tuple[TaskMetrics, ...]


# master -> worker ----------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Deploy:
    attempt: AttemptNumber
    job_graph: bytes
    #: worker index -> (host, data port)
    peers: dict[int, tuple[str, int]]
    num_workers: int
    config: dict[str, str]
    #: The job id names the checkpoint directory; restore is None on a fresh start.
    job_id: str = ""
    restore: RestoreAssignment | None = None


@dataclass(frozen=True, slots=True)
class AddSplits:
    attempt: AttemptNumber
    vertex_id: int
    subtask: int
    splits: list[UserValue]


@dataclass(frozen=True, slots=True)
class NoMoreSplits:
    attempt: AttemptNumber
    vertex_id: int
    subtask: int


@dataclass(frozen=True, slots=True)
class CancelTasks:
    attempt: AttemptNumber


@dataclass(frozen=True, slots=True)
class Shutdown:
    attempt: AttemptNumber


# checkpoints -----------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class TriggerSourceCheckpoint:
    """master -> worker: inject ``barrier`` at a source subtask."""

    attempt: AttemptNumber
    vertex_id: int
    subtask: int
    barrier: CheckpointBarrier


@dataclass(frozen=True, slots=True)
class StopSource:
    """master -> worker: stop with savepoint at a source subtask; sent just before the
    savepoint's :class:`TriggerSourceCheckpoint`, on the same connection, so the source ends
    its data (``EndOfData``, after the MAX watermark and ``finish()`` when ``drain``) before
    the barrier."""

    attempt: AttemptNumber
    vertex_id: int
    subtask: int
    drain: bool


@dataclass(frozen=True, slots=True)
class AcknowledgeCheckpoint:
    """worker -> master: the subtask's state for ``checkpoint_id`` is written."""

    attempt: AttemptNumber
    vertex_id: VertexId
    subtask: SubtaskIndex
    checkpoint_id: CheckpointId
    #: What the subtask wrote: its state file and channel state (a bare state file handle,
    #: or None when it has no state, are accepted too: see ``SubtaskStateHandle.of``).
    handle: SubtaskStateHandle | FileHandle | None
    metrics: CheckpointMetrics = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class DeclineCheckpoint:
    attempt: AttemptNumber
    vertex_id: VertexId
    subtask: SubtaskIndex
    checkpoint_id: CheckpointId
    reason: CheckpointFailureReason
    detail: str


@dataclass(frozen=True, slots=True)
class NotifyCheckpointComplete:
    attempt: AttemptNumber
    checkpoint_id: int


@dataclass(frozen=True, slots=True)
class NotifyCheckpointAborted:
    attempt: AttemptNumber
    checkpoint_id: int


@dataclass(frozen=True, slots=True)
class GrantCollectCredit:
    """The JobMaster lets collect sink ``sink_id`` send ``credit`` more bytes of records
    (``undertow.collect.buffer-size``; :mod:`undertow.runtime.master.collect_window`)."""

    attempt: AttemptNumber
    sink_id: str
    credit: int


@dataclass(frozen=True, slots=True)
class RestoreAssignment:
    """What a deployment restores: checkpoint id, its location and, per (vertex id, subtask),
    the state files of the old subtasks it takes over and its channel state in shared
    channel-state files (``ChannelStateHandles``, restored in place where the parallelism of
    an edge is unchanged); for edges whose parallelism changed, the old channels each
    producer subtask re-emits (``ReemitChannel``) and the gates and outputs concerned (see
    :mod:`undertow.runtime.checkpoint.channel_recovery.rescale`)."""

    checkpoint_id: int
    checkpoint_dir: str
    job_id: str
    subtask_files: dict[tuple[int, int], list[FileHandle]]
    channel_state: dict[tuple[int, int], ChannelStateHandles] = field(default_factory=dict)
    #: Vertices whose operators were fully finished (FLIP-147): deployed as finished.
    finished_vertices: frozenset[int] = frozenset()
    #: (producer vertex id, subtask) -> old channels it re-emits, in order
    reemit: dict[tuple[int, int], tuple[ReemitChannel, ...]] = field(default_factory=dict)
    #: vertex id -> gate indices of rescaled edges with channel state
    rescaled_gates: dict[int, frozenset[int]] = field(default_factory=dict)
    #: vertex id -> output indices of rescaled edges with channel state
    rescaled_outputs: dict[int, frozenset[int]] = field(default_factory=dict)
    #: test-only: the part a restore control drops from the state files (restore_fault)
    fault: RestoreFault | None = None
    #: The checkpoint is one of the running job's own (a failover restore, not a snapshot
    #: restored from a path): checkpoints during recovery may refer to its channel-state
    #: files instead of writing the restored data again (the coordinator keeps them).
    refers_to_channel_state: bool = False


#: Every message a worker sends; each carries its attempt number (the JobMaster fences on it).
WorkerMessage: TypeAlias = (
    RegisterWorker | TaskFinished | TaskEndOfData | ChannelStateRecovered | TaskFailed
    | WorkerFailed
    | TasksDeployed | SplitRequest | PrintLines | CollectRecords | Heartbeat | TaskMetricsReport
    | AcknowledgeCheckpoint | DeclineCheckpoint
)  # fmt: skip

#: Every message the JobMaster sends to a worker; each carries the attempt number.
MasterMessage: TypeAlias = (
    Deploy | AddSplits | NoMoreSplits | CancelTasks | Shutdown | TriggerSourceCheckpoint
    | StopSource | NotifyCheckpointComplete | NotifyCheckpointAborted | GrantCollectCredit
)  # fmt: skip


def __getattr__(name: str) -> object:
    """``TriggerCheckpoint``, the name before it was renamed to keep class names unique: still
    importable from here, with a :class:`DeprecationWarning`."""
    if name == "TriggerCheckpoint":
        warnings.warn(
            f"{__name__}.TriggerCheckpoint is now TriggerSourceCheckpoint",
            DeprecationWarning,
            stacklevel=2,
        )
        return TriggerSourceCheckpoint
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
