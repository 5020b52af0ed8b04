"""The options of checkpoints, savepoints and recovery: interval, mode, timeouts, retention,
directories, unaligned checkpoints (FLIP-76, FLIP-547), metadata authentication and the claim
mode of a restore (FLIP-193); Flink's keys and defaults. Read into typed settings by
``runtime/checkpoint/settings.py``. Part of :class:`undertow.core.config.Options`.
"""

from __future__ import annotations

from undertow.core.config_option import (
    ConfigOption,
    bool_option,
    choice,
    duration_option,
    int_option,
    memory_option,
    positive,
    str_option,
)


def _minimal_checkpoint_time(value: int) -> str | None:
    """Flink's ``MINIMAL_CHECKPOINT_TIME``: a timeout below it expires every checkpoint."""
    return None if value >= 10 else "must be at least 10 ms"


def _off_or_minimal_checkpoint_time(value: int) -> str | None:
    """An interval: 0 (or less) turns periodic checkpoints off, else at least 10 ms."""
    return None if value <= 0 or value >= 10 else "must be 0 (off) or at least 10 ms"


class CheckpointingOptions:
    """Checkpointing, savepoint and state-recovery options."""

    CHECKPOINT_INTERVAL = duration_option(
        "execution.checkpointing.interval", 0, "0 disables periodic checkpoints",
        check=_off_or_minimal_checkpoint_time,
    )  # fmt: skip
    CHECKPOINT_MODE = str_option(
        "execution.checkpointing.mode",
        "EXACTLY_ONCE",
        check=choice("EXACTLY_ONCE", "AT_LEAST_ONCE"),
    )
    CHECKPOINT_TIMEOUT = duration_option(
        "execution.checkpointing.timeout", 600_000, check=_minimal_checkpoint_time
    )
    MIN_PAUSE = duration_option("execution.checkpointing.min-pause", 0)
    MAX_CONCURRENT = int_option("execution.checkpointing.max-concurrent-checkpoints", 1)
    TOLERABLE_FAILURES = int_option("execution.checkpointing.tolerable-failed-checkpoints", 0)
    NUM_RETAINED = int_option("execution.checkpointing.num-retained", 1, check=positive)
    CHECKPOINT_DIR = str_option(
        "execution.checkpointing.dir", "", deprecated_keys=("state.checkpoints.dir",)
    )
    SAVEPOINT_DIR = str_option(
        "execution.checkpointing.savepoint-dir",
        "",
        "default directory of savepoints (trigger_savepoint, stop_with_savepoint, undertow "
        "stop) taken without one",
        deprecated_keys=("state.savepoints.dir",),
    )
    UNALIGNED = bool_option(
        "execution.checkpointing.unaligned.enabled",
        False,
        "unaligned checkpoints: barriers overtake in-flight data, which becomes channel state",
    )
    CHECKPOINTS_AFTER_TASKS_FINISH = bool_option(
        "execution.checkpointing.checkpoints-after-tasks-finish",
        True,
        "FLIP-147: checkpoints go on after some tasks finished, and a finishing task waits for "
        "a final checkpoint (which commits two-phase-commit sinks) before it closes",
    )
    UNALIGNED_FORCED = bool_option(
        "execution.checkpointing.unaligned.forced",
        False,
        "unaligned checkpoints also on edges without key context (forward, rescale, broadcast)",
    )
    HMAC_KEY = str_option(
        "undertow.checkpointing.hmac-key",
        "",
        "key authenticating checkpoint metadata (hex or text); when empty, the key file "
        "undertow.checkpointing.hmac-key-file is used",
    )
    HMAC_KEY_FILE = str_option(
        "undertow.checkpointing.hmac-key-file",
        "",
        "local file holding the metadata key, created 0600 when missing; empty: "
        "$XDG_CONFIG_HOME/undertow/checkpoint.key (or ~/.config/undertow/checkpoint.key)",
    )
    METADATA_MAX_SIZE = memory_option(
        "undertow.checkpointing.metadata.max-size",
        256 * 1024 * 1024,
        "largest _metadata file a checkpoint may write and a restore reads; a checkpoint "
        "whose metadata is larger fails instead of completing unrestorable",
        check=positive,
    )
    CHECKPOINT_RETENTION = str_option(
        "execution.checkpointing.externalized-checkpoint-retention", "NO_EXTERNALIZED_CHECKPOINTS",
        "what happens to retained checkpoints when the job ends",
        check=choice("NO_EXTERNALIZED_CHECKPOINTS", "RETAIN_ON_CANCELLATION",
                      "DELETE_ON_CANCELLATION"),
    )  # fmt: skip
    RECOVERY_PATH = str_option(
        "execution.state-recovery.path",
        "",
        "start from this retained checkpoint",
        deprecated_keys=("execution.savepoint.path",),
    )
    RECOVERY_CLAIM_MODE = ConfigOption(
        "execution.state-recovery.claim-mode",
        lambda text: str(text).strip().upper().replace("-", "_"),
        "NO_CLAIM",
        "who owns the snapshot of execution.state-recovery.path: NO_CLAIM (the user; never "
        "deleted or modified) or CLAIM (the job; deleted once newer checkpoints subsume it)",
        deprecated_keys=("execution.savepoint-restore-mode",),
        check=lambda mode: None if mode in ("CLAIM", "NO_CLAIM") else (
            "must be CLAIM or NO_CLAIM"
            + (" (LEGACY was deprecated in Flink 1.19 and removed in 2.0)"
               if mode == "LEGACY" else "")
        ),
    )  # fmt: skip
    IGNORE_UNCLAIMED_STATE = bool_option(
        "execution.state-recovery.ignore-unclaimed-state",
        False,
        "restore even if the checkpoint has state of operators the job no longer has (dropped)",
        deprecated_keys=("execution.savepoint.ignore-unclaimed-state",),
    )
    ALIGNED_TIMEOUT = duration_option(
        "execution.checkpointing.aligned-checkpoint-timeout",
        0,
        "with unaligned checkpoints: start aligned, switch to unaligned this long after the "
        "trigger; 0 = unaligned from the start",
        deprecated_keys=("execution.checkpointing.alignment-timeout",),
    )
    UNALIGNED_MAX_INFLIGHT_DATA = memory_option(
        "execution.checkpointing.unaligned.max-inflight-data",
        0,
        "with an aligned-checkpoint timeout: switch to unaligned at once when more than this "
        "many bytes are queued ahead of the barrier (FLIP-76's UNALIGNED_WITH_MAX_INFLIGHT_DATA, "
        "never shipped by Flink); 0 = by time only",
    )
    UNALIGNED_INCREMENTAL_CHANNEL_STATE = bool_option(
        # no Flink key (FLIP-76 lists incremental channel state as future work)
        "execution.checkpointing.unaligned.incremental-channel-state.enabled",
        True,
        "an unaligned checkpoint refers to the in-flight buffers the subtask's previous "
        "(completed) checkpoint persisted and that are still queued, instead of writing them "
        "again; false: every checkpoint writes all of its in-flight data",
    )
    UNALIGNED_DURING_RECOVERY = bool_option(
        # the key Flink 2.3.0 reads (CheckpointingOptions.CHECKPOINTING_DURING_RECOVERY_ENABLED);
        # FLIP-547 and undertow before it named it with the unaligned. prefix
        "execution.checkpointing.during-recovery.enabled",
        True,
        "FLIP-76 / FLIP-547: checkpoints are taken while restored in-flight data (channel "
        "state restored in place) is still being consumed; the data not yet consumed becomes "
        "the new checkpoint's channel state. false: no checkpoint is triggered before every "
        "subtask consumed its restored in-flight data (Flink before 2.3)",
        deprecated_keys=("execution.checkpointing.unaligned.during-recovery.enabled",),
    )
    UNALIGNED_RECOVER_OUTPUT_ON_DOWNSTREAM = bool_option(
        "execution.checkpointing.unaligned.recover-output-on-downstream.enabled",
        False,
        "FLIP-547: recover a producer's output channel state at the consumer's input. "
        "undertow restores it into the producer's subpartitions, where a checkpoint during "
        "recovery captures it as output state, so only false is accepted",
        check=lambda on: None if not on else (
            "must be false: undertow restores output channel state into the producer's "
            "subpartitions (an unaligned barrier overtakes it there, so checkpoints during "
            "recovery need no downstream recovery); recovering it at the consumer's input is "
            "not implemented"
        ),
    )  # fmt: skip
    MAX_SUBTASKS_PER_CHANNEL_STATE_FILE = int_option(
        "execution.checkpointing.unaligned.max-subtasks-per-channel-state-file",
        5,
        "subtasks of a worker that share one channel-state file per checkpoint; 1 gives one "
        "file per subtask",
        check=positive,
    )
