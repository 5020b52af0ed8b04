"""The settings of a JobMaster, read once from the job's configuration.

:meth:`MasterSettings.of` is where the driver side reads the options it decides on: the
JobMaster (its control server, heartbeats, checkpoint directory, recovery path, REST port)
and what it hands to the REST API's renderers (the job's checkpointing options as
:class:`~undertow.runtime.checkpoint.settings.CheckpointSettings`, its runtime mode). A bad
value fails there, when the JobMaster is constructed, with a ``ConfigurationError`` naming
the option and the value (the typed read of :class:`~undertow.core.config.Configuration`),
not when a REST request or a restart first needs it. The worker side has its own
(:class:`~undertow.runtime.worker.settings.WorkerSettings`).

An immutable value: any thread.
"""

from __future__ import annotations

import os
import tempfile
from dataclasses import dataclass

from undertow.core.config import Configuration, Options
from undertow.runtime.checkpoint.settings import CheckpointSettings

#: Where checkpoints go when ``execution.checkpointing.dir`` is empty (savepoints and
#: restores work without periodic checkpoints, as in Flink, and need a directory).
DEFAULT_CHECKPOINT_DIR = os.path.join(tempfile.gettempdir(), "undertow-checkpoints")


@dataclass(frozen=True, slots=True)
class MasterSettings:
    """What the JobMaster reads of the configuration (the keys in the field comments)."""

    #: ``execution.checkpointing.*``, ``state.backend.type``, ``execution.runtime-mode``.
    checkpoint: CheckpointSettings
    #: ``execution.checkpointing.dir``; :data:`DEFAULT_CHECKPOINT_DIR` when empty.
    checkpoint_dir: str = DEFAULT_CHECKPOINT_DIR
    #: ``execution.checkpointing.savepoint-dir``: where savepoints without a directory go
    #: (empty: such a request is refused, naming the option).
    savepoint_dir: str = ""
    #: ``execution.state-recovery.path``: empty when the job starts without state.
    recovery_path: str = ""
    #: ``undertow.network.bind-host``: where the control server listens for workers.
    bind_host: str = "127.0.0.1"
    #: ``undertow.network.max-frame-size`` (bytes) of a control connection.
    max_frame_size: int = 64 * 1024 * 1024
    #: ``heartbeat.interval`` and ``heartbeat.timeout`` (ms, > 0).
    heartbeat_interval_ms: int = 10_000
    heartbeat_timeout_ms: int = 50_000
    #: ``rest.port``: -1 disables the REST API (0 and the local targets' unset: a free port).
    rest_port: int = 8081
    #: ``web.checkpoints.history``: checkpoints the REST API remembers (> 0).
    checkpoints_history: int = 10

    @classmethod
    def of(cls, config: Configuration) -> MasterSettings:
        """Read and validate every JobMaster option of ``config`` once."""
        return cls(
            checkpoint=CheckpointSettings.of(config),
            checkpoint_dir=config.get(Options.CHECKPOINT_DIR) or DEFAULT_CHECKPOINT_DIR,
            savepoint_dir=config.get(Options.SAVEPOINT_DIR),
            recovery_path=config.get(Options.RECOVERY_PATH),
            bind_host=config.get(Options.BIND_HOST),
            max_frame_size=config.get(Options.MAX_FRAME_SIZE),
            heartbeat_interval_ms=config.get(Options.HEARTBEAT_INTERVAL),
            heartbeat_timeout_ms=config.get(Options.HEARTBEAT_TIMEOUT),
            rest_port=config.get(Options.REST_PORT),
            checkpoints_history=config.get(Options.CHECKPOINTS_HISTORY),
        )

    @property
    def periodic_checkpoints(self) -> bool:
        """``execution.checkpointing.interval`` > 0."""
        return self.checkpoint.interval_ms > 0
