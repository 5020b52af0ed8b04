"""The settings of a stream task, read once from the job's configuration.

A task and everything it builds (its operator chain, its operators, its checkpointer, its
pace and lifecycle) take a :class:`TaskSettings` instead of reading options deep inside:
:meth:`TaskSettings.of` is the one place in ``runtime.task`` that reads them, and a bad value
fails there with a ``ConfigurationError`` naming the option and the value (the typed read of
:class:`~undertow.core.config.Configuration`). The other layers have their own
(:class:`~undertow.runtime.checkpoint.settings.CheckpointSettings`,
:class:`~undertow.runtime.network.buffer_debloater.DebloatSettings`).

An immutable value: any thread; built when a task is constructed.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from undertow.core.config import Configuration, Options
from undertow.state.factory import StateBackendSettings


@dataclass(frozen=True, slots=True)
class TaskSettings:
    """What a task reads of the configuration (Flink's keys in the field comments)."""

    #: ``execution.runtime-mode`` is BATCH: event time jumps to the end when input ends,
    #: processing-time timers fire at the end, keyed reductions emit only their final value.
    batch: bool = False
    #: ``undertow.task.mailbox-slice`` and ``...-during-checkpoint`` (ms, > 0).
    mailbox_slice_ms: float = 2.0
    mailbox_slice_checkpoint_ms: float = 0.25
    #: ``pipeline.auto-watermark-interval`` (ms; 0: no periodic watermarks).
    auto_watermark_interval_ms: int = 200
    #: ``execution.checkpointing.unaligned.enabled`` and ``...unaligned.forced``.
    unaligned: bool = False
    unaligned_forced: bool = False
    #: ``execution.checkpointing.unaligned.incremental-channel-state.enabled``: queued
    #: buffers the previous completed checkpoint persisted are referred to, not written again.
    incremental_channel_state: bool = True
    #: A finishing task waits for a final checkpoint (FLIP-147): periodic checkpoints are on
    #: (``execution.checkpointing.interval`` > 0), the job is not BATCH and
    #: ``execution.checkpointing.checkpoints-after-tasks-finish`` is true.
    final_checkpoint: bool = False
    #: ``pipeline.global-job-parameters``.
    job_parameters: Mapping[str, str] = field(default_factory=dict)
    #: ``taskmanager.network.memory.max-overdraft-buffers-per-gate``.
    max_overdraft_buffers_per_gate: int = 5
    #: ``undertow.network.flush-when-idle``: a starved task flushes its partly filled output
    #: buffers before it waits (only with a positive ``execution.buffer-timeout``).
    flush_when_idle: bool = True
    #: The keyed state backend of the task's keyed operators (``state.backend.*``).
    state_backend: StateBackendSettings = field(default_factory=StateBackendSettings)

    @classmethod
    def of(cls, config: Configuration) -> TaskSettings:
        """Read and validate every task option of ``config`` once."""
        batch = config.get(Options.RUNTIME_MODE) == "BATCH"
        job_parameters: dict[str, str] = config.get(Options.GLOBAL_JOB_PARAMETERS)
        return cls(
            batch=batch,
            mailbox_slice_ms=config.get(Options.MAILBOX_SLICE),
            mailbox_slice_checkpoint_ms=config.get(Options.MAILBOX_SLICE_CHECKPOINT),
            auto_watermark_interval_ms=config.get(Options.AUTO_WATERMARK_INTERVAL),
            unaligned=config.get(Options.UNALIGNED),
            unaligned_forced=config.get(Options.UNALIGNED_FORCED),
            incremental_channel_state=config.get(Options.UNALIGNED_INCREMENTAL_CHANNEL_STATE),
            final_checkpoint=(
                config.get(Options.CHECKPOINT_INTERVAL) > 0
                and config.get(Options.CHECKPOINTS_AFTER_TASKS_FINISH)
                and not batch
            ),
            job_parameters=dict(job_parameters),
            max_overdraft_buffers_per_gate=config.get(Options.MAX_OVERDRAFT_BUFFERS_PER_GATE),
            flush_when_idle=config.get(Options.FLUSH_WHEN_IDLE),
            state_backend=StateBackendSettings.of(config),
        )
