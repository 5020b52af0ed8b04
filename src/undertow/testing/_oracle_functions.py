"""The oracle's checking stages: a verifying map, the stateful operator and the verifying sink.

* :class:`VerifyingMap` (any stream): checks every record (:func:`verify_record`) and passes it
  on as a :class:`TracedRecord` that names the stages which found it corrupt.
* :class:`OracleStatefulFunction` (keyed by :func:`oracle_key`): per key, a ValueState
  ``(inputs, fold)``; emits an :class:`OracleOutput` per input with the state after it and
  the subtask that processed it. It checks the record too.
* :class:`VerifyingSink` (keyed by :func:`oracle_key`): per key, a checkpointed ValueState
  :class:`KeyTally` of what it received. At the end of input (an event-time timer at the end
  of time, registered with every record, which fires when the final watermark arrives; also
  after a restore from a drained savepoint, whose timers fired) it adds each key's tally to the
  accumulators (``runtime_context.get_metrics_group()``), which the JobMaster sums over
  subtasks into ``JobExecutionResult.get_accumulator_result``. Only the attempt that finishes
  reports, and its state is the restored state plus what it processed: exactly what a
  read-committed reader of a transactional sink would see.

What the sink counts, per key (the six counts of TESTING.md):

* ``duplicated``: a seq seen before; ``distinct``: seqs in ``1..records_per_key`` seen
  (``lost = records_per_key - distinct``, summed over all keys by :class:`OracleResult`);
* ``out_of_order``: per-key inversions where the topology keeps order. Between the stateful
  operator and the sink it does (one keyed channel per key): an output emitted by the same
  operator subtask, attempt and run (:attr:`OracleOutput.run`) *before* one the sink already
  received. Seq order is only checked with ``seq_order_kept=True`` (rebalance and shuffle
  upstream do not keep it);
* ``corrupt``: records a stage (verifying maps, the stateful operator, the sink) found corrupt,
  or whose seq is outside ``1..records_per_key``;
* ``state_mismatch``: an (in-order) output of the stateful operator whose ``(inputs, fold)``
  is not the previous output's plus this record: a state update applied twice or lost, or
  state not rolled back together with its inputs (such as state missing after a restore).
  The sink then follows the operator's new values, so one wrong state counts once;
* ``keygroup_mismatch``: the stateful operator's subtask, or the sink's own, does not own the
  key's key group.

Threading: each function instance runs on its subtask's loop thread only.
"""

from __future__ import annotations

import random
import time
from collections.abc import Iterable
from typing import Any, NamedTuple

from undertow.api.functions import KeyedProcessFunction, MapFunction, RuntimeContext
from undertow.core.types import MAX_WATERMARK
from undertow.state.descriptors import ValueStateDescriptor
from undertow.state.key_groups import assign_to_key_group, key_group_range_for_subtask
from undertow.testing._faults import FailingSnapshot
from undertow.testing._oracle_records import (
    FOLD_SEED,
    OracleOutput,
    TracedRecord,
    fold_step,
    oracle_key,
    unwrap,
    verify_record,
)

PREFIX = "oracle."
"""Prefix of every accumulator the oracle publishes."""

#: Tally fields the sink adds to accumulators (``oracle.<name>``), besides ``lost`` and keys.
TALLY_COUNTS = (
    "received",
    "distinct",
    "duplicated",
    "out_of_order",
    "corrupt",
    "state_mismatch",
    "keygroup_mismatch",
)
ATTEMPT = PREFIX + "attempt"
KEYS_SEEN = PREFIX + "keys_seen"
LOST_IN_SEEN_KEYS = PREFIX + "lost_in_seen_keys"
CORRUPT_AT = PREFIX + "corrupt_at."


def _owns(max_parallelism: int, parallelism: int, subtask: int, key: Any) -> bool:
    """Whether subtask ``subtask`` of ``parallelism`` owns ``key``'s key group (False for
    impossible parallelisms, which a corrupt output might carry)."""
    try:
        owned = key_group_range_for_subtask(max_parallelism, parallelism, subtask)
    except (ValueError, TypeError, ZeroDivisionError):
        return False
    return assign_to_key_group(key, max_parallelism) in owned


def _count_in(accumulators: dict[str, Any], name: str, amount: int = 1) -> None:
    accumulators[name] = accumulators.get(name, 0) + amount


class VerifyingMap(MapFunction):
    """Checks each record's magic and payload; passes it on as a :class:`TracedRecord`.

    ``stage`` names this check in ``corrupt_at`` (and in the ``oracle.corrupt_at.<stage>``
    accumulator of the attempt that finishes)."""

    def __init__(self, stage: str) -> None:
        self.stage = stage
        self._accumulators: dict[str, Any] = {}

    def open(self, runtime_context: RuntimeContext) -> None:
        self._accumulators = runtime_context.get_metrics_group()

    def map(self, value: Any) -> TracedRecord:
        record, corrupt_at, _ = unwrap(value)
        if not verify_record(record):
            corrupt_at = (*corrupt_at, self.stage)
            _count_in(self._accumulators, CORRUPT_AT + self.stage)
        return TracedRecord(record, corrupt_at)


class OracleStatefulFunction(KeyedProcessFunction):
    """The stateful operator under test: per-key ValueState ``(inputs, fold)`` over seqs.

    Emits one :class:`OracleOutput` per input, with the state after it; checks the record.
    ``failing_snapshot`` (optional) is a :class:`~undertow.testing.oracle.FailingSnapshot`
    this function hosts: its trap lives in this operator's keyed state, so this operator's
    snapshot fails when it is due."""

    STAGE = "stateful"

    def __init__(self, failing_snapshot: FailingSnapshot | None = None) -> None:
        self.failing_snapshot = failing_snapshot
        self._accumulators: dict[str, Any] = {}

    def open(self, runtime_context: RuntimeContext) -> None:
        self._state = runtime_context.get_state(ValueStateDescriptor("oracle-inputs-fold"))
        self._attempt = runtime_context.get_attempt_number()
        self._emitted = 0
        self._run = random.SystemRandom().randrange(1, 2**63)  # see OracleOutput.run
        self._subtask = runtime_context.get_index_of_this_subtask()
        self._parallelism = runtime_context.get_number_of_parallel_subtasks()
        self._max_parallelism = runtime_context.get_max_number_of_parallel_subtasks()
        self._accumulators = runtime_context.get_metrics_group()
        if self.failing_snapshot is not None:
            self.failing_snapshot.open(runtime_context)

    def notify_checkpoint_complete(self, checkpoint_id: int) -> None:
        if self.failing_snapshot is not None:
            self.failing_snapshot.notify_checkpoint_complete(checkpoint_id)

    def process_element(self, value: Any, ctx: KeyedProcessFunction.Context) -> Iterable[Any]:
        record, corrupt_at, _ = unwrap(value)
        if not verify_record(record):
            corrupt_at = (*corrupt_at, self.STAGE)
            _count_in(self._accumulators, CORRUPT_AT + self.STAGE)
        seq = _seq_of(record)
        inputs, fold = self._state.value() or (0, FOLD_SEED)
        inputs, fold = inputs + 1, fold_step(fold, seq)
        self._state.update((inputs, fold))
        if self.failing_snapshot is not None:
            self.failing_snapshot.map(value)
        self._emitted += 1
        return (
            OracleOutput(record, corrupt_at, inputs, fold, self._subtask, self._parallelism,
                         self._max_parallelism, self._attempt, self._emitted, self._run),
        )  # fmt: skip


def _seq_of(record: Any) -> int:
    """The record's seq, or 0 if it has no int seq (a corrupt record)."""
    try:
        seq = record[2]
    except (TypeError, IndexError):
        return 0
    return seq if type(seq) is int else 0


class KeyTally(NamedTuple):
    """What the verifying sink knows of one key (its checkpointed ValueState)."""

    seen: int = 0  # bit s set: seq s arrived
    received: int = 0
    distinct: int = 0
    duplicated: int = 0
    out_of_order: int = 0
    corrupt: int = 0
    state_mismatch: int = 0
    keygroup_mismatch: int = 0
    last_seq: int = 0
    #: the last in-order stateful output: its state, and who emitted it when
    last_inputs: int = 0
    last_fold: int = FOLD_SEED
    last_origin: tuple[int, int, int] = (-1, -1, -1)  # (subtask, attempt, run)
    last_emitted: int = 0


def tally_record(
    tally: KeyTally, value: Any, records_per_key: int, seq_order_kept: bool, sink_owns_key: bool
) -> KeyTally:
    """The key's tally after one more received value (a pure function; see the module doc)."""
    record, corrupt_at, output = unwrap(value)
    t = tally._asdict()
    t["received"] += 1
    seq = _seq_of(record)
    in_range = 1 <= seq <= records_per_key
    if corrupt_at or not verify_record(record) or not in_range:
        t["corrupt"] += 1
    if in_range:
        if tally.seen >> seq & 1:
            t["duplicated"] += 1
        else:
            t["seen"] |= 1 << seq
            t["distinct"] += 1
        if seq_order_kept and seq < tally.last_seq:
            t["out_of_order"] += 1
        t["last_seq"] = max(tally.last_seq, seq)
    if output is not None:
        origin = (output.subtask, output.attempt, output.run)
        if origin == tally.last_origin and output.emitted <= tally.last_emitted:
            t["out_of_order"] += 1  # stale: emitted before an output already received
        else:
            if (output.inputs, output.fold) != (
                tally.last_inputs + 1,
                fold_step(tally.last_fold, seq),
            ):
                t["state_mismatch"] += 1
            t["last_inputs"], t["last_fold"] = output.inputs, output.fold
            t["last_origin"], t["last_emitted"] = origin, output.emitted
        if not _owns(output.max_parallelism, output.parallelism, output.subtask,
                     oracle_key(record)):  # fmt: skip
            t["keygroup_mismatch"] += 1
    if not sink_owns_key:
        t["keygroup_mismatch"] += 1
    return KeyTally(**t)


class VerifyingSink(KeyedProcessFunction):
    """The oracle's sink (keyed by :func:`oracle_key`; emits nothing). See the module doc.

    Takes :class:`OracleRecord`, :class:`TracedRecord` or :class:`OracleOutput` values.
    Subtask 0 also publishes its attempt number as ``oracle.attempt``: the number of restarts
    the job went through before the attempt that finished."""

    def __init__(
        self, records_per_key: int, seq_order_kept: bool = False, spin_s: float = 0.0
    ) -> None:
        if records_per_key < 1:
            raise ValueError(f"records_per_key must be >= 1, got {records_per_key}")
        self.records_per_key = records_per_key
        self.seq_order_kept = seq_order_kept
        #: Busy-wait this long per record: a slow sink, to force backpressure (TESTING.md).
        self.spin_s = spin_s
        self._accumulators: dict[str, Any] = {}

    def open(self, runtime_context: RuntimeContext) -> None:
        self._state = runtime_context.get_state(ValueStateDescriptor("oracle-tally"))
        self._accumulators = runtime_context.get_metrics_group()
        index = runtime_context.get_index_of_this_subtask()
        max_parallelism = runtime_context.get_max_number_of_parallel_subtasks()
        self._owned = key_group_range_for_subtask(
            max_parallelism, runtime_context.get_number_of_parallel_subtasks(), index
        )
        self._max_parallelism = max_parallelism
        if index == 0:
            self._accumulators[ATTEMPT] = runtime_context.get_attempt_number()

    def process_element(self, value: Any, ctx: KeyedProcessFunction.Context) -> None:
        if self.spin_s > 0:
            until = time.perf_counter() + self.spin_s
            while time.perf_counter() < until:
                pass
        tally = self._state.value()
        if tally is None:
            tally = KeyTally()
        # Per record, not only on a key's first: a job resumed from a savepoint of a stop with
        # drain restores tallies whose end-of-time timers already fired (a set: one timer).
        ctx.timer_service().register_event_time_timer(MAX_WATERMARK)
        key = ctx.get_current_key()
        owns = assign_to_key_group(key, self._max_parallelism) in self._owned
        self._state.update(
            tally_record(tally, value, self.records_per_key, self.seq_order_kept, owns)
        )

    def on_timer(self, timestamp: int, ctx: KeyedProcessFunction.OnTimerContext) -> None:
        """End of input: add this key's tally to the accumulators."""
        tally = self._state.value()
        if tally is None:
            return
        accumulators = self._accumulators
        for name in TALLY_COUNTS:
            _count_in(accumulators, PREFIX + name, getattr(tally, name))
        _count_in(accumulators, LOST_IN_SEEN_KEYS, self.records_per_key - tally.distinct)
        _count_in(accumulators, KEYS_SEEN)
