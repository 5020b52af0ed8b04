"""Where an unaligned checkpoint's time goes: a probe of its hops, for ``local-threads`` jobs.

:func:`install` wraps the runtime's methods on each hop of a checkpoint (the JobMaster, its
workers and their I/O threads share the process on ``local-threads``) and records, per
checkpoint, when each happened (``time.perf_counter``, ms after the coordinator decided to
trigger it). Nothing in ``src/`` knows of it; :func:`uninstall` restores the methods.
:func:`table` prints, per hop, the p50 over the checkpoints that completed of its first and
its last occurrence (a hop happens once per subtask, channel or file).

The hops, in order: the trigger decision, the trigger RPC sent to each source subtask, the
worker received it, the source's mail taken, each subtask's synchronous snapshot done, each
barrier's arrival at a downstream input channel (network callback) and its taking by the
task, each input side complete, each channel-state file submitted, begun and written, each
acknowledgement sent and received, the completion time taken (the end of the duration the
JobMaster reports: the enumerators' states are written, ``_metadata`` not yet), and the
checkpoint completed (``_metadata`` written).

Usage: ``python benchmarks/columnar_cuts.py --probe`` (or ``install()`` around any
``local-threads`` job).
"""

from __future__ import annotations

import functools
import statistics
import time
from collections import defaultdict
from collections.abc import Callable
from typing import Any

from undertow.runtime.checkpoint import channel_state_files as csf
from undertow.runtime.checkpoint import finalization
from undertow.runtime.checkpoint.barrier import CheckpointBarrier
from undertow.runtime.checkpoint.coordinator import CheckpointCoordinator
from undertow.runtime.control.messages import TriggerSourceCheckpoint
from undertow.runtime.master.task_gateway import AttemptGateway
from undertow.runtime.task.checkpointing import SubtaskCheckpointer
from undertow.runtime.task.snapshot_writer import SnapshotWriter, _AckJoin
from undertow.runtime.worker.control_router import ControlRouter
from undertow.runtime.worker.task_link import ResponderToMaster

HOPS = (
    "trigger decided", "trigger RPC sent", "worker received trigger", "source mail taken",
    "snapshot taken", "barrier arrived (network)", "barrier taken by task",
    "input side complete", "channel-state file submitted", "channel-state write began",
    "channel-state file written", "state file on I/O thread", "channel state on I/O thread",
    "state file back on loop", "channel state back on loop", "ack sent", "ack received",
    "completion time taken",
    "checkpoint completed",
)  # fmt: skip

#: checkpoint id -> hop -> times (perf_counter seconds)
events: dict[int, dict[str, list[float]]] = defaultdict(lambda: defaultdict(list))
_saved: list[tuple[Any, str, Any]] = []


def record(cid: int, hop: str) -> None:
    events[cid][hop].append(time.perf_counter())


def _wrap(owner: Any, name: str, before: Callable[..., None] | None = None,
          after: Callable[..., None] | None = None) -> None:  # fmt: skip
    original = getattr(owner, name)
    _saved.append((owner, name, original))

    @functools.wraps(original)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        if before is not None:
            before(*args, **kwargs)
        result = original(*args, **kwargs)
        if after is not None:
            after(result, *args, **kwargs)
        return result

    setattr(owner, name, wrapper)


def install() -> None:
    """Wrap the hops' methods (idempotent only after :func:`uninstall`)."""
    events.clear()
    _wrap(
        CheckpointCoordinator,
        "_trigger",
        before=lambda self, *a, **k: record(self.next_id, "trigger decided"),
    )
    _wrap(
        AttemptGateway,
        "trigger_source",
        after=lambda _, self, v, s, b: record(b.checkpoint_id, "trigger RPC sent"),
    )

    def routed(self: Any, msg: object) -> None:
        if isinstance(msg, TriggerSourceCheckpoint):
            record(msg.barrier.checkpoint_id, "worker received trigger")

    _wrap(ControlRouter, "route", before=routed)
    _wrap(
        SubtaskCheckpointer,
        "trigger_checkpoint",
        before=lambda self, b: record(b.checkpoint_id, "source mail taken"),
    )
    _wrap(SnapshotWriter, "start", before=lambda self, cid, *a, **k: record(cid, "snapshot taken"))

    def arrived(self: Any, index: int, payload: object) -> None:
        if type(payload) is CheckpointBarrier:
            record(payload.checkpoint_id, "barrier arrived (network)")

    _wrap(SubtaskCheckpointer, "_on_arrival", before=arrived)
    _wrap(
        SubtaskCheckpointer,
        "on_barrier",
        before=lambda self, ch, b: record(b.checkpoint_id, "barrier taken by task"),
    )
    _wrap(
        csf.SubtaskChannelStateWriter,
        "finish_input",
        before=lambda self, cid: record(cid, "input side complete"),
    )
    _wrap(
        csf.ChannelStateFileWriter,
        "_persist",
        before=lambda self, cid, taking: record(cid, "channel-state file submitted"),
    )

    def written(result: Any, layout: Any, *args: Any) -> None:
        record(layout.checkpoint_id, "channel-state file written")

    _wrap(
        csf,
        "write_layout",
        after=written,
        before=lambda layout, *a: record(layout.checkpoint_id, "channel-state write began"),
    )

    def completion_time(job: Any, graph: Any, topology: Any, pending: Any, *a: Any) -> None:
        record(pending.checkpoint_id, "completion time taken")

    _wrap(finalization, "assemble_metadata", before=completion_time)

    def latest(what: str) -> Callable[..., None]:  # a join knows no checkpoint id: the newest
        def report(self: Any, result: Any, io: bool = False) -> None:
            record(max(events), f"{what} {'on I/O thread' if io else 'back on loop'}")

        return report

    _wrap(_AckJoin, "state_written", before=latest("state file"))
    _wrap(_AckJoin, "channel_state_written", before=latest("channel state"))
    _wrap(ResponderToMaster, "acknowledge", before=lambda self, cid, *a: record(cid, "ack sent"))
    _wrap(
        ResponderToMaster,
        "acknowledge_from_any_thread",
        before=lambda self, cid, *a: record(cid, "ack sent"),
    )
    _wrap(
        CheckpointCoordinator,
        "receive_ack",
        before=lambda self, v, s, cid, *a: record(cid, "ack received"),
    )
    original_complete = CheckpointCoordinator._complete
    _saved.append((CheckpointCoordinator, "_complete", original_complete))

    async def complete(self: Any, pending: Any) -> None:
        await original_complete(self, pending)
        record(pending.checkpoint_id, "checkpoint completed")

    CheckpointCoordinator._complete = complete  # type: ignore[method-assign]


def uninstall() -> None:
    while _saved:
        owner, name, original = _saved.pop()
        setattr(owner, name, original)


def completed() -> list[int]:
    """The checkpoints recorded from their trigger decision to their completion."""
    return [
        c for c, e in events.items() if e.get("checkpoint completed") and e.get("trigger decided")
    ]


def medians() -> dict[str, tuple[float, float, float]]:
    """Per hop that happened: p50 over completed checkpoints of its first and last time (ms
    after the trigger decision) and of how many times it happened per checkpoint."""
    found = {}
    for hop in HOPS:
        firsts, lasts, counts = [], [], []
        for cid in completed():
            times = events[cid].get(hop)
            if not times:
                continue
            t0 = events[cid]["trigger decided"][0]
            firsts.append((min(times) - t0) * 1000)
            lasts.append((max(times) - t0) * 1000)
            counts.append(len(times))
        if firsts:
            found[hop] = (statistics.median(firsts), statistics.median(lasts),
                          statistics.median(counts))  # fmt: skip
    return found


def table() -> str:
    """:func:`medians` as a table, one line per hop."""
    lines = [f"hops of {len(completed())} completed checkpoints (ms after the trigger decision, "
             f"p50)", f"{'hop':<30}{'first':>8}{'last':>8}{'count':>7}"]  # fmt: skip
    for hop, (first, last, count) in medians().items():
        lines.append(f"{hop:<30}{first:>8.1f}{last:>8.1f}{count:>7.0f}")
    return "\n".join(lines)
