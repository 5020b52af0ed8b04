"""The checkpointing options of a job, read once from its configuration.

:meth:`CheckpointSettings.of` parses every ``execution.checkpointing.*`` option the coordinator
and the workers decide on, with modes as enums (:mod:`undertow.core.modes`), so that the shells
read typed fields instead of calling ``config.get`` and comparing strings. It is also the one
place that builds :class:`~.barrier.CheckpointOptions` (Flink's ``CheckpointOptions.forConfig``)
for checkpoints, savepoints and stop-with-savepoint. Immutable: a job's options do not change
while it runs.
"""

from __future__ import annotations

from dataclasses import dataclass

from undertow.core.config import Configuration, Options
from undertow.core.modes import (
    CheckpointingMode,
    ExternalizedCheckpointRetention,
    RuntimeExecutionMode,
)
from undertow.runtime.checkpoint.barrier import CheckpointOptions, SnapshotType
from undertow.runtime.checkpoint.claim_mode import RecoveryClaimMode


@dataclass(frozen=True, slots=True)
class CheckpointSettings:
    """Typed checkpointing options (times in milliseconds, sizes in bytes)."""

    #: ``execution.checkpointing.interval``; 0: no periodic checkpoints.
    interval_ms: int
    timeout_ms: int
    min_pause_ms: int
    #: At least 1 (a configured 0 or less means 1, as before).
    max_concurrent: int
    mode: CheckpointingMode
    unaligned: bool
    aligned_timeout_ms: int
    #: ``execution.checkpointing.unaligned.max-inflight-data`` (0: switch by time only)
    max_inflight_bytes: int
    num_retained: int
    tolerable_failures: int
    #: FLIP-147 (``checkpoints-after-tasks-finish``).
    after_tasks_finish: bool
    metadata_max_size: int
    retention: ExternalizedCheckpointRetention
    claim_mode: RecoveryClaimMode
    runtime_mode: RuntimeExecutionMode
    #: ``state.backend.type``: recorded in a savepoint, checked when a job restores one.
    state_backend: str = "hashmap"
    #: ``execution.checkpointing.unaligned.during-recovery.enabled`` (FLIP-547): checkpoints
    #: are triggered while restored in-flight data is still being consumed.
    during_recovery: bool = True
    #: ``execution.state-recovery.ignore-unclaimed-state``: a restore drops the state of
    #: operators the job no longer has instead of failing.
    ignore_unclaimed_state: bool = False

    @classmethod
    def of(cls, config: Configuration) -> CheckpointSettings:
        """Read (and check) the options; raises the option's error on a bad value."""
        return cls(
            interval_ms=config.get(Options.CHECKPOINT_INTERVAL),
            timeout_ms=config.get(Options.CHECKPOINT_TIMEOUT),
            min_pause_ms=config.get(Options.MIN_PAUSE),
            max_concurrent=max(1, config.get(Options.MAX_CONCURRENT)),
            mode=CheckpointingMode[config.get(Options.CHECKPOINT_MODE)],
            unaligned=config.get(Options.UNALIGNED),
            aligned_timeout_ms=config.get(Options.ALIGNED_TIMEOUT),
            max_inflight_bytes=config.get(Options.UNALIGNED_MAX_INFLIGHT_DATA),
            num_retained=config.get(Options.NUM_RETAINED),
            tolerable_failures=config.get(Options.TOLERABLE_FAILURES),
            after_tasks_finish=config.get(Options.CHECKPOINTS_AFTER_TASKS_FINISH),
            metadata_max_size=config.get(Options.METADATA_MAX_SIZE),
            retention=ExternalizedCheckpointRetention[config.get(Options.CHECKPOINT_RETENTION)],
            claim_mode=RecoveryClaimMode.of(config),
            runtime_mode=RuntimeExecutionMode[config.get(Options.RUNTIME_MODE)],
            state_backend=config.get(Options.STATE_BACKEND),
            during_recovery=_during_recovery(config),
            ignore_unclaimed_state=config.get(Options.IGNORE_UNCLAIMED_STATE),
        )

    @property
    def exactly_once(self) -> bool:
        return self.mode is CheckpointingMode.EXACTLY_ONCE

    @property
    def batch(self) -> bool:
        return self.runtime_mode is RuntimeExecutionMode.BATCH

    @property
    def writes_channel_state(self) -> bool:
        """Unaligned checkpoints may persist in-flight data (exactly-once and enabled)."""
        return self.exactly_once and self.unaligned

    def options(self, snapshot_type: SnapshotType) -> CheckpointOptions:
        """The barrier options of a snapshot of ``snapshot_type`` under these settings."""
        return CheckpointOptions.for_config(
            snapshot_type, self.exactly_once, self.unaligned, self.aligned_timeout_ms,
            self.max_inflight_bytes,
        )  # fmt: skip

    def keeps_retained_checkpoints(self, final_status: str) -> bool:
        """Flink's retention rules when the job ends with ``final_status``: finished jobs
        delete them; cancelled jobs keep them only with RETAIN_ON_CANCELLATION; failed jobs
        keep them unless NO_EXTERNALIZED_CHECKPOINTS."""
        if final_status == "CANCELED":
            return self.retention is ExternalizedCheckpointRetention.RETAIN_ON_CANCELLATION
        if final_status == "FAILED":
            return self.retention is not ExternalizedCheckpointRetention.NO_EXTERNALIZED_CHECKPOINTS
        return False


def _during_recovery(config: Configuration) -> bool:
    """``during-recovery.enabled``, after checking its companion option (FLIP-547's
    ``recover-output-on-downstream.enabled``, which undertow accepts only as false: its
    check raises a ``ConfigurationError`` naming the option and the value)."""
    config.get(Options.UNALIGNED_RECOVER_OUTPUT_ON_DOWNSTREAM)
    return config.get(Options.UNALIGNED_DURING_RECOVERY)
