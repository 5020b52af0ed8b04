"""What a completed checkpoint's acknowledgements add up to (pure helpers of the coordinator).

The files the subtasks' states reference (state files, shared files of incremental
checkpoints, merged channel-state handles), and the properties ``_metadata`` records about
how the checkpoint went (``undertow checkpoints`` shows them). Threading: none (pure).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from undertow.runtime.checkpoint.channel_state_handles import ChannelStateHandles
from undertow.runtime.checkpoint.snapshot import SubtaskStateHandle
from undertow.storage import FileHandle


def shared_of(states: Iterable[SubtaskStateHandle | None]) -> tuple[FileHandle, ...]:
    """The distinct shared files the acknowledged subtask states reference, by path."""
    found = {h.path: h for state in states if state is not None for h in state.shared}
    return tuple(found[path] for path in sorted(found))


def state_file(state: SubtaskStateHandle | None) -> FileHandle | None:
    return None if state is None else state.state


def channel_state_of(
    states: Mapping[int, SubtaskStateHandle | None],
) -> dict[int, ChannelStateHandles]:
    """Subtasks whose channel state is in shared files (handles, one per side)."""
    return {
        s: state.channel_state
        for s, state in states.items()
        if state is not None and state.channel_state is not None and state.has_channel_state
    }


def checkpoint_properties(metrics: Iterable[Mapping[str, Any]]) -> dict[str, str]:
    """What ``_metadata`` records about how a checkpoint went (``undertow checkpoints`` shows
    it): whether any subtask took it unaligned, the in-flight bytes persisted (channel state)
    and processed during alignment, summed over subtasks, and the slowest subtask's times."""
    acks = list(metrics)

    def total(key: str) -> str:
        return str(sum(int(m.get(key, 0) or 0) for m in acks))

    def slowest(key: str) -> str:
        return str(round(max((float(m.get(key, 0) or 0) for m in acks), default=0.0)))

    return {
        "unaligned": str(any(bool(m.get("unaligned")) for m in acks)).lower(),
        "persisted_data": total("persisted_data"),
        "processed_data": total("processed_data"),
        "alignment_duration_ms": slowest("alignment_duration_ms"),
        "start_delay_ms": slowest("start_delay_ms"),
        "sync_duration_ms": slowest("sync_duration_ms"),
        "async_duration_ms": slowest("async_duration_ms"),
    }
