"""What one subtask is deployed with: a frozen record built once by its worker.

The worker reads the ``Deploy`` message, builds each subtask's partitions and gates, reads
what the subtask restores, and puts all of it into one :class:`TaskDeployment`. The stream
task and its checkpointer are both built from that record (keyword-only constructors), so
nothing is set on either after construction.

Invariants: the record never changes; ``gates`` and ``writers`` are the subtask's own network
objects (they change, the record's references to them do not); ``writers`` is in the order
of ``vertex.outputs`` (output index = position).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from undertow.core.config import Configuration
from undertow.core.types import AttemptNumber
from undertow.graph.job_graph import JobVertex
from undertow.runtime.checkpoint.channel_recovery.feed import SubtaskChannelRecovery
from undertow.runtime.checkpoint.snapshot import SubtaskSnapshot
from undertow.runtime.network.input_gate import InputGate
from undertow.runtime.network.record_writer import RecordWriter


@dataclass(frozen=True, slots=True, kw_only=True)
class TaskDeployment:
    """Everything one subtask (one vertex, one subtask index, one attempt) is deployed with."""

    vertex: JobVertex
    subtask_index: int
    attempt: AttemptNumber
    #: The job's configuration (as deployed, with the job's settings on top).
    config: Configuration
    #: Input gates, in ``vertex.inputs`` order.
    gates: tuple[InputGate, ...] = ()
    #: Record writer per output edge id, in ``vertex.outputs`` order.
    writers: Mapping[int, RecordWriter] = field(default_factory=dict)
    #: The snapshots this subtask restores (several after a rescale); empty: a fresh start.
    restored: tuple[SubtaskSnapshot, ...] = ()
    #: The vertex was fully finished in the restored checkpoint: no operator runs.
    finished_on_restore: bool = False
    #: Rescaled restore: what this subtask re-emits and which of its gates recover.
    channel_recovery: SubtaskChannelRecovery = field(default_factory=SubtaskChannelRecovery)

    @property
    def name(self) -> str:
        """Flink's task name: ``vertex (subtask/parallelism)``, subtask counted from 1."""
        return f"{self.vertex.name} ({self.subtask_index + 1}/{self.vertex.parallelism})"

    @property
    def state_file_name(self) -> str:
        """The name of the file that holds this subtask's state in a checkpoint."""
        return f"v{self.vertex.id}-s{self.subtask_index}.state"

    @property
    def record_writers(self) -> list[RecordWriter]:
        """The record writers by output index."""
        return list(self.writers.values())
