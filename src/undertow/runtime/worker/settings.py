"""The settings of a worker, read once from a configuration.

A worker starts with the launch configuration (to connect and serve) and replaces it with the
job's when it deploys: :meth:`WorkerSettings.of` builds the settings of either, and the
worker, its deployment builder and its loops read these fields instead of options. A bad value
fails in :meth:`of` with a ``ConfigurationError`` naming the option and the value. Tasks have
their own (:class:`~undertow.runtime.task.settings.TaskSettings`), checkpointing its own
(:class:`~undertow.runtime.checkpoint.settings.CheckpointSettings`).

An immutable value: any thread.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from undertow.core.config import Configuration, Options
from undertow.runtime.network.settings import NetworkSettings


@dataclass(frozen=True, slots=True)
class WorkerSettings:
    """What a worker reads of the configuration (the keys in the field comments)."""

    network: NetworkSettings = field(default_factory=NetworkSettings)
    #: ``execution.checkpointing.dir``: empty when the job keeps no checkpoints.
    checkpoint_dir: str = ""
    #: ``execution.checkpointing.unaligned.max-subtasks-per-channel-state-file``.
    max_subtasks_per_channel_state_file: int = 5
    #: ``state.backend.rocksdb.localdir``: where restored native files are downloaded.
    rocksdb_local_dir: str = ""
    #: ``execution.state-recovery.ignore-unclaimed-state``.
    ignore_unclaimed_state: bool = False
    #: ``undertow.metrics.report-interval`` (s): how often task metrics go to the JobMaster.
    metrics_interval_s: float = 1.0
    #: ``heartbeat.interval`` (s).
    heartbeat_interval_s: float = 10.0
    #: ``heartbeat.timeout`` (s): how long the worker's messages may go unacknowledged by the
    #: JobMaster's host before the worker counts it lost and stops (fencing).
    heartbeat_timeout_s: float = 50.0
    #: ``undertow.task.mailbox-slice`` (s): the interpreter's switch interval is fitted to it.
    mailbox_slice_s: float = 0.002
    #: ``undertow.worker.gc-threshold``: the young generation's collection threshold.
    gc_threshold: int = 20_000

    @classmethod
    def of(cls, config: Configuration) -> WorkerSettings:
        """Read and validate every worker option of ``config`` once."""
        return cls(
            network=NetworkSettings.of(config),
            checkpoint_dir=config.get(Options.CHECKPOINT_DIR),
            max_subtasks_per_channel_state_file=config.get(
                Options.MAX_SUBTASKS_PER_CHANNEL_STATE_FILE
            ),
            rocksdb_local_dir=config.get(Options.ROCKSDB_LOCAL_DIR),
            ignore_unclaimed_state=config.get(Options.IGNORE_UNCLAIMED_STATE),
            metrics_interval_s=config.get(Options.METRICS_REPORT_INTERVAL) / 1000.0,
            heartbeat_interval_s=config.get(Options.HEARTBEAT_INTERVAL) / 1000.0,
            heartbeat_timeout_s=config.get(Options.HEARTBEAT_TIMEOUT) / 1000.0,
            mailbox_slice_s=config.get(Options.MAILBOX_SLICE) / 1000.0,
            gc_threshold=config.get(Options.WORKER_GC_THRESHOLD),
        )
