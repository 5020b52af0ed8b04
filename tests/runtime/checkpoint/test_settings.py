"""CheckpointSettings: the checkpointing options read once, modes as enums, and the one place
that builds the barrier options of checkpoints, savepoints and stop-with-savepoint."""

from __future__ import annotations

import asyncio

import pytest

from undertow.core.config import Configuration
from undertow.core.errors import ConfigurationError
from undertow.core.modes import (
    CheckpointingMode,
    ExternalizedCheckpointRetention,
    RuntimeExecutionMode,
)
from undertow.datastream import CheckpointingMode as PublicCheckpointingMode
from undertow.datastream import RuntimeExecutionMode as PublicRuntimeExecutionMode
from undertow.runtime.checkpoint.barrier import NO_TIMEOUT, AlignmentType, SnapshotType
from undertow.runtime.checkpoint.claim_mode import RecoveryClaimMode
from undertow.runtime.checkpoint.settings import CheckpointSettings
from undertow.testing.coordinator import in_memory_coordinator


def settings(**options: str) -> CheckpointSettings:
    return CheckpointSettings.of(Configuration(options))


def test_defaults_are_flinks_and_modes_are_enums() -> None:
    s = settings()
    assert (s.interval_ms, s.timeout_ms, s.min_pause_ms, s.max_concurrent) == (0, 600_000, 0, 1)
    assert s.mode is CheckpointingMode.EXACTLY_ONCE and s.exactly_once
    assert s.retention is ExternalizedCheckpointRetention.NO_EXTERNALIZED_CHECKPOINTS
    assert s.claim_mode is RecoveryClaimMode.NO_CLAIM
    assert s.runtime_mode is RuntimeExecutionMode.STREAMING and not s.batch
    assert not s.unaligned and not s.writes_channel_state


def test_configured_values_are_parsed_once_into_typed_fields() -> None:
    s = settings(**{
        "execution.checkpointing.interval": "2 s",
        "execution.checkpointing.mode": "AT_LEAST_ONCE",
        "execution.checkpointing.max-concurrent-checkpoints": "0",
        "execution.checkpointing.externalized-checkpoint-retention": "RETAIN_ON_CANCELLATION",
        "execution.state-recovery.claim-mode": "claim",
        "execution.runtime-mode": "BATCH",
        "execution.checkpointing.unaligned.enabled": "true",
    })  # fmt: skip
    assert s.interval_ms == 2000 and s.max_concurrent == 1  # 0 means one at a time
    assert s.mode is CheckpointingMode.AT_LEAST_ONCE and not s.exactly_once
    assert not s.writes_channel_state  # unaligned needs exactly-once
    assert s.retention is ExternalizedCheckpointRetention.RETAIN_ON_CANCELLATION
    assert s.claim_mode is RecoveryClaimMode.CLAIM and s.batch


def test_the_public_enums_are_the_runtimes() -> None:
    assert PublicCheckpointingMode is CheckpointingMode
    assert PublicRuntimeExecutionMode is RuntimeExecutionMode


def test_barrier_options_follow_flinks_for_config() -> None:
    aligned = settings()
    assert aligned.options(SnapshotType.CHECKPOINT).alignment is AlignmentType.ALIGNED
    unaligned = settings(**{"execution.checkpointing.unaligned.enabled": "true"})
    assert unaligned.options(SnapshotType.CHECKPOINT).alignment is AlignmentType.UNALIGNED
    assert unaligned.options(SnapshotType.SAVEPOINT).alignment is AlignmentType.ALIGNED
    stop = unaligned.options(SnapshotType.SYNC_SAVEPOINT)
    assert stop.snapshot_type is SnapshotType.SYNC_SAVEPOINT and not stop.is_unaligned
    timed = settings(**{"execution.checkpointing.unaligned.enabled": "true",
                        "execution.checkpointing.aligned-checkpoint-timeout": "5 s"})  # fmt: skip
    options = timed.options(SnapshotType.CHECKPOINT)
    assert (options.alignment, options.aligned_checkpoint_timeout) == (AlignmentType.ALIGNED, 5000)
    assert aligned.options(SnapshotType.CHECKPOINT).aligned_checkpoint_timeout == NO_TIMEOUT
    at_least_once = settings(**{"execution.checkpointing.mode": "AT_LEAST_ONCE"})
    for kind in SnapshotType:
        assert at_least_once.options(kind).alignment is AlignmentType.AT_LEAST_ONCE


@pytest.mark.parametrize(
    ("policy", "status", "keep"),
    [
        ("NO_EXTERNALIZED_CHECKPOINTS", "FAILED", False),
        ("DELETE_ON_CANCELLATION", "FAILED", True),
        ("RETAIN_ON_CANCELLATION", "FAILED", True),
        ("RETAIN_ON_CANCELLATION", "CANCELED", True),
        ("DELETE_ON_CANCELLATION", "CANCELED", False),
        ("NO_EXTERNALIZED_CHECKPOINTS", "CANCELED", False),
        ("RETAIN_ON_CANCELLATION", "FINISHED", False),
    ],
)
def test_retention_on_job_end_is_flinks(policy: str, status: str, keep: bool) -> None:
    s = settings(**{"execution.checkpointing.externalized-checkpoint-retention": policy})
    assert s.keeps_retained_checkpoints(status) is keep


def test_a_bad_mode_is_refused_naming_the_option() -> None:
    with pytest.raises(ConfigurationError, match=r"'execution\.checkpointing\.mode' = 'SOMETIMES'"):
        settings(**{"execution.checkpointing.mode": "SOMETIMES"})


def test_the_coordinator_takes_its_barrier_options_and_retention_from_the_settings() -> None:
    from tests.runtime.checkpoint.test_coordinator_restore import complete_checkpoints, job_graph

    async def scenario() -> None:
        kit = in_memory_coordinator(job_graph(), {
            "execution.checkpointing.interval": "100 ms",
            "execution.checkpointing.unaligned.enabled": "true",
            "execution.checkpointing.externalized-checkpoint-retention": "RETAIN_ON_CANCELLATION",
        })  # fmt: skip
        await complete_checkpoints(kit, 1)
        [(_, _, barrier), *_] = kit.gateway.triggered
        assert barrier.options.is_unaligned
        assert kit.coordinator.settings == CheckpointSettings.of(kit.coordinator.config)
        await asyncio.get_running_loop().run_in_executor(None, kit.coordinator.shutdown, "CANCELED")
        assert kit.storage.completed_checkpoint_ids() == [1]  # retained on cancellation

    asyncio.run(scenario())


def test_checkpoints_during_recovery_are_on_by_default_and_flip_547s_companion_is_checked() -> None:
    """FLIP-547's options under Flink's names: during-recovery on unless switched off;
    recover-output-on-downstream accepted as false and refused as true, naming the option."""
    assert settings().during_recovery
    during = "execution.checkpointing.during-recovery.enabled"  # Flink 2.3.0's key
    assert not settings(**{during: "false"}).during_recovery
    flip = "execution.checkpointing.unaligned.during-recovery.enabled"  # FLIP-547's, still read
    assert not settings(**{flip: "false"}).during_recovery
    downstream = "execution.checkpointing.unaligned.recover-output-on-downstream.enabled"
    assert settings(**{downstream: "false"}).during_recovery
    with pytest.raises(ConfigurationError, match=rf"option '{downstream}' = 'true': must be false"):
        settings(**{downstream: "true"})
