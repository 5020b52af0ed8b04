"""The exactly-once oracle of TESTING.md, shipped to users: generator, checks, faults, verdict.

A known input (:class:`OracleSource`: key ``k`` emits ``seq = 1..N`` with self-checking
payloads), checks at several operators (:class:`VerifyingMap`, :class:`OracleStatefulFunction`,
:class:`VerifyingSink`), injected faults (:class:`FailingMap`, :class:`FailingSnapshot`,
:func:`kill_worker_process`) and a verdict over six counts that must all be 0
(:class:`OracleResult`)::

    source = OracleSource(keys=20, records_per_key=2000, records_per_second=4000)
    build_pipeline(env, source, failing_map=FailingMap([2, 5]))
    result = OracleResult.from_job_result(env.execute("oracle"), source.keys,
                                          source.records_per_key)
    result.assert_exactly_once()
    assert result.restarts == 2

The six counts: ``lost`` (seqs never seen), ``duplicated`` (seqs seen again),
``out_of_order`` (per-key inversions where the topology keeps order), ``corrupt`` (records that
failed a magic/payload check at any stage), ``state_mismatch`` (a stateful output that is not
the fold of the key's inputs so far) and ``keygroup_mismatch`` (a record processed by a subtask
that does not own its key group). Definitions are in :mod:`undertow.testing._oracle_functions`.

Until transactional sinks exist, "committed sink output" is the verifying sink's checkpointed
state as of the attempt that finished: it reports once, at the end of input, through
accumulators.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from undertow.common.watermark_strategy import WatermarkStrategy
from undertow.datastream.connectors.discard import DiscardingSink
from undertow.testing._faults import (
    SEED_ENV,
    FailingMap,
    FailingSnapshot,
    InjectedFailure,
    WorkerKiller,
    kill_worker_process,
    oracle_seed,
    worker_process_pids,
)
from undertow.testing._oracle_functions import (
    ATTEMPT,
    CORRUPT_AT,
    KEYS_SEEN,
    PREFIX,
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
    "SizeClass",
    "TracedRecord",
    "VerifyingMap",
    "VerifyingSink",
    "WorkerKiller",
    "build_pipeline",
    "expected_fold",
    "fold_step",
    "kill_worker_process",
    "make_payload",
    "make_record",
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
    """The oracle's verdict on one run (read from the verifying sink's accumulators)."""

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

    @property
    def expected(self) -> int:
        """Records the source emits: ``keys * records_per_key``."""
        return self.keys * self.records_per_key

    @property
    def lost(self) -> int:
        """Seqs of ``1..records_per_key`` never seen, over all keys (unseen keys included)."""
        return self.expected - self.distinct

    def counts(self) -> dict[str, int]:
        """The six counts, in TESTING.md's order."""
        return {name: int(getattr(self, name)) for name in COUNTS}

    @property
    def is_exactly_once(self) -> bool:
        return not any(self.counts().values())

    def assert_exactly_once(self) -> None:
        """Raise ``AssertionError`` listing every count unless all six are 0."""
        if not self.is_exactly_once:
            raise AssertionError(f"oracle: not exactly-once: {self}")

    def __str__(self) -> str:
        counts = ", ".join(f"{name}={value}" for name, value in self.counts().items())
        where = f", corrupt at {self.corrupt_at}" if self.corrupt_at else ""
        return (
            f"{counts} (received {self.received} of {self.expected} records, "
            f"{self.distinct} distinct, keys seen {self.keys_seen} of {self.keys}, "
            f"restarts {self.restarts}{where})"
        )

    @classmethod
    def from_accumulators(
        cls, accumulators: dict[str, Any], keys: int, records_per_key: int
    ) -> OracleResult:
        """The verdict from a job's accumulators (missing ones count as 0: if the sink never
        reported, everything is lost)."""

        def get(name: str) -> int:
            return int(accumulators.get(PREFIX + name) or 0)

        attempt = accumulators.get(ATTEMPT)
        return cls(
            keys=keys,
            records_per_key=records_per_key,
            received=get("received"),
            distinct=get("distinct"),
            duplicated=get("duplicated"),
            out_of_order=get("out_of_order"),
            corrupt=get("corrupt"),
            state_mismatch=get("state_mismatch"),
            keygroup_mismatch=get("keygroup_mismatch"),
            keys_seen=int(accumulators.get(KEYS_SEEN) or 0),
            restarts=None if attempt is None else int(attempt),
            corrupt_at={
                name[len(CORRUPT_AT) :]: int(value)
                for name, value in accumulators.items()
                if name.startswith(CORRUPT_AT)
            },
        )

    @classmethod
    def from_job_result(cls, result: Any, keys: int, records_per_key: int) -> OracleResult:
        """The verdict from ``env.execute(...)``'s ``JobExecutionResult``."""
        return cls.from_accumulators(result.get_all_accumulator_results(), keys, records_per_key)


def build_pipeline(
    env: Any,
    source: OracleSource,
    *,
    parallelism: int | None = None,
    failing_map: FailingMap | None = None,
    failing_snapshot: FailingSnapshot | None = None,
    sink_spin_s: float = 0.0,
) -> Any:
    """Declare TESTING.md's PIPELINE topology on ``env``; returns the final ``DataStreamSink``.

    With ``p = parallelism`` (default: the environment's)::

        source (p) -> rebalance -> verify [-> failing map] (p+1) -> shuffle -> verify (2p)
          -> key_by -> stateful op (p+1) -> key_by -> verifying sink (p)

    so the records cross rebalance, shuffle and hash exchanges, up- and downscaling, and the
    chained (forward) ones. ``sink_spin_s`` makes the verifying sink busy-wait that long per
    record (backpressure through the whole pipeline). Every operator has a ``uid``
    (``oracle-...``) so checkpoints map back to it. Rebalance and shuffle do not keep per-key
    order: the sink checks order only between the stateful operator and itself.
    """
    p = parallelism or env.get_parallelism()
    stream = env.from_source(source, WatermarkStrategy.no_watermarks(), "oracle")
    stream = stream.uid("oracle-source").set_parallelism(p)
    checked = stream.rebalance().map(VerifyingMap("after-rebalance"))
    checked = checked.name("verify after rebalance").uid("oracle-verify-rebalance")
    checked = checked.set_parallelism(p + 1)
    if failing_map is not None:
        checked = checked.map(failing_map).name("failing map").uid("oracle-failing-map")
        checked = checked.set_parallelism(p + 1)
    shuffled = checked.shuffle().map(VerifyingMap("after-shuffle"))
    shuffled = shuffled.name("verify after shuffle").uid("oracle-verify-shuffle")
    shuffled = shuffled.set_parallelism(2 * p)
    stateful = shuffled.key_by(oracle_key).process(OracleStatefulFunction(failing_snapshot))
    stateful = stateful.name("oracle stateful").uid("oracle-stateful").set_parallelism(p + 1)
    verified = stateful.key_by(oracle_key).process(
        VerifyingSink(source.records_per_key, spin_s=sink_spin_s)
    )
    verified = verified.name("verifying sink").uid("oracle-verifying-sink").set_parallelism(p)
    return (
        verified.sink_to(DiscardingSink()).name("discard").uid("oracle-discard").set_parallelism(p)
    )
