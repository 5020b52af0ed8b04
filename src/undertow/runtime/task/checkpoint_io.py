"""How a subtask's checkpointer is wired: to the worker (``CheckpointIO``) and to its task
(``CheckpointListeners``), both given to its constructor.

The worker supplies where checkpoints go (the JobMaster responder, the state-file writer and
its I/O pool, the shared channel-state writer); the task supplies what the checkpointer reads
from and tells its lifecycle. Threading: every callable here is called on the task's loop
thread, except a ``StateWriter``, which runs on the executor, and an
``AnyThreadAcknowledger``, called by the executor's threads.
"""

from __future__ import annotations

from collections.abc import Callable
from concurrent.futures import Executor
from dataclasses import dataclass
from typing import Any, Protocol

from undertow.core.types import MIN_TIMESTAMP
from undertow.runtime.checkpoint.channel_state_writer import ChannelStateWriter
from undertow.runtime.checkpoint.failure import CheckpointFailureReason
from undertow.storage import FileHandle


class CheckpointResponder(Protocol):
    """How a subtask reports to the JobMaster (implemented by the worker)."""

    def acknowledge(self, checkpoint_id: int, handle: Any, metrics: dict[str, Any]) -> None: ...

    def decline(self, checkpoint_id: int, reason: CheckpointFailureReason, detail: str) -> None: ...


class AnyThreadAcknowledger(Protocol):
    """Acknowledges from any thread: the I/O thread that finished a checkpoint's last write
    sends its acknowledgement itself, rather than handing it to the loop, where it would wait
    behind the busy task's call (implemented by the worker's responder). An acknowledgement
    sent this way precedes every message the loop sends after it (``TaskFinished``)."""

    def acknowledge_from_any_thread(
        self, checkpoint_id: int, handle: Any, metrics: dict[str, Any]
    ) -> None: ...


#: Writes one state file: (checkpoint id, file name, bytes) -> handle. Blocking; runs on a pool.
StateWriter = Callable[[int, str, bytes], Any]


@dataclass(frozen=True, slots=True, kw_only=True)
class CheckpointIO:
    """Where one subtask's checkpoints go: the worker's side of its checkpointer."""

    responder: CheckpointResponder
    #: Writes the subtask's state file; None: no checkpoint storage (state is declined).
    state_writer: StateWriter | None = None
    #: Runs ``state_writer`` (the worker's I/O pool).
    executor: Executor | None = None
    #: The subtask's member of the worker's shared channel-state files; None: channel state
    #: goes into the state file (an in-memory writer, when unaligned checkpoints are on).
    channel_state_writer: ChannelStateWriter | None = None
    #: Writes ``<job>/shared/<name>`` (incremental checkpoints' shared files); None: none.
    shared_writer: Callable[[str, bytes], FileHandle] | None = None
    #: Acknowledges from the I/O thread that finished the last write; None: every
    #: acknowledgement goes through the task's loop (``responder``).
    io_acknowledger: AnyThreadAcknowledger | None = None
    #: Tells the JobMaster that the subtask reached the end of its data and waits for its
    #: final checkpoint (``TaskEndOfData``); None: nobody to tell.
    end_of_data: Callable[[], None] | None = None


def _min_watermark() -> int:
    return MIN_TIMESTAMP


@dataclass(frozen=True, slots=True, kw_only=True)
class CheckpointListeners:
    """How the checkpointer reads and tells its task's lifecycle; all called on the task's
    loop thread, from the checkpointer's own calls (never from another thread)."""

    #: The watermark stored with each snapshot.
    current_watermark: Callable[[], int] = _min_watermark
    #: After the operators were notified that a checkpoint completed.
    on_complete: Callable[[int], None] | None = None
    #: The task takes a synchronous savepoint (stop with savepoint), before its snapshot;
    #: the second argument: its barrier is unaligned (the task then drops its in-flight input).
    on_synchronous_savepoint: Callable[[int, bool], None] | None = None
    #: Buffer debloating's estimated time to consume the in-flight input (ms), or None.
    debloat_estimate: Callable[[], float | None] | None = None
