"""undertow's testing kit, shipped to users.

* :mod:`undertow.testing.harness`: run one operator without a job (keyed or not), with a
  manual processing-time clock, and inspect its output, side outputs, watermarks and timers.
* :mod:`undertow.testing.oracle`: the exactly-once oracle — a generator source with verifiable
  records, verifying operators and sink, fault injection (scheduled failures, failing
  snapshots, kill -9 of workers) and :class:`~undertow.testing.oracle.OracleResult`, whose six
  counts (lost, duplicated, out of order, corrupt, state and key-group mismatches) must be 0.
* :mod:`undertow.testing.kafka_oracle`: the oracle's counts over what a read_committed
  consumer reads of a Kafka sink's topic (encoders for the stateful operator's outputs).
* :mod:`undertow.testing.restore_control`: :class:`RestoreEvidenceMissing`, the failure of
  every restore-evidence check, and the restore controls under which a restore test must
  raise it.
* :mod:`undertow.testing.channel_state`: an in-memory ``ChannelStateWriter`` for tests of the
  checkpoint path (channel state inside the subtask's state file, no shared files).
"""

from undertow.testing.channel_state import InMemoryChannelStateWriter
from undertow.testing.harness import KeyedOneInputOperatorTestHarness, OneInputOperatorTestHarness
from undertow.testing.oracle import (
    FailingMap,
    FailingSnapshot,
    InjectedFailure,
    OracleResult,
    OracleSource,
    OracleStatefulFunction,
    VerifyingMap,
    VerifyingSink,
    WorkerKiller,
    build_pipeline,
    kill_worker_process,
    live_workers_of,
    verify_record,
)
from undertow.testing.recovery_hold import RecoveryHold
from undertow.testing.restore_control import RestoreEvidenceMissing, restore_control

__all__ = [
    "FailingMap",
    "FailingSnapshot",
    "InMemoryChannelStateWriter",
    "InjectedFailure",
    "KeyedOneInputOperatorTestHarness",
    "OneInputOperatorTestHarness",
    "OracleResult",
    "OracleSource",
    "OracleStatefulFunction",
    "RecoveryHold",
    "RestoreEvidenceMissing",
    "VerifyingMap",
    "VerifyingSink",
    "WorkerKiller",
    "build_pipeline",
    "kill_worker_process",
    "live_workers_of",
    "restore_control",
    "verify_record",
]
