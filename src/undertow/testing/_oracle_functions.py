"""The oracle's checking stages: a verifying map, the stateful operator and the verifying sink.

Threading: each function instance runs on its subtask's loop thread only.

The longer story: docs/design.md, "Module notes", under this module's name.
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
from undertow.testing._oracle_evidence import EvidenceLog, publish_run
from undertow.testing._oracle_records import (
    FOLD_SEED,
    OracleOutput,
    TracedRecord,
    epoch_of,
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
PROCESSED = PREFIX + "processed."
REPORTS = PREFIX + "reports."
RESTORED_KEYS = PREFIX + "restored_keys"
#: Keys whose tally started empty in this attempt and ended incomplete (state not carried over)
FRESH_INCOMPLETE = PREFIX + "fresh_incomplete_keys"
REPLAYED = PREFIX + "replayed"
REPLAYED_AFTER_LIVE = PREFIX + "replayed_after_live"


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


class _Checker:
    """What every checking stage keeps per subtask and attempt: its epoch, run, accumulators,
    evidence log and which keys had live (this epoch's) data."""

    def __init__(self, runtime_context: RuntimeContext, stage: str, job_tag: int,
                 evidence_dir: str | None) -> None:  # fmt: skip
        attempt = runtime_context.get_attempt_number()
        subtask = runtime_context.get_index_of_this_subtask()
        self.stage = stage
        self.epoch = epoch_of(job_tag, attempt)
        self.run = random.SystemRandom().randrange(1, 2**63)
        self.accumulators: dict[str, Any] = runtime_context.get_metrics_group()
        self.evidence = EvidenceLog(evidence_dir, stage, subtask, attempt, self.run)
        self.live_keys: set[Any] = set()
        publish_run(self.accumulators, self.run)

    def processed(self) -> None:
        _count_in(self.accumulators, PROCESSED + self.stage)

    def corrupt(self) -> None:
        _count_in(self.accumulators, CORRUPT_AT + self.stage)
        self.evidence.record({"corrupt": 1})

    def replayed(self) -> None:
        """A record of an earlier epoch arrived (logged too: a failed attempt's replay is
        the evidence of a restore it did, e.g. the first attempt after a rescale)."""
        _count_in(self.accumulators, REPLAYED)
        self.evidence.record({"replayed": 1})

    def arrived(self, epoch: int, key: Any, key_order_kept: bool) -> None:
        """A record of ``key`` from ``epoch`` arrived (epoch 0: not traced). Replay after
        live data is checked only where the key arrives through one channel
        (``key_order_kept``): restored data comes first per channel, not across channels."""
        if epoch == 0 or epoch == self.epoch:
            self.live_keys.add(key)
            return
        self.replayed()
        if key_order_kept and key in self.live_keys:
            _count_in(self.accumulators, REPLAYED_AFTER_LIVE)
            self.evidence.record({"out_of_order": 1})


class VerifyingMap(MapFunction):
    """Checks each record's magic and payload; passes it on as a :class:`TracedRecord`.

    ``stage`` names this check in ``corrupt_at`` (and in the ``oracle.corrupt_at.<stage>``
    accumulator of the attempt that finishes)."""

    def __init__(self, stage: str, job_tag: int = 0, evidence_dir: str | None = None) -> None:
        self.stage = stage
        self.job_tag = job_tag
        self.evidence_dir = evidence_dir

    def open(self, runtime_context: RuntimeContext) -> None:
        self._checker = _Checker(runtime_context, self.stage, self.job_tag, self.evidence_dir)

    def map(self, value: Any) -> TracedRecord:
        record, corrupt_at, _ = unwrap(value)
        checker = self._checker
        checker.processed()
        if type(value) is TracedRecord and value.epoch not in (0, checker.epoch):
            checker.replayed()
        if not verify_record(record):
            corrupt_at = (*corrupt_at, self.stage)
            checker.corrupt()
        return TracedRecord(record, corrupt_at, checker.epoch)


class OracleStatefulFunction(KeyedProcessFunction):
    """The stateful operator under test: per-key ValueState ``(inputs, fold)`` over seqs.

    Emits one :class:`OracleOutput` per input, with the state after it; checks the record.
    ``failing_snapshot`` (optional) is a :class:`~undertow.testing.oracle.FailingSnapshot`
    this function hosts: its trap lives in this operator's keyed state, so this operator's
    snapshot fails when it is due."""

    STAGE = "stateful"

    def __init__(self, failing_snapshot: FailingSnapshot | None = None, job_tag: int = 0,
                 evidence_dir: str | None = None) -> None:  # fmt: skip
        self.failing_snapshot = failing_snapshot
        self.job_tag = job_tag
        self.evidence_dir = evidence_dir

    def open(self, runtime_context: RuntimeContext) -> None:
        self._state = runtime_context.get_state(ValueStateDescriptor("oracle-inputs-fold"))
        self._checker = _Checker(runtime_context, self.STAGE, self.job_tag, self.evidence_dir)
        self._attempt = runtime_context.get_attempt_number()
        self._emitted = 0
        self._run = self._checker.run  # see OracleOutput.run
        self._subtask = runtime_context.get_index_of_this_subtask()
        self._parallelism = runtime_context.get_number_of_parallel_subtasks()
        self._max_parallelism = runtime_context.get_max_number_of_parallel_subtasks()
        if self.failing_snapshot is not None:
            self.failing_snapshot.open(runtime_context)

    def notify_checkpoint_complete(self, checkpoint_id: int) -> None:
        if self.failing_snapshot is not None:
            self.failing_snapshot.notify_checkpoint_complete(checkpoint_id)

    def process_element(self, value: Any, ctx: KeyedProcessFunction.Context) -> Iterable[Any]:
        record, corrupt_at, _ = unwrap(value)
        checker = self._checker
        checker.processed()
        epoch = value.epoch if type(value) is TracedRecord else 0
        checker.arrived(epoch, oracle_key(record), key_order_kept=False)
        if not verify_record(record):
            corrupt_at = (*corrupt_at, self.STAGE)
            checker.corrupt()
        seq = _seq_of(record)
        inputs, fold = self._state.value() or (0, FOLD_SEED)
        inputs, fold = inputs + 1, fold_step(fold, seq)
        self._state.update((inputs, fold))
        if self.failing_snapshot is not None:
            self.failing_snapshot.map(value)
        self._emitted += 1
        return (
            OracleOutput(record, corrupt_at, inputs, fold, self._subtask, self._parallelism,
                         self._max_parallelism, self._attempt, self._emitted, self._run,
                         checker.epoch),
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

    STAGE = "sink"
    _ANOMALIES = ("duplicated", "out_of_order", "corrupt", "state_mismatch", "keygroup_mismatch")

    def __init__(
        self,
        records_per_key: int,
        seq_order_kept: bool = False,
        spin_s: float = 0.0,
        job_tag: int = 0,
        evidence_dir: str | None = None,
    ) -> None:
        if records_per_key < 1:
            raise ValueError(f"records_per_key must be >= 1, got {records_per_key}")
        self.records_per_key = records_per_key
        self.seq_order_kept = seq_order_kept
        #: Busy-wait this long per record: a slow sink, to force backpressure (docs/testing.md).
        self.spin_s = spin_s
        self.job_tag = job_tag
        self.evidence_dir = evidence_dir

    def open(self, runtime_context: RuntimeContext) -> None:
        self._state = runtime_context.get_state(ValueStateDescriptor("oracle-tally"))
        self._checker = _Checker(runtime_context, self.STAGE, self.job_tag, self.evidence_dir)
        self._accumulators = self._checker.accumulators
        index = runtime_context.get_index_of_this_subtask()
        max_parallelism = runtime_context.get_max_number_of_parallel_subtasks()
        self._owned = key_group_range_for_subtask(
            max_parallelism, runtime_context.get_number_of_parallel_subtasks(), index
        )
        self._max_parallelism = max_parallelism
        self._index = index
        self._touched: set[Any] = set()
        self._fresh: set[Any] = set()  # keys whose tally this attempt started from nothing
        if index == 0:
            self._accumulators[ATTEMPT] = runtime_context.get_attempt_number()

    def process_element(self, value: Any, ctx: KeyedProcessFunction.Context) -> None:
        if self.spin_s > 0:
            until = time.perf_counter() + self.spin_s
            while time.perf_counter() < until:
                pass
        checker = self._checker
        checker.processed()
        key = ctx.get_current_key()
        # an epoch other than this stage's: replayed from channel state (a stateful output,
        # or a verifying map's record fed to the sink directly; its key's order is known to
        # hold across the exchange only for outputs, or where the topology says so)
        traced = type(value) is OracleOutput or type(value) is TracedRecord
        order_kept = type(value) is OracleOutput or self.seq_order_kept
        checker.arrived(value.epoch if traced else 0, key, order_kept)
        tally = self._state.value()
        if key not in self._touched:
            self._touched.add(key)
            if tally is not None:
                _count_in(self._accumulators, RESTORED_KEYS)  # state carried over
            else:
                self._fresh.add(key)
        if tally is None:
            tally = KeyTally()
        # Per record, not only on a key's first: a job resumed from a savepoint of a stop with
        # drain restores tallies whose end-of-time timers already fired (a set: one timer).
        ctx.timer_service().register_event_time_timer(MAX_WATERMARK)
        owns = assign_to_key_group(key, self._max_parallelism) in self._owned
        after = tally_record(tally, value, self.records_per_key, self.seq_order_kept, owns)
        checker.evidence.record(
            {name: getattr(after, name) - getattr(tally, name) for name in self._ANOMALIES}
        )
        self._state.update(after)

    def on_timer(self, timestamp: int, ctx: KeyedProcessFunction.OnTimerContext) -> None:
        """End of input: add this key's tally to the accumulators, and report the key (checked
        now too: a key whose state this subtask holds without owning its key group, e.g.
        restored to the wrong subtask, is a key-group mismatch)."""
        tally = self._state.value()
        if tally is None:
            return
        key = ctx.get_current_key()
        accumulators = self._accumulators
        for name in TALLY_COUNTS:
            _count_in(accumulators, PREFIX + name, getattr(tally, name))
        if assign_to_key_group(key, self._max_parallelism) not in self._owned:
            _count_in(accumulators, PREFIX + "keygroup_mismatch")
        _count_in(accumulators, LOST_IN_SEEN_KEYS, self.records_per_key - tally.distinct)
        if key in self._fresh and tally.distinct < self.records_per_key:
            # its earlier seqs went by in an earlier attempt, but its tally did not come back
            _count_in(accumulators, FRESH_INCOMPLETE)
        _count_in(accumulators, KEYS_SEEN)
        name = f"{REPORTS}{key}"
        accumulators[name] = (*accumulators.get(name, ()), (self._index, tally.distinct))
