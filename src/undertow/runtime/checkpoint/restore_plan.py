"""Where a (re)deployment restores from: which old state files, channel state and enumerator
state each new subtask takes over (Flink's ``StateAssignmentOperation``), as a
:class:`RestorePlan`.

State is matched per operator uid, so a changed chaining or parallelism still finds every
operator's state; state of an operator the job no longer has fails the restore unless
``execution.state-recovery.ignore-unclaimed-state``. Fully finished operators (FLIP-147) are
deployed as finished and get nothing. Channel state restores in place where an edge's
parallelism is unchanged; on a rescaled edge the new producer subtasks re-emit the old
channels; channel state whose chains changed is refused (all of it: :mod:`.channel_recovery`).

Pure planning over the job graph and the checkpoint's metadata; the only I/O is reading the
source enumerators' state files, and before refusing unclaimed state, that state's files to
name the operators holding it (blocking: call it on an executor). Used by the checkpoint
coordinator for failover and for ``execution.state-recovery.path``.
"""

from __future__ import annotations

import pickle
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from undertow.core.errors import RestoreError
from undertow.graph.job_graph import JobGraph
from undertow.graph.stream_graph import generated_uid_name
from undertow.runtime.checkpoint.channel_recovery.plan import plan_channel_recovery
from undertow.runtime.checkpoint.channel_recovery.rescale import ReemitChannel
from undertow.runtime.checkpoint.channel_state_handles import ChannelStateHandles
from undertow.runtime.checkpoint.metadata import CheckpointMetadata, VertexMetadata
from undertow.runtime.checkpoint.restore_fault import RestoreFault
from undertow.runtime.checkpoint.trigger_plan import RestoredVertex, finished_on_restore
from undertow.storage.checkpoint_storage import CheckpointStorage, FileHandle


@dataclass(frozen=True)
class RestorePlan:
    """Where a (re)deployment restores from."""

    metadata: CheckpointMetadata
    checkpoint_dir: str
    job_id: str
    #: (vertex id, subtask) -> state files of the old subtasks it takes over
    subtask_files: dict[tuple[int, int], list[FileHandle]]
    #: source vertex id -> enumerator state
    enumerator_states: dict[int, Any]
    #: (vertex id, subtask) -> its channel state in shared files, restored in place (same
    #: parallelism; minus the channels of ``rescaled_gates`` / ``rescaled_outputs``)
    channel_state: dict[tuple[int, int], ChannelStateHandles] = field(default_factory=dict)
    #: (producer vertex id, new subtask) -> old channels it re-emits through its record
    #: writers before its operators run, in order (:mod:`.channel_recovery.rescale`)
    reemit: dict[tuple[int, int], tuple[ReemitChannel, ...]] = field(default_factory=dict)
    #: vertex id -> gate indices of rescaled edges with channel state (not restored in place)
    rescaled_gates: dict[int, frozenset[int]] = field(default_factory=dict)
    #: vertex id -> output indices of rescaled edges with channel state: not restored in
    #: place; every subtask ends their re-emitted data with a blocking EndOfChannelStateEvent
    rescaled_outputs: dict[int, frozenset[int]] = field(default_factory=dict)
    #: vertices (of the job being deployed) restored as finished (FLIP-147)
    finished_vertices: frozenset[int] = frozenset()
    #: the snapshot's directory (``.../chk-<n>`` or ``.../savepoint-<jobid6>-<n>``)
    pointer: str = ""
    #: the size of its ``_metadata`` in bytes
    metadata_size: int = 0
    #: test-only: what the workers drop from the state files they read (a restore control)
    fault: RestoreFault | None = None


def plan_restore(
    graph: JobGraph,
    meta: CheckpointMetadata,
    storage: CheckpointStorage,
    ignore_unclaimed_state: bool = False,
) -> RestorePlan:
    """Which old state files each new subtask reads, matched per operator uid (Flink's
    OperatorID mapping), so a changed chaining or parallelism still finds every operator's
    state. An old operator with state that the job no longer has fails the restore unless
    ``execution.state-recovery.ignore-unclaimed-state`` (this can only see operators whose
    whole old vertex is gone; the workers check the rest when they read the files);
    ``ignore_unclaimed_state`` is that option's value."""
    new_uids = {op.uid for vertex in graph.vertices for op in vertex.operators}
    unclaimed = [v for v in meta.vertices if present(v.subtasks) and not (set(v.uids) & new_uids)]
    if unclaimed and not ignore_unclaimed_state:
        holders = [u for v in unclaimed for u in holding_state(v, storage, meta.checkpoint_id)]
        raise RestoreError(unclaimed_message(meta.checkpoint_id, holders, new_uids))
    finished_uids = frozenset(u for v in meta.vertices if v.finished for u in v.uids)
    finished = finished_on_restore(
        [
            RestoredVertex(v.id, v.name, tuple(op.uid for op in v.operators),
                           frozenset(e.source_vertex for e in v.inputs))
            for v in graph.vertices
        ],
        finished_uids, meta.checkpoint_id,
    )  # fmt: skip
    files: dict[tuple[int, int], list[FileHandle]] = {}
    enumerators: dict[int, Any] = {}
    old_of: dict[int, VertexMetadata] = {}  # new vertex -> old vertex with the same chain
    for vertex in graph.vertices:
        chain = tuple(op.uid for op in vertex.operators)
        exact = [old for old in meta.vertices if set(old.uids) & set(chain)]
        if len(exact) == 1 and exact[0].uids == chain:
            old_of[vertex.id] = exact[0]
    channels = plan_channel_recovery(graph, meta, old_of, finished)
    for vertex in graph.vertices:
        if vertex.id in finished:
            continue  # deployed as finished: no state, no enumerator
        uids = {op.uid for op in vertex.operators}
        matched = [old for old in meta.vertices if set(old.uids) & uids]
        if not matched:
            continue
        for s in range(vertex.parallelism):
            handles: list[FileHandle] = []
            for old in matched:
                if old.parallelism == vertex.parallelism:
                    handle = old.subtasks.get(s)
                    handles += [handle] if handle is not None else []
                else:
                    stateful = present(old.subtasks)
                    handles += [stateful[i] for i in sorted(stateful)]
            files[(vertex.id, s)] = handles
        for old in matched:
            handle = meta.coordinators.get(old.vertex_id)
            if handle is not None and vertex.operators[0].uid == old.uids[0]:
                data = storage.read_file(handle, meta.checkpoint_id)
                enumerators[vertex.id] = pickle.loads(data)
    return RestorePlan(meta, storage.root_uri, storage.job_id, files, enumerators,
                       channels.channel_state, channels.reemit, channels.rescaled_gates,
                       channels.rescaled_outputs, finished)  # fmt: skip


def check_max_parallelism(graph: JobGraph, meta: CheckpointMetadata) -> None:
    """Refuse (:class:`RestoreError`) to restore ``meta`` into ``graph`` if an operator with
    state in it has another max parallelism in ``graph`` than in the job that took it, naming
    the operator and both values (the caller adds the path: :meth:`RestoreError.at`). The
    max parallelism is the number of key groups: a key's group, and so the blob holding its
    state, follows from it, so it cannot change across a restore (as in Flink). Pure;
    checked before anything runs.
    Operators whose old vertex has no state file are not checked (nothing to misplace)."""
    for vertex in graph.vertices:
        for op in vertex.operators:
            for old in meta.vertices:
                if op.uid not in old.uids or not present(old.subtasks):
                    continue
                if old.max_parallelism != vertex.max_parallelism:
                    raise RestoreError(
                        f"operator {op.name!r} (uid {op.uid!r}) was "
                        f"checkpointed with max parallelism {old.max_parallelism}, and this job "
                        f"gives it max parallelism {vertex.max_parallelism}. The max "
                        "parallelism is the number of key groups, which place each key's "
                        "state, so it cannot change across a restore: set it back to "
                        f"{old.max_parallelism} (pipeline.max-parallelism, or "
                        f"set_max_parallelism({old.max_parallelism}) on the environment or "
                        "the operator)"
                    )


def holding_state(
    vertex: VertexMetadata, storage: CheckpointStorage, checkpoint_id: int
) -> list[str]:
    """The uids of ``vertex``'s chained operators that hold state in checkpoint
    ``checkpoint_id``, in chain order: a stateless operator chained with them (a map before a
    keyed sum) has nothing to lose. Reads and unpickles the vertex's state files, so only on
    the way to a refusal; all its uids if one cannot be read or none names an operator (the
    metadata alone does not tell)."""
    held: set[str] = set()
    for handle in present(vertex.subtasks).values():
        try:
            snapshot = pickle.loads(storage.read_file(handle, checkpoint_id))
            held.update(snapshot.operators)
        except Exception:  # a refusal follows either way: it names them all
            return list(vertex.uids)
    return [uid for uid in vertex.uids if uid in held] or list(vertex.uids)


def unclaimed_message(checkpoint_id: int, uids: list[str], job_uids: Iterable[str] = ()) -> str:
    """Why a restore of ``checkpoint_id`` is refused: it has state of operators ``uids`` that
    the job (whose operators have ``job_uids``) does not have, and what to do. An operator that
    had no ``uid()`` (its uid generated from the topology) is named, with why its id changed;
    if the job has an operator of that name whose uid is generated too, that one is named."""
    listed = []
    generated: list[str] = []
    for uid in sorted(uids):
        name = generated_uid_name(uid)
        if name is None:
            listed.append(repr(uid))
        else:
            generated.append(name)
            listed.append(f"{uid!r} (operator {name!r}, which had no uid())")
    message = (
        f"checkpoint {checkpoint_id} has state of operators this job does not have: "
        f"{', '.join(listed)}. "
    )
    if generated:
        now = sorted(u for u in job_uids if generated_uid_name(u) in generated)
        return message + (
            "An operator without .uid(...) gets an id generated from the topology (its name "
            "and its inputs' ids), so changing the job before it (an operator added, removed "
            "or renamed upstream) gives it another id, and its state is not found"
            + (f" (this job generated {', '.join(map(repr, now))})" if now else "")
            + ". Set .uid(...) on stateful operators, the same in the job that takes a "
            "snapshot and in the one that restores it; to start from this snapshot without "
            f"that state, set {_IGNORE}"
        )
    return message + (
        "Give operators the same .uid(...) as in the job that took the checkpoint, or set "
        f"{_IGNORE} to start without that state"
    )


_IGNORE = (
    "execution.state-recovery.ignore-unclaimed-state: true (undertow run -n, "
    "--allowNonRestoredState)"
)


def present(handles: Mapping[int, FileHandle | None]) -> dict[int, FileHandle]:
    """Subtasks with state (a subtask without state acknowledges with no file)."""
    return {s: h for s, h in handles.items() if h is not None}
