"""The one console line every restore prints, failover or ``execution.state-recovery.path``::

    restored from checkpoint 7 (unaligned, 1.2 MiB in-flight) in 40 ms

What it restored (the checkpoint or savepoint id, whether it was taken unaligned, the in-flight
data its channel state holds) comes from the checkpoint's metadata; how long it took is the
JobMaster's measure from sending the deployment to every worker having read its state (and,
after a rescale, every consumer having taken the re-emitted in-flight data). Pure functions.
"""

from __future__ import annotations

from undertow.core.units import human_bytes
from undertow.runtime.checkpoint.metadata import CheckpointMetadata


def in_flight_bytes(meta: CheckpointMetadata) -> int:
    """Bytes of channel state (both sides, every subtask) the checkpoint holds: written by it,
    or referred to in older checkpoints' files."""
    return sum(
        h.persisted_bytes + h.referenced_bytes
        for v in meta.vertices
        for h in v.channel_state.values()
    )


def restore_line(meta: CheckpointMetadata, duration_ms: int) -> str:
    """The console line of a restore from ``meta`` that took ``duration_ms``."""
    what = "savepoint" if meta.is_savepoint else "checkpoint"
    mode = "unaligned" if meta.properties.get("unaligned") == "true" else "aligned"
    return (
        f"restored from {what} {meta.checkpoint_id} ({mode}, "
        f"{human_bytes(in_flight_bytes(meta))} in-flight) in {max(duration_ms, 0)} ms"
    )
