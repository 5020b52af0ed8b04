"""What a completed checkpoint consists of: the values the ``_metadata`` file carries.

:class:`CheckpointMetadata` lists the job's vertices (:class:`VertexMetadata`), each subtask's
state file, its unaligned channel state and the coordinators' state. The byte format and its
authentication are :mod:`.metadata`; the bodies are :mod:`.metadata_msgpack` (written) and
:mod:`.metadata_json` (read only, from earlier undertow).

Immutable values; pure functions, callable from any thread.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from undertow.runtime.checkpoint.channel_state_handles import ChannelStateHandles
from undertow.storage import FileHandle


@dataclass(frozen=True, slots=True)
class VertexMetadata:
    """One job vertex (an operator chain) in a checkpoint.

    ``uids`` are the chained operators' uids in chain order; ``subtasks`` maps a subtask index
    to the handle of its state file. A ``finished`` vertex (FLIP-147) has no subtask state and
    is restored as finished. ``channel_state`` maps a subtask index to its unaligned channel
    state (merged handles, one per side; files may be shared with other subtasks); it is
    written only when non-empty, and metadata without it decodes with it empty.
    """

    vertex_id: int
    name: str
    uids: tuple[str, ...]
    parallelism: int
    max_parallelism: int
    finished: bool = False
    subtasks: dict[int, FileHandle] = field(default_factory=dict)
    channel_state: dict[int, ChannelStateHandles] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class CheckpointMetadata:
    """Everything needed to restore a job from one checkpoint.

    Timestamps are epoch milliseconds. ``coordinators`` maps a vertex id to the handle of its
    coordinator state (``None``: the coordinator had nothing to store). ``properties`` carries
    small string facts (checkpoint type, claim mode, ...). ``shared_files`` are the files in
    ``<job>/shared/`` the subtasks' state files reference (incremental checkpoints; they may
    have been uploaded by an earlier checkpoint): what the shared-state registry counts.
    """

    job_id: str
    checkpoint_id: int
    trigger_timestamp: int
    completion_timestamp: int
    is_savepoint: bool
    vertices: tuple[VertexMetadata, ...]
    coordinators: dict[int, FileHandle | None] = field(default_factory=dict)
    properties: dict[str, str] = field(default_factory=dict)
    shared_files: tuple[FileHandle, ...] = ()


def referenced_files(meta: CheckpointMetadata) -> list[FileHandle]:
    """Every distinct file the checkpoint references (subtask, channel and coordinator
    state, and the shared files of incremental state, which earlier checkpoints may have
    uploaded); a file shared by several subtasks is listed once."""
    seen: dict[str, FileHandle] = {}
    for handle in meta.shared_files:
        seen.setdefault(handle.path, handle)
    for vertex in meta.vertices:
        for handle in vertex.subtasks.values():
            seen.setdefault(handle.path, handle)
        for channel_state in vertex.channel_state.values():
            for handle in (*channel_state.files(), *channel_state.referenced_files()):
                seen.setdefault(handle.path, handle)
    for maybe in meta.coordinators.values():
        if maybe is not None:
            seen.setdefault(maybe.path, maybe)
    return list(seen.values())


def referenced_channel_state_files(meta: CheckpointMetadata) -> list[FileHandle]:
    """The older checkpoints' channel-state files this one refers to (restored in-flight data
    a checkpoint during recovery did not write again), each once: the coordinator holds them
    for as long as the checkpoint is retained (:mod:`.shared_files`)."""
    seen: dict[str, FileHandle] = {}
    for vertex in meta.vertices:
        for channel_state in vertex.channel_state.values():
            for handle in channel_state.referenced_files():
                seen.setdefault(handle.path, handle)
    return list(seen.values())


def total_state_size(meta: CheckpointMetadata) -> int:
    """Bytes of state the checkpoint references, each distinct file counted once, plus the
    channel state carried inline in the metadata."""
    inline = sum(
        handles.inline_bytes
        for vertex in meta.vertices
        for handles in vertex.channel_state.values()
    )
    return sum(handle.size for handle in referenced_files(meta)) + inline
