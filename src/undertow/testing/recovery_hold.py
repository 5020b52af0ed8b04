"""A restore at a known point for tests of recovery: a sink held around producers' barriers.

A test of what a checkpoint during recovery captures needs in-flight data in the restored
checkpoint, still in flight when the first checkpoint after the restore reaches its producer.
Timing promises neither: a consumer takes its producer's restored output as soon as it runs (a
record spanning buffers is reassembled before any function sees it), the first checkpoint after
a restore is triggered a random part of an interval after the deployment, and what a barrier
finds queued depends on where the consumer is in its input. :class:`RecoveryHold` makes both
facts: the held sink subtask stops taking input until a producer's barrier comes with a whole
record for it queued (attempt 0; the job then fails, so that checkpoint is the one restored),
and in the restored attempt it does not open until a producer saw a barrier.

Threading and placement: the marker runs on its producer's task thread; the sink blocks its own
task thread, the thread of that subtask's whole worker (subtask ``i`` of every vertex runs on
worker ``i % workers``): some marker subtask must run on another worker.
"""

from __future__ import annotations

import json
import time
from collections.abc import Collection
from pathlib import Path
from typing import Any

from undertow.api.functions import KeyedProcessFunction, MapFunction, RuntimeContext
from undertow.state.key_groups import assign_to_key_group
from undertow.testing._faults import InjectedFailure
from undertow.testing._oracle_functions import VerifyingSink
from undertow.testing._oracle_records import unwrap

#: Seconds a held sink waits at most before it goes on anyway (and records that it timed out).
HOLD_MAX_S = 60.0
#: How often a held sink looks for its barrier's marker.
POLL_S = 0.002


class RecoveryHold:
    """A :meth:`marker` (identity map) chained after the producers and a :meth:`sink` (the
    oracle's :class:`VerifyingSink`) whose subtasks ``subtasks`` are held, sharing files in
    ``directory``:

    * Attempt 0: once the sink subtask processed records and a checkpoint completed after
      them, it blocks in its next record that a marker subtask of ``producers`` passed (they
      run on another worker; each publishes the keys it passed: that channel's deserializer
      is then empty, so what the producer sends next waits whole in its queue), publishing
      the last seq it took per key. A checkpoint barrier (``K``) that reaches such a marker
      subtask whose last record goes to a
      held subtask that did not process it ends the hold: that record (of several buffers)
      is queued at the producer but what the sink's credit took, and ``K`` captures it. That
      marker fails (:class:`InjectedFailure`) when told ``K`` completed or at the next
      barrier, whichever comes first, so no later checkpoint completes: the job restores
      ``K``. (A checkpoint whose barrier passed the markers before the block waits for the
      blocked sink: let ``execution.checkpointing.timeout`` expire it.)
    * Attempt 1 (restored from ``K``): the sink subtask does not open until a marker sees the
      attempt's first barrier; an unaligned barrier overtakes the restored output still queued
      there, in the step that follows the marker's hook on the same thread.

    The marker's hook is ``prepare_snapshot_pre_barrier``, called right before the producer's
    task sends the barrier on. :meth:`held` says how each hold ended, so that a test asserts
    the hold instead of trusting it. Pickled with the job; the shared state is in files."""

    def __init__(
        self, directory: Path | str, subtasks: Collection[int], producers: Collection[int],
        hold_max_s: float = HOLD_MAX_S,
    ) -> None:  # fmt: skip
        if not subtasks or not producers or min(*subtasks, *producers) < 0:
            raise ValueError(f"subtasks and producers must be some indices >= 0, got "
                             f"{sorted(subtasks)}, {sorted(producers)}")  # fmt: skip
        self.directory = str(directory)
        Path(self.directory).mkdir(parents=True, exist_ok=True)
        self.subtasks = frozenset(subtasks)
        self.producers = frozenset(producers)
        self.hold_max_s = hold_max_s

    def marker(self) -> BarrierMarker:
        return BarrierMarker(self)

    def sink(self, records_per_key: int, seq_order_kept: bool = False, spin_s: float = 0.0,
             job_tag: int = 0, evidence_dir: str | None = None) -> HeldVerifyingSink:  # fmt: skip
        return HeldVerifyingSink(self, records_per_key, seq_order_kept, spin_s, job_tag,
                                 evidence_dir)  # fmt: skip

    def barrier(self, attempt: int) -> int | None:
        """The checkpoint whose barrier ended the hold of ``attempt`` (None: none yet)."""
        path = self._file(f"barrier-{attempt}")
        return int(path.read_text()) if path.exists() else None

    def blocked(self, attempt: int) -> dict[str, Any] | None:
        """What a held sink subtask of ``attempt`` published when it blocked (None: none did):
        its key groups (``groups``: [start, stop), ``max_parallelism``) and the last seq it
        processed per key (``processed``)."""
        path = self._file(f"blocked-{attempt}")
        return json.loads(path.read_text()) if path.exists() else None

    def held(self) -> dict[tuple[int, int], str]:
        """(attempt, subtask) -> how its hold ended: ``"barrier <id>"`` (checkpoint ``id``
        ended it) or ``"timed out"``."""
        ended: dict[tuple[int, int], str] = {}
        for path in sorted(Path(self.directory).glob("held-*")):
            _, attempt, subtask = path.name.split("-")
            ended[(int(attempt), int(subtask))] = path.read_text()
        return ended

    def mark(self, attempt: int, checkpoint_id: int) -> bool:
        """Record ``checkpoint_id`` as the barrier of ``attempt`` unless one is; whether it
        was recorded by this call."""
        path = self._file(f"barrier-{attempt}")
        if path.exists():
            return False
        partial = self._file(f"barrier-{attempt}.{checkpoint_id}.{time.monotonic_ns()}")
        partial.write_text(str(checkpoint_id))
        partial.replace(path)  # a reader never sees it half written
        return True

    def wait(self, attempt: int, subtask: int, published: dict[str, Any]) -> None:
        """Publish ``published`` (see :meth:`blocked`) and block (this thread) until the
        barrier of ``attempt`` was marked, at most ``hold_max_s``; record how it ended."""
        blocked = self._file(f"blocked-{attempt}.{subtask}")
        blocked.write_text(json.dumps(published))
        blocked.replace(self._file(f"blocked-{attempt}"))
        deadline = time.monotonic() + self.hold_max_s
        while self.barrier(attempt) is None and time.monotonic() < deadline:
            time.sleep(POLL_S)
        barrier = self.barrier(attempt)
        ended = "timed out" if barrier is None else f"barrier {barrier}"
        self._file(f"held-{attempt}-{subtask}").write_text(ended)

    def publish_key(self, key: Any) -> None:
        """A marker subtask of the producers passed a record of ``key``."""
        self._file(f"key-{key}").touch()

    def producer_keys(self) -> frozenset[str]:
        """The keys (as ``str``) that marker subtasks of the producers passed."""
        return frozenset(p.name[4:] for p in Path(self.directory).glob("key-*"))

    def _file(self, name: str) -> Path:
        return Path(self.directory) / name


class BarrierMarker(MapFunction):
    """Identity; marks the barrier that ends a hold (see :class:`RecoveryHold`), and in
    attempt 0 fails once that checkpoint completed."""

    def __init__(self, hold: RecoveryHold) -> None:
        self.hold = hold
        self.attempt = 0
        self.last: tuple[int, int] | None = None  # (key, seq) of the last record passed
        self.marked: int | None = None
        self.counts = False  # this subtask is one of the hold's producers
        self.keys: set[Any] = set()

    def open(self, runtime_context: RuntimeContext) -> None:
        self.attempt = runtime_context.get_attempt_number()
        self.counts = runtime_context.get_index_of_this_subtask() in self.hold.producers
        self.last = None
        self.marked = None
        self.keys = set()

    def map(self, value: Any) -> Any:
        record = unwrap(value)[0]
        self.last = (record.key, record.seq)
        if self.counts and record.key not in self.keys:
            self.keys.add(record.key)
            self.hold.publish_key(record.key)
        return value

    def prepare_snapshot_pre_barrier(self, checkpoint_id: int) -> None:
        marked = self.marked
        if self.attempt == 0 and marked is not None and checkpoint_id > marked:
            # the next barrier may come before the completion of the marked one (they are
            # separate messages): fail before this subtask takes it, so it cannot complete
            self._fail(checkpoint_id, marked)
        due = self.counts and (self.attempt == 1 or (self.attempt == 0 and self._last_is_queued()))
        if due and self.hold.mark(self.attempt, checkpoint_id):
            self.marked = checkpoint_id

    def _last_is_queued(self) -> bool:
        """The held sink blocked, and this subtask's last record goes to it unprocessed."""
        blocked = self.hold.blocked(0)
        if blocked is None or self.last is None:
            return False
        key, seq = self.last
        start, stop = blocked["groups"]
        owned = start <= assign_to_key_group(key, blocked["max_parallelism"]) < stop
        return owned and seq > blocked["processed"].get(str(key), 0)

    def notify_checkpoint_complete(self, checkpoint_id: int) -> None:
        if self.attempt == 0 and checkpoint_id == self.marked:
            self._fail(checkpoint_id, checkpoint_id)

    @staticmethod
    def _fail(checkpoint_id: int, marked: int) -> None:
        raise InjectedFailure(
            f"RecoveryHold: checkpoint {checkpoint_id} reached after checkpoint {marked}, "
            f"marked while the sink was held: the job restores {marked}"
        )


class HeldVerifyingSink(VerifyingSink):
    """The oracle's sink, held on :class:`RecoveryHold`'s subtasks as its docstring says."""

    def __init__(self, hold: RecoveryHold, records_per_key: int, seq_order_kept: bool = False,
                 spin_s: float = 0.0, job_tag: int = 0,
                 evidence_dir: str | None = None) -> None:  # fmt: skip
        super().__init__(records_per_key, seq_order_kept, spin_s, job_tag, evidence_dir)
        self.hold = hold

    def open(self, runtime_context: RuntimeContext) -> None:
        super().open(runtime_context)
        self._attempt = runtime_context.get_attempt_number()
        self._held = runtime_context.get_index_of_this_subtask() in self.hold.subtasks
        self._processed_any = self._completed_after_records = False
        self._last_seq: dict[str, int] = {}
        if self._held and self._attempt == 1:
            self.hold.wait(1, self._index, {})

    def notify_checkpoint_complete(self, checkpoint_id: int) -> None:
        self._completed_after_records = self._processed_any

    def process_element(self, value: Any, ctx: KeyedProcessFunction.Context) -> None:
        record = unwrap(value)[0]
        seqs = self._last_seq
        seqs[str(record.key)] = max(seqs.get(str(record.key), 0), record.seq)
        blocks = self._attempt == 0 and str(record.key) in self.hold.producer_keys()
        # the record in hand counts as taken
        if self._held and blocks and self._completed_after_records and not self.hold.blocked(0):
            groups = [self._owned.start, self._owned.stop]
            published = {"groups": groups, "max_parallelism": self._max_parallelism,
                         "processed": seqs}  # fmt: skip
            self.hold.wait(0, self._index, published)
        super().process_element(value, ctx)
        self._processed_any = True
