"""The exactly-once Kafka sink's protocol as pure decisions: facts in, a typed decision out.

librdkafka cannot commit a transaction another process prepared, so the sink writes ahead:
a checkpoint's records wait in the writer's state, and once the checkpoint completed they go
to Kafka in one transaction with a progress marker ``(prefix, token, owner) -> checkpoint id``
on a compacted topic. A restored writer fences, reads the markers (read_committed) and writes
again exactly the restored batches above their key's marker.

Invariant: one key's batches are committed in checkpoint order, each transaction with its
newest id as the marker, so ``marker >= id`` means "committed", exactly. A key belongs to one
writer run (``token``) and one owner subtask; state is routed by owner after a rescale.

The longer story: docs/design.md, "Kafka sink: exactly-once without resumable transactions".
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, fields

from undertow.core.errors import UndertowError

#: Checkpoint id of batches written at the end of input without a final checkpoint.
END_OF_INPUT = 2**63 - 1


class KafkaSinkError(UndertowError):
    """The Kafka sink cannot write, commit or start; names the sink, subtask, topic or
    checkpoint involved."""


@dataclass(frozen=True, slots=True)
class ProducedRecord:
    """One serialized record as it will be produced."""

    topic: str
    key: bytes | None
    value: bytes | None
    timestamp: int | None

    @property
    def size(self) -> int:
        return len(self.key or b"") + len(self.value or b"")


@dataclass(frozen=True, slots=True)
class PendingBatch:
    """The records one owner buffered for one checkpoint, not yet known to be committed."""

    checkpoint_id: int
    records: tuple[ProducedRecord, ...]


@dataclass(frozen=True, slots=True)
class MarkerKey:
    """The key of a progress marker: a sink (its transactional id prefix), a writer run and the
    owner subtask whose batches it counts."""

    prefix: str
    token: str
    owner: int

    def encode(self) -> bytes:
        return f"{self.prefix}\x00{self.token}\x00{self.owner}".encode()

    @staticmethod
    def decode(raw: bytes) -> MarkerKey | None:
        """The key, or ``None`` for a record that is not a marker key."""
        parts = raw.decode("utf-8", "replace").split("\x00")
        if len(parts) != 3 or not parts[2].isdigit():
            return None
        return MarkerKey(parts[0], parts[1], int(parts[2]))


@dataclass(frozen=True, slots=True)
class KafkaWriterState:
    """What one writer snapshots per owner it holds. Routed by ``subtask`` after a rescale;
    ``parallelism`` is that of the run that took the snapshot (for fencing).

    ``prefix`` and ``progress_topic`` are the transactional id prefix and the progress topic
    the writer used: its markers are keyed by that prefix, on that topic. States of
    checkpoints taken before they were recorded unpickle with ``""`` for both (the sink's
    current prefix is then assumed, and the topic not checked): the pickled form is the list
    of the fields in order, and :meth:`__setstate__` fills the fields an older list lacks."""

    subtask: int
    parallelism: int
    token: str
    batches: tuple[PendingBatch, ...]
    prefix: str = ""
    progress_topic: str = ""

    def key(self, prefix: str) -> MarkerKey:
        """The key of this state's marker: under the recorded prefix, else ``prefix``."""
        return MarkerKey(self.prefix or prefix, self.token, self.subtask)

    def __getstate__(self) -> list[object]:
        return [getattr(self, f.name) for f in fields(self)]

    def __setstate__(self, state: list[object]) -> None:
        known = fields(self)
        if not 4 <= len(state) <= len(known):
            raise ValueError(f"KafkaWriterState: a pickled state of {len(state)} fields, "
                             f"expected 4 to {len(known)}")  # fmt: skip
        for field, value in zip(known, state):
            object.__setattr__(self, field.name, value)
        for field in known[len(state) :]:
            object.__setattr__(self, field.name, field.default)


# -- transactional ids ---------------------------------------------------------------------------
def transactional_id(prefix: str, subtask: int) -> str:
    """The one transactional id of sink subtask ``subtask``: stable across restarts and
    rescales, and at most ``parallelism`` of them per sink (FLINK-34554)."""
    return f"{prefix}-{subtask}"


def ids_to_fence(states: Iterable[KafkaWriterState], index: int, parallelism: int) -> list[int]:
    """Subtask indices whose transactional ids restored subtask ``index`` must initialize (and so
    fence and abort) before it reads markers: its own, and those of old subtasks routed to it
    that the new parallelism no longer runs (a rescale down). Every old subtask snapshots a
    state, so every old id is fenced by exactly one new subtask."""
    fenced = {index}
    for state in states:
        if state.subtask >= parallelism and state.subtask % parallelism == index:
            fenced.add(state.subtask)
    return sorted(fenced)


def ids_of_other_prefixes(states: Iterable[KafkaWriterState], prefix: str) -> list[str]:
    """The transactional ids of restored states written under a prefix other than ``prefix``
    (the sink's prefix was changed): the new owner fences them as it fences its own, since a
    crashed commit of the old run may have left them open."""
    return sorted({transactional_id(s.prefix, s.subtask) for s in states
                   if s.prefix and s.prefix != prefix})  # fmt: skip


@dataclass(frozen=True, slots=True)
class IdUseKey:
    """The key of an *id-use record* on the progress topic: a run of the sink ``prefix``
    started the subtask ``subtask`` and so may have opened transactions with its id. Written
    (not transactionally) by every exactly-once subtask at start, before its first
    transaction; read by subtask 0 of later runs (:func:`lingering_ids`). Four ``\\x00``-
    separated parts, so :meth:`MarkerKey.decode` takes it for no marker."""

    prefix: str
    subtask: int

    def encode(self) -> bytes:
        return f"{self.prefix}\x00\x00{self.subtask}\x00id-used".encode()

    @staticmethod
    def decode(raw: bytes) -> IdUseKey | None:
        """The key, or ``None`` for a record that is not an id-use record."""
        parts = raw.decode("utf-8", "replace").split("\x00")
        if len(parts) != 4 or parts[1] or parts[3] != "id-used" or not parts[2].isdigit():
            return None
        return IdUseKey(parts[0], int(parts[2]))


def lingering_ids(used: Iterable[int], index: int, parallelism: int) -> list[int]:
    """Subtask indices whose transactional ids subtask ``index`` fences at start because an
    earlier run of the sink used them (``used``: the id-use records) and no subtask of this
    run will: those at or above ``parallelism``, all taken by subtask 0. A commit of such a
    run that crashed left its transaction open, and until ``transaction.timeout.ms`` that
    transaction holds back every read_committed consumer of its partitions (the last stable
    offset stays below it). A restored rescale down fences the ids its states name
    (:func:`ids_to_fence`); this covers what no restored state names: a new job without a
    restore, or one restored from a checkpoint older than the run that used the ids."""
    if index != 0:
        return []
    return sorted({i for i in used if i >= parallelism})


# -- restore -------------------------------------------------------------------------------------
def changed_progress_topic(states: Iterable[KafkaWriterState], progress_topic: str) -> str | None:
    """The progress topic the restored states' markers are on if it is not ``progress_topic``
    (the one the sink is configured with now), else ``None``. A restore must read the markers
    where they were written: on another topic none would be found, and every restored batch
    would be written again (duplicates). States that did not record it are not checked."""
    for state in states:
        if state.progress_topic and state.progress_topic != progress_topic:
            return state.progress_topic
    return None


@dataclass(frozen=True, slots=True)
class RestoreDecision:
    """What a restored writer writes in its first transaction, before new input.

    ``write`` lists the batches to produce, in checkpoint order per key; ``markers`` the
    marker to set per key written; ``skipped`` counts batches already committed; ``dead`` the
    restored keys, to delete once a checkpoint after the restore completed."""

    write: tuple[tuple[MarkerKey, PendingBatch], ...]
    markers: tuple[tuple[MarkerKey, int], ...]
    skipped: int
    dead: tuple[MarkerKey, ...]


def restore_decision(
    prefix: str, states: Iterable[KafkaWriterState], markers: Mapping[MarkerKey, int]
) -> RestoreDecision:
    """Given the restored states and the committed markers (missing key: nothing committed),
    the batches still to write. A key's batches at or below its marker were committed (in
    one transaction with it); those above were not."""
    write: list[tuple[MarkerKey, PendingBatch]] = []
    new_markers: dict[MarkerKey, int] = {}
    skipped = 0
    dead: list[MarkerKey] = []
    for state in sorted(states, key=lambda s: (s.subtask, s.token)):
        key = state.key(prefix)
        dead.append(key)
        committed = markers.get(key)
        for batch in sorted(state.batches, key=lambda b: b.checkpoint_id):
            if committed is not None and batch.checkpoint_id <= committed:
                skipped += 1
                continue
            write.append((key, batch))
            new_markers[key] = batch.checkpoint_id
    return RestoreDecision(tuple(write), tuple(new_markers.items()), skipped, tuple(dead))


# -- commit on checkpoint completion -------------------------------------------------------------
@dataclass(frozen=True, slots=True)
class CommitDecision:
    """The transaction to run when a checkpoint completed: ``batches`` (oldest first) under
    ``key`` with the marker set to ``marker``, and ``tombstones`` for dead keys. Empty when
    nothing is due and nothing is dead (no transaction at all)."""

    key: MarkerKey
    batches: tuple[PendingBatch, ...]
    marker: int | None
    tombstones: tuple[MarkerKey, ...]

    @property
    def is_empty(self) -> bool:
        return not self.batches and not self.tombstones


def commit_decision(
    key: MarkerKey,
    pending: Mapping[int, PendingBatch],
    completed: int,
    dead: Iterable[MarkerKey] = (),
    restored_checkpoint: int | None = None,
) -> CommitDecision:
    """When checkpoint ``completed`` completed: every pending batch with an id ``<=`` it (a
    completed checkpoint subsumes earlier ones that never completed), oldest first, with the
    marker at the newest. Dead keys are deleted only once a checkpoint *after* the restore
    (``restored_checkpoint``) completed: any later restore starts from it or a newer one, whose
    state no longer holds their batches."""
    due = tuple(pending[c] for c in sorted(pending) if c <= completed)
    marker = due[-1].checkpoint_id if due else None
    after_restore = restored_checkpoint is None or completed > restored_checkpoint
    tombstones = tuple(dead) if after_restore else ()
    return CommitDecision(key, due, marker, tombstones)


# -- transaction timeout -------------------------------------------------------------------------
def transaction_timeout_problem(
    timeout_ms: int, broker_max_ms: int | None, checkpoint_timeout_ms: int
) -> str | None:
    """Why ``transaction.timeout.ms`` cannot work, or ``None``.

    The broker refuses a producer whose timeout exceeds ``transaction.max.timeout.ms``. A
    commit's transaction is open only while the commit runs, but a commit of a whole
    checkpoint's output, retried after a restart, must fit in the timeout too, so it must be at
    least the checkpoint timeout: the bound a checkpoint's work is given."""
    if broker_max_ms is not None and timeout_ms > broker_max_ms:
        return (
            f"transaction.timeout.ms = {timeout_ms} exceeds the broker's "
            f"transaction.max.timeout.ms = {broker_max_ms}; lower it (set_property) or "
            "raise the broker's maximum"
        )
    if timeout_ms < checkpoint_timeout_ms:
        return (
            f"transaction.timeout.ms = {timeout_ms} is below "
            f"execution.checkpointing.timeout = {checkpoint_timeout_ms}; a commit of a "
            "checkpoint's output could be aborted by the broker; raise it (set_property) "
            "or lower the checkpoint timeout"
        )
    return None
