"""What the checkpoint coordinator tells observers about each checkpoint, as typed events.

The coordinator emits exactly one :class:`Triggered` per checkpoint or savepoint it starts,
one :class:`Acknowledged` per subtask acknowledgement it accepts for a pending checkpoint,
and then exactly one of :class:`Completed` or :class:`Aborted`. Observers (the JobMaster's
:class:`~undertow.runtime.master.checkpoint_stats.CheckpointStatsTracker`) need no
idempotence guard and re-derive nothing: the reason of an abort comes with it.

Threading: emitted on the JobMaster's loop, synchronously from the coordinator's own calls;
a listener must not call back into the coordinator. Events are frozen and may be kept.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from undertow.runtime.checkpoint.failure import CheckpointFailureReason


@dataclass(frozen=True, slots=True)
class Triggered:
    """Checkpoint (or savepoint) ``checkpoint_id`` started: its barrier goes to the sources."""

    checkpoint_id: int
    #: The barrier's timestamp (epoch ms).
    timestamp: int
    #: Taken unaligned from the start (an aligned one with a timeout may still switch).
    unaligned: bool
    is_savepoint: bool
    #: A savepoint's format (``"CANONICAL"`` or ``"NATIVE"``); None for a checkpoint.
    savepoint_format: str | None = None


@dataclass(frozen=True, slots=True)
class Acknowledged:
    """A subtask acknowledged a pending checkpoint, with its ``CheckpointMetrics`` keys."""

    checkpoint_id: int
    vertex_id: int
    subtask: int
    #: When the coordinator received it (epoch ms).
    timestamp: int
    metrics: Mapping[str, Any]


@dataclass(frozen=True, slots=True)
class Completed:
    """The checkpoint's ``_metadata`` is committed (a savepoint's: exported)."""

    checkpoint_id: int
    timestamp: int
    #: Where it is (``chk-<n>`` or the savepoint directory).
    external_path: str
    is_savepoint: bool
    #: The completed checkpoints the store retains after this one (savepoints: unchanged,
    #: so None); the others were subsumed.
    retained: tuple[int, ...] | None


@dataclass(frozen=True, slots=True)
class Aborted:
    """The checkpoint failed and will not complete."""

    checkpoint_id: int
    timestamp: int
    reason: CheckpointFailureReason
    #: What the statistics show: the reason, and for a decline the subtask and its detail.
    message: str


CheckpointEvent = Triggered | Acknowledged | Completed | Aborted
#: Receives the coordinator's events (see the module docstring for the threading rule).
CheckpointListener = Callable[[CheckpointEvent], None]
