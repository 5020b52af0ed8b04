"""The exactly-once oracle of docs/testing.md, shipped to users: generator, checks, faults, verdict.

The six counts: ``lost`` (seqs never seen), ``duplicated`` (seqs seen again),
``out_of_order`` (per-key inversions where the topology keeps order), ``corrupt`` (records that
failed a magic/payload check at any stage), ``state_mismatch`` (a stateful output that is not
the fold of the key's inputs so far) and ``keygroup_mismatch`` (a record processed by a subtask
that does not own its key group). Definitions: docs/testing.md, and the design notes of
:mod:`undertow.testing._oracle_functions`.

Until transactional sinks exist, "committed sink output" is the verifying sink's checkpointed
state as of the attempt that finished: it reports once, at the end of input, through
accumulators.

The longer story: docs/design.md, "Module notes", under this module's name.
"""

from __future__ import annotations

import os
import random
from dataclasses import dataclass, field
from typing import Any

from undertow.common.watermark_strategy import WatermarkStrategy
from undertow.datastream.connectors.discard import DiscardingSink
from undertow.testing._faults import (
    SEED_ENV,
    FailingMap,
    FailingSnapshot,
    InjectedFailure,
    ScheduledCrash,
    WorkerKiller,
    kill_candidates,
    kill_worker_process,
    live_workers_of,
    no_restore,
    oracle_seed,
    worker_process_pids,
)
from undertow.testing._oracle_evidence import RUNS, other_runs_counts
from undertow.testing._oracle_functions import (
    ATTEMPT,
    CORRUPT_AT,
    FRESH_INCOMPLETE,
    PREFIX,
    PROCESSED,
    REPLAYED,
    REPLAYED_AFTER_LIVE,
    REPORTS,
    RESTORED_KEYS,
    KeyTally,
    OracleStatefulFunction,
    VerifyingMap,
    VerifyingSink,
    tally_record,
)
from undertow.testing._oracle_records import (
    DEFAULT_SIZES,
    FOLD_SEED,
    MAGIC,
    OracleOutput,
    OracleRecord,
    SizeClass,
    TracedRecord,
    expected_fold,
    fold_step,
    make_payload,
    make_record,
    oracle_key,
    payload_size,
    verify_record,
)
from undertow.testing._oracle_source import OracleSource, OracleSplit
from undertow.testing.overlap_hold import OverlapHold
from undertow.testing.restore_control import RestoreEvidenceMissing

__all__ = [
    "DEFAULT_SIZES",
    "FOLD_SEED",
    "MAGIC",
    "SEED_ENV",
    "FailingMap",
    "FailingSnapshot",
    "InjectedFailure",
    "KeyTally",
    "OracleOutput",
    "OracleRecord",
    "OracleResult",
    "OracleSource",
    "OracleSplit",
    "OracleStatefulFunction",
    "RestoreEvidenceMissing",
    "ScheduledCrash",
    "SizeClass",
    "TracedRecord",
    "VerifyingMap",
    "VerifyingSink",
    "WorkerKiller",
    "build_ordered_pipeline",
    "build_pipeline",
    "expected_fold",
    "fold_step",
    "kill_candidates",
    "kill_worker_process",
    "live_workers_of",
    "make_payload",
    "make_record",
    "no_restore",
    "oracle_key",
    "oracle_seed",
    "payload_size",
    "tally_record",
    "verify_record",
    "worker_process_pids",
]

COUNTS = ("lost", "duplicated", "out_of_order", "corrupt", "state_mismatch", "keygroup_mismatch")
"""The six counts that must all be 0."""


@dataclass(frozen=True)
class OracleResult:
    """The oracle's verdict on one run: the finishing attempt's accumulators, plus the anomalies
    every other attempt logged (with an evidence directory).

    ``lost`` is counted per key (``records_per_key`` minus the distinct seqs its report names;
    all of them for a key nobody reported), so a key reported twice cannot make up for a lost
    one; a key reported more than once, or by a subtask that does not own it, is a key-group
    mismatch. ``keys_seen`` must equal ``keys``."""

    keys: int
    records_per_key: int
    received: int
    distinct: int
    duplicated: int
    out_of_order: int
    corrupt: int
    state_mismatch: int
    keygroup_mismatch: int
    keys_seen: int
    #: Attempt number of the attempt that finished (= restarts), if the sink reported it.
    restarts: int | None = None
    #: Corrupt records per checking stage (diagnostics of the finishing attempt only).
    corrupt_at: dict[str, int] = field(default_factory=dict, hash=False)
    #: key -> the distinct seqs of each report of it (one per reporting subtask and timer)
    reports: dict[int, tuple[int, ...]] = field(default_factory=dict, hash=False)
    #: Seqs never seen of the keys that were seen.
    lost_in_seen_keys: int = 0
    #: Restore evidence of the finishing attempt: records each stage handled in it...
    processed: dict[str, int] = field(default_factory=dict, hash=False)
    #: ... keys whose sink tally it restored, records that came through restored channel
    #: state, and replayed records of a key that already had live data (also out_of_order).
    restored_keys: int = 0
    #: ... keys whose tally it started from nothing and that ended incomplete: their earlier
    #: seqs went by in an earlier attempt but their state did not come back...
    fresh_incomplete_keys: int = 0
    replayed: int = 0
    replayed_after_live: int = 0
    #: Anomalies logged by the attempts that did not finish (merged into :meth:`counts`), and
    #: how many checking subtasks of those attempts left any.
    other_attempts: dict[str, int] = field(default_factory=dict, hash=False)
    other_runs: int = 0

    @property
    def expected(self) -> int:
        """Records the source emits: ``keys * records_per_key``."""
        return self.keys * self.records_per_key

    @property
    def lost(self) -> int:
        """Seqs of ``1..records_per_key`` never seen, per key (unreported keys count whole)."""
        rpk = self.records_per_key
        return sum(rpk - min(max(max(self.reports.get(k, (0,))), 0), rpk) for k in range(self.keys))

    @property
    def replayed_in_any_attempt(self) -> int:
        """Replayed records of the finishing attempt and of the others (from the evidence)."""
        return self.replayed + self.other_attempts.get("replayed", 0)

    @property
    def reported_twice(self) -> int:
        """Reports beyond one per key."""
        return sum(len(r) - 1 for r in self.reports.values() if r)

    def counts(self) -> dict[str, int]:
        """The six counts, in the order of docs/testing.md, other attempts' anomalies added."""
        return {
            name: int(getattr(self, name)) + self.other_attempts.get(name, 0) for name in COUNTS
        }

    @property
    def is_exactly_once(self) -> bool:
        return not any(self.counts().values()) and self.keys_seen == self.keys

    def assert_exactly_once(self) -> None:
        """Raise ``AssertionError`` listing every count unless all six are 0 and every key was
        seen."""
        if not self.is_exactly_once:
            raise AssertionError(f"oracle: not exactly-once: {self}")

    def assert_restored(self, replayed: bool = False) -> None:
        """Raise :class:`RestoreEvidenceMissing` unless the finishing attempt shows a restore:
        its stage nearest the source (the one that handled fewest records) handled fewer than
        all (the source resumed), some sink tally was restored and no key that started without
        its tally ended incomplete (state carried over, all of it) and, with ``replayed``,
        records came through channel state."""
        stage, handled = min(self.processed.items(), key=lambda item: item[1], default=("", 0))
        problems = []
        if not 0 < handled < self.expected:
            problems.append(f"{stage or 'no stage'} handled {handled} of {self.expected} "
                            f"records in the finishing attempt (a resumed source sends "
                            f"fewer)")  # fmt: skip
        if self.restored_keys < 1:
            problems.append("no sink tally was restored (state not carried over)")
        if self.fresh_incomplete_keys:
            problems.append(f"{self.fresh_incomplete_keys} keys started without their tally "
                            "and ended incomplete (their state was not carried over)")  # fmt: skip
        if replayed and self.replayed < 1:
            problems.append("no record was replayed from restored channel state")
        if problems:
            problems.append(str(self))
            raise RestoreEvidenceMissing(f"oracle: no evidence of a restore: {'; '.join(problems)}")

    def __str__(self) -> str:
        counts = ", ".join(f"{name}={value}" for name, value in self.counts().items())
        where = f", corrupt at {self.corrupt_at}" if self.corrupt_at else ""
        others = (f", other attempts {self.other_attempts} from {self.other_runs} subtasks"
                  if self.other_runs else "")  # fmt: skip
        return (
            f"{counts} (received {self.received} of {self.expected} records, "
            f"{self.distinct} distinct, keys seen {self.keys_seen} of {self.keys}, lost in "
            f"seen keys {self.lost_in_seen_keys}, reported twice {self.reported_twice}, "
            f"restarts {self.restarts}{where}; finishing attempt: processed {self.processed}, "
            f"restored keys {self.restored_keys}, replayed {self.replayed} "
            f"({self.replayed_after_live} after live data){others})"
        )

    @classmethod
    def from_accumulators(
        cls,
        accumulators: dict[str, Any],
        keys: int,
        records_per_key: int,
        evidence_dir: str | os.PathLike[str] | None = None,
    ) -> OracleResult:
        """The verdict from a job's accumulators (missing ones count as 0: if the sink never
        reported, everything is lost) and, with ``evidence_dir``, the other attempts' logs."""

        def get(name: str) -> int:
            return int(accumulators.get(PREFIX + name) or 0)

        def with_prefix(prefix: str) -> dict[str, Any]:
            return {n[len(prefix) :]: v for n, v in accumulators.items() if n.startswith(prefix)}

        attempt = accumulators.get(ATTEMPT)
        reports: dict[int, tuple[int, ...]] = {}
        for name, value in with_prefix(REPORTS).items():
            reports[int(name)] = tuple(int(distinct) for _, distinct in value)
        reported_twice = sum(len(r) - 1 for r in reports.values())
        stray = sum(len(r) for k, r in reports.items() if not 0 <= k < keys)
        other, other_runs = other_runs_counts(evidence_dir, accumulators.get(RUNS, ()))
        return cls(
            keys=keys,
            records_per_key=records_per_key,
            received=get("received"),
            distinct=get("distinct"),
            duplicated=get("duplicated"),
            out_of_order=get("out_of_order") + int(accumulators.get(REPLAYED_AFTER_LIVE) or 0),
            corrupt=get("corrupt") + stray,
            state_mismatch=get("state_mismatch"),
            keygroup_mismatch=get("keygroup_mismatch") + reported_twice,
            keys_seen=sum(1 for k in reports if 0 <= k < keys),
            restarts=None if attempt is None else int(attempt),
            corrupt_at={name: int(v) for name, v in with_prefix(CORRUPT_AT).items()},
            reports=reports,
            lost_in_seen_keys=sum(
                records_per_key - max(r) for k, r in reports.items() if 0 <= k < keys
            ),
            processed={name: int(v) for name, v in with_prefix(PROCESSED).items()},
            restored_keys=int(accumulators.get(RESTORED_KEYS) or 0),
            fresh_incomplete_keys=int(accumulators.get(FRESH_INCOMPLETE) or 0),
            replayed=int(accumulators.get(REPLAYED) or 0),
            replayed_after_live=int(accumulators.get(REPLAYED_AFTER_LIVE) or 0),
            other_attempts=other,
            other_runs=other_runs,
        )

    @classmethod
    def from_job_result(
        cls,
        result: Any,
        keys: int,
        records_per_key: int,
        evidence_dir: str | os.PathLike[str] | None = None,
    ) -> OracleResult:
        """The verdict from ``env.execute(...)``'s ``JobExecutionResult``."""
        return cls.from_accumulators(
            result.get_all_accumulator_results(), keys, records_per_key, evidence_dir
        )


def build_pipeline(
    env: Any,
    source: OracleSource,
    *,
    parallelism: int | None = None,
    failing_map: FailingMap | None = None,
    failing_snapshot: FailingSnapshot | None = None,
    sink_spin_s: float = 0.0,
    evidence_dir: str | os.PathLike[str] | None = None,
    overlap_hold: OverlapHold | None = None,
) -> Any:
    """Declare the PIPELINE topology (docs/testing.md) on ``env``; returns the final
    ``DataStreamSink``.

    With ``p = parallelism`` (default: the environment's)::

        source (p) -> rebalance -> verify [-> failing map] (p+1) -> shuffle -> verify (2p)
          -> key_by -> stateful op (p+1) -> key_by -> verifying sink (p)

    so the records cross rebalance, shuffle and hash exchanges, up- and downscaling, and the
    chained (forward) ones. ``sink_spin_s`` makes the verifying sink busy-wait that long per
    record (backpressure through the whole pipeline). Every operator has a ``uid``
    (``oracle-...``) so checkpoints map back to it. Rebalance and shuffle do not keep per-key
    order: the sink checks order only between the stateful operator and itself.
    ``evidence_dir``: where the checking stages log anomalies as they happen (pass it to
    :meth:`OracleResult.from_job_result` too, so failed attempts' evidence counts).
    ``overlap_hold``: a branch after the sink (rescale, ``2p + 1`` subtasks, one input channel
    each) whose last subtask holds checkpoints (:mod:`undertow.testing.overlap_hold`; run the
    job with ``undertow.workers`` ``2p + 1``, so that this subtask has a worker of its own).
    """
    p = parallelism or env.get_parallelism()
    tag = _job_tag()
    where = None if evidence_dir is None else str(evidence_dir)
    stream = env.from_source(source, WatermarkStrategy.no_watermarks(), "oracle")
    stream = stream.uid("oracle-source").set_parallelism(p)
    checked = stream.rebalance().map(VerifyingMap("after-rebalance", tag, where))
    checked = checked.name("verify after rebalance").uid("oracle-verify-rebalance")
    checked = checked.set_parallelism(p + 1)
    if failing_map is not None:
        checked = checked.map(failing_map).name("failing map").uid("oracle-failing-map")
        checked = checked.set_parallelism(p + 1)
    shuffled = checked.shuffle().map(VerifyingMap("after-shuffle", tag, where))
    shuffled = shuffled.name("verify after shuffle").uid("oracle-verify-shuffle")
    shuffled = shuffled.set_parallelism(2 * p)
    stateful = shuffled.key_by(oracle_key).process(
        OracleStatefulFunction(failing_snapshot, tag, where)
    )
    stateful = stateful.name("oracle stateful").uid("oracle-stateful").set_parallelism(p + 1)
    verified = stateful.key_by(oracle_key).process(
        VerifyingSink(source.records_per_key, spin_s=sink_spin_s, job_tag=tag, evidence_dir=where)
    )
    verified = verified.name("verifying sink").uid("oracle-verifying-sink").set_parallelism(p)
    if overlap_hold is not None:  # its last subtask alone in slot 2p (see its module)
        held = verified.rescale().map(overlap_hold.function()).name("overlap hold")
        held = held.uid("oracle-overlap-hold").set_parallelism(2 * p + 1)
        held = held.sink_to(DiscardingSink()).name("discard held").uid("oracle-discard-held")
        held.set_parallelism(2 * p + 1)
    return (
        verified.sink_to(DiscardingSink()).name("discard").uid("oracle-discard").set_parallelism(p)
    )


def build_ordered_pipeline(
    env: Any,
    source: OracleSource,
    *,
    parallelism: int | None = None,
    failing_map: FailingMap | None = None,
    evidence_dir: str | os.PathLike[str] | None = None,
) -> Any:
    """An ORDERED topology, where every exchange keeps each key's order, so the sink also
    checks that each key's seqs arrive in order (``seq_order_kept``)::

        source (p) -> key_by -> stateful op [-> failing map] (p+1) -> key_by -> sink (p)
    """
    p = parallelism or env.get_parallelism()
    tag = _job_tag()
    where = None if evidence_dir is None else str(evidence_dir)
    stream = env.from_source(source, WatermarkStrategy.no_watermarks(), "oracle")
    stream = stream.uid("oracle-source").set_parallelism(p)
    stateful = stream.key_by(oracle_key).process(OracleStatefulFunction(None, tag, where))
    stateful = stateful.name("oracle stateful").uid("oracle-stateful").set_parallelism(p + 1)
    if failing_map is not None:
        stateful = stateful.map(failing_map).name("failing map").uid("oracle-failing-map")
        stateful = stateful.set_parallelism(p + 1)
    verified = stateful.key_by(oracle_key).process(
        VerifyingSink(source.records_per_key, seq_order_kept=True, job_tag=tag, evidence_dir=where)
    )
    verified = verified.name("verifying sink").uid("oracle-verifying-sink").set_parallelism(p)
    return (
        verified.sink_to(DiscardingSink()).name("discard").uid("oracle-discard").set_parallelism(p)
    )


def _job_tag() -> int:
    """A job's random tag (see :func:`~undertow.testing._oracle_records.epoch_of`)."""
    return random.SystemRandom().randrange(1, 2**40)
