"""The settings of a JobMaster, read once from the job's configuration.

:meth:`MasterSettings.of` is where the driver side reads the options it decides on: the
JobMaster (its control server, heartbeats, checkpoint directory, recovery path), its REST API
and Prometheus endpoint (:class:`RestSettings`), and what it hands to the REST API's
renderers (the job's checkpointing options as
:class:`~undertow.runtime.checkpoint.settings.CheckpointSettings`, its runtime mode). A bad
value fails there, when the JobMaster is constructed, with a ``ConfigurationError`` naming
the option and the value, not when a REST request or a restart first needs it. The worker
side has its own (:class:`~undertow.runtime.worker.settings.WorkerSettings`).

An immutable value: any thread.
"""

from __future__ import annotations

import os
import tempfile
from dataclasses import dataclass

from undertow.core.config import Configuration, Options
from undertow.core.errors import ConfigurationError
from undertow.runtime.checkpoint.settings import CheckpointSettings

#: Where checkpoints go when ``execution.checkpointing.dir`` is empty (savepoints and
#: restores work without periodic checkpoints, as in Flink, and need a directory).
DEFAULT_CHECKPOINT_DIR = os.path.join(tempfile.gettempdir(), "undertow-checkpoints")
#: The targets on which an unset ``rest.port`` means any free port (Flink's MiniCluster).
LOCAL_TARGETS = ("local", "local-threads")
#: The Prometheus reporter's keys (Flink's), and its port when only the factory is named.
PROMETHEUS_PORT_KEY = "metrics.reporter.prom.port"
PROMETHEUS_FACTORY_KEY = "metrics.reporter.prom.factory.class"
PROMETHEUS_FLINK_FACTORY = "org.apache.flink.metrics.prometheus.PrometheusReporterFactory"
PROMETHEUS_DEFAULT_PORT = 9249


@dataclass(frozen=True, slots=True)
class RestSettings:
    """What the REST API and the Prometheus endpoint beside it read (the keys in the field
    comments): read by :meth:`of` with the JobMaster's other settings."""

    #: ``rest.port`` as resolved: unset, 0 (any free port) on the local targets and 8081
    #: elsewhere; -1: no REST API (and no Prometheus endpoint).
    port: int = 8081
    #: ``rest.bind-address``: where the REST API and the Prometheus endpoint listen.
    bind_address: str = "127.0.0.1"
    #: ``rest.token`` (stripped) and ``rest.token-file``: see :mod:`.rest.access`.
    token: str = ""
    token_file: str = ""
    #: ``rest.savepoint.allow-any-directory``.
    savepoint_any_directory: bool = False
    #: ``execution.checkpointing.savepoint-dir``: where a token holder's savepoints may go.
    savepoint_dir: str = ""
    #: ``metrics.reporter.prom.port`` (or the factory's default port): the ports to try, in
    #: order; None when the reporter is off (or the REST API is).
    prometheus_ports: tuple[int, ...] | None = None

    @property
    def enabled(self) -> bool:
        """The REST API runs (``rest.port`` is not -1)."""
        return self.port >= 0

    @classmethod
    def of(cls, config: Configuration) -> RestSettings:
        """Read and validate the REST and Prometheus options of ``config`` once."""
        if config.contains_key(Options.REST_PORT.key):
            port = config.get(Options.REST_PORT)
        elif config.get(Options.TARGET) in LOCAL_TARGETS:
            port = 0
        else:
            port = Options.REST_PORT.default
        return cls(
            port=port,
            bind_address=config.get(Options.REST_BIND_ADDRESS),
            token=config.get(Options.REST_TOKEN).strip(),
            token_file=config.get(Options.REST_TOKEN_FILE),
            savepoint_any_directory=config.get(Options.REST_SAVEPOINT_ANY_DIRECTORY),
            savepoint_dir=config.get(Options.SAVEPOINT_DIR),
            prometheus_ports=prometheus_ports(config) if port >= 0 else None,
        )


def prometheus_ports(config: Configuration) -> tuple[int, ...] | None:
    """The Prometheus reporter's ports to try, in order; None when it is off. Raises
    :class:`ConfigurationError` naming the key for a value that is not a port or range, or a
    reporter factory other than Flink's Prometheus one."""
    factory = config.get_string(PROMETHEUS_FACTORY_KEY, "")
    if not config.contains_key(PROMETHEUS_PORT_KEY):
        if not factory:
            return None
        if factory != PROMETHEUS_FLINK_FACTORY:
            raise ConfigurationError(
                f"'{PROMETHEUS_FACTORY_KEY}' is {factory!r}; undertow serves only "
                f"{PROMETHEUS_FLINK_FACTORY}"
            )
        return (PROMETHEUS_DEFAULT_PORT,)
    text = config.get_string(PROMETHEUS_PORT_KEY, "").strip()
    low, sep, high = text.partition("-")
    try:
        first, last = int(low), int(high) if sep else int(low)
    except ValueError:
        first, last = -1, -2
    if not 0 <= first <= last <= 65535:
        raise ConfigurationError(
            f"'{PROMETHEUS_PORT_KEY}' must be a port or a range like 9250-9260; got {text!r}"
        )
    return tuple(range(first, last + 1))


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
    #: ``slot.request.timeout`` (ms, > 0): how long an attempt waits for its workers to
    #: register (Flink's default, 5 min: a busy cluster starts Python workers slowly).
    registration_timeout_ms: int = 300_000
    #: ``rest.*``, ``metrics.reporter.prom.*``: the REST API and the Prometheus endpoint.
    rest: RestSettings = RestSettings()
    #: ``web.checkpoints.history``: checkpoints the REST API remembers (> 0).
    checkpoints_history: int = 10
    #: ``undertow.collect.buffer-size`` (bytes, > 0): the window of ``execute_and_collect``.
    collect_buffer_size: int = 32 * 1024 * 1024

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
            registration_timeout_ms=config.get(Options.SLOT_REQUEST_TIMEOUT),
            rest=RestSettings.of(config),
            checkpoints_history=config.get(Options.CHECKPOINTS_HISTORY),
            collect_buffer_size=config.get(Options.COLLECT_BUFFER_SIZE),
        )

    @property
    def periodic_checkpoints(self) -> bool:
        """``execution.checkpointing.interval`` > 0."""
        return self.checkpoint.interval_ms > 0
