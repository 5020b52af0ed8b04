"""``ExecutionConfig`` (PyFlink's ``pyflink.common.ExecutionConfig``): ``env.get_config()``.

A view on the environment's :class:`~undertow.core.config.Configuration`: every setter writes
Flink's option key, so the values ship to the workers with the job's configuration. Only the
knobs that mean something in undertow are here; the Java-only ones (Kryo, Avro, closure cleaner,
object reuse) are listed as not applicable in docs/pyflink-compatibility.md. Its getters read
the configuration each call, on purpose (what is configured now); the runtime reads options
once, into its settings objects.

Not thread-safe, like the environment it belongs to.
"""

from __future__ import annotations

from undertow.common.restart_strategy import RestartStrategyConfiguration, from_configuration
from undertow.core.config import Configuration, Options, default_parallelism, format_map
from undertow.core.errors import ConfigurationError

__all__ = ["ExecutionConfig"]


class ExecutionConfig:
    #: Flink's "use the environment's default parallelism" marker.
    PARALLELISM_DEFAULT = -1
    #: Flink's "parallelism not known yet" marker.
    PARALLELISM_UNKNOWN = -2

    def __init__(self, configuration: Configuration) -> None:
        self._config = configuration

    def set_auto_watermark_interval(self, interval: int) -> ExecutionConfig:
        """Periodic watermark interval in milliseconds (``pipeline.auto-watermark-interval``)."""
        self._config.set(Options.AUTO_WATERMARK_INTERVAL, int(interval))
        return self

    def get_auto_watermark_interval(self) -> int:
        return self._config.get(Options.AUTO_WATERMARK_INTERVAL)

    def set_global_job_parameters(self, parameters: dict[str, str]) -> ExecutionConfig:
        """Parameters every function reads with ``runtime_context.get_job_parameter``; kept in
        the configuration (``pipeline.global-job-parameters``), which ships to the workers."""
        encoded = format_map({str(k): str(v) for k, v in parameters.items()})
        self._config.set(Options.GLOBAL_JOB_PARAMETERS, encoded)
        return self

    def get_global_job_parameters(self) -> dict[str, str]:
        return self._config.get(Options.GLOBAL_JOB_PARAMETERS)

    def get_parallelism(self) -> int:
        """``parallelism.default``, or the machine's cores for a job on one machine."""
        return default_parallelism(self._config)

    def set_parallelism(self, parallelism: int) -> ExecutionConfig:
        if parallelism < 1:
            raise ConfigurationError(
                f"parallelism.default: parallelism must be >= 1, got {parallelism!r}"
            )
        self._config.set(Options.PARALLELISM, parallelism)
        return self

    def get_max_parallelism(self) -> int:
        return self._config.get(Options.MAX_PARALLELISM)

    def set_max_parallelism(self, max_parallelism: int) -> ExecutionConfig:
        if not 0 < max_parallelism <= 32768:
            raise ConfigurationError(
                "pipeline.max-parallelism: max parallelism must be in [1, 32768], got "
                f"{max_parallelism!r}"
            )
        self._config.set(Options.MAX_PARALLELISM, max_parallelism)
        return self

    def set_restart_strategy(
        self, restart_strategy_configuration: RestartStrategyConfiguration
    ) -> ExecutionConfig:
        """Use this restart strategy (from :class:`~undertow.common.RestartStrategies`): writes
        Flink's ``restart-strategy.*`` keys (PyFlink 1.x's method)."""
        if not isinstance(restart_strategy_configuration, RestartStrategyConfiguration):
            raise TypeError(
                "set_restart_strategy: expected a RestartStrategyConfiguration (from "
                f"RestartStrategies), got {restart_strategy_configuration!r}"
            )
        restart_strategy_configuration._configure(self._config)
        return self

    def get_restart_strategy(self) -> RestartStrategyConfiguration:
        """The restart strategy the ``restart-strategy.*`` keys set; the fallback (the
        default strategy) while ``restart-strategy.type`` is unset."""
        return from_configuration(self._config)
