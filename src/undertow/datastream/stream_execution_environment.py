"""``StreamExecutionEnvironment``: where a job is declared and from where it is executed.

PyFlink's class and method names. Declaring a stream records transformations; ``execute``
builds the stream graph and the job graph (finding misuse with operator names), deploys the job
on ``execution.target`` and waits for it.

Not thread-safe: declare the job from one thread. ``execute_async`` returns a thread-safe
:class:`~undertow.datastream.job_client.JobClient`.
"""

from __future__ import annotations

import contextlib
import json
import sys
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

from undertow.core.config import Configuration, Options, format_map
from undertow.core.errors import GraphBuildError
from undertow.datastream.checkpoint_config import CheckpointConfig, CheckpointingMode
from undertow.datastream.connectors.collection import CollectionSource
from undertow.datastream.execution_mode import RuntimeExecutionMode
from undertow.datastream.job_client import JobClient
from undertow.datastream.state_backend import StateBackend, state_backend_of
from undertow.graph.job_graph import JobGraph, build_job_graph
from undertow.graph.stream_graph import StreamGraph, build_stream_graph, describe
from undertow.graph.transformations import SourceTransformation, Transformation
from undertow.runtime.cluster.job_master import JobExecutionResult

#: How long ``execute`` waits for a cancelled job's workers after Ctrl-C.
CANCEL_WAIT_S = 30.0

if TYPE_CHECKING:
    from undertow.datastream.data_stream import DataStream


class ExecutionConfig:
    """``env.get_config()``: global job parameters and a few knobs, backed by the configuration."""

    def __init__(self, env: StreamExecutionEnvironment) -> None:
        self._env = env

    def set_auto_watermark_interval(self, interval: int) -> ExecutionConfig:
        self._env._config.set(Options.AUTO_WATERMARK_INTERVAL, int(interval))
        return self

    def get_auto_watermark_interval(self) -> int:
        return self._env._config.get(Options.AUTO_WATERMARK_INTERVAL)

    def set_global_job_parameters(self, parameters: dict[str, str]) -> ExecutionConfig:
        """Parameters every function reads with ``runtime_context.get_job_parameter``; kept in
        the configuration (``pipeline.global-job-parameters``), which ships to the workers."""
        encoded = format_map({str(k): str(v) for k, v in parameters.items()})
        self._env._config.set(Options.GLOBAL_JOB_PARAMETERS, encoded)
        return self

    def get_global_job_parameters(self) -> dict[str, str]:
        return self._env._config.get(Options.GLOBAL_JOB_PARAMETERS)

    def get_parallelism(self) -> int:
        return self._env.get_parallelism()

    def set_parallelism(self, parallelism: int) -> ExecutionConfig:
        self._env.set_parallelism(parallelism)
        return self

    def get_max_parallelism(self) -> int:
        return self._env.get_max_parallelism()


#: Options set by ``undertow run`` (``--parallelism``, ``--target``, ``-D``) for the job script it
#: runs; every environment starts from them, then applies its own configuration.
CLI_DEFAULTS = Configuration()


class StreamExecutionEnvironment:
    def __init__(self, configuration: Configuration | None = None) -> None:
        self._config = Configuration(CLI_DEFAULTS)
        if configuration is not None:
            self._config.add_all(configuration)
        self._sinks: list[Transformation] = []
        self._execution_config = ExecutionConfig(self)
        for option in Options.all():  # validate what was given, now, with the key's name
            option.read(self._config.to_dict())

    @staticmethod
    def get_execution_environment(
        configuration: Configuration | None = None,
    ) -> StreamExecutionEnvironment:
        return StreamExecutionEnvironment(configuration)

    # configuration ----------------------------------------------------------------------
    def get_config(self) -> ExecutionConfig:
        return self._execution_config

    def get_configuration(self) -> Configuration:
        return self._config

    def configure(self, configuration: Configuration) -> StreamExecutionEnvironment:
        self._config.add_all(configuration)
        for option in Options.all():
            option.read(self._config.to_dict())
        return self

    def set_parallelism(self, parallelism: int) -> StreamExecutionEnvironment:
        if parallelism < 1:
            raise GraphBuildError(f"parallelism must be >= 1, got {parallelism}")
        self._config.set(Options.PARALLELISM, parallelism)
        return self

    def get_parallelism(self) -> int:
        return self._config.get(Options.PARALLELISM)

    def set_max_parallelism(self, max_parallelism: int) -> StreamExecutionEnvironment:
        if not 0 < max_parallelism <= 32768:
            raise GraphBuildError(f"max parallelism must be in [1, 32768], got {max_parallelism}")
        self._config.set(Options.MAX_PARALLELISM, max_parallelism)
        return self

    def get_max_parallelism(self) -> int:
        return self._config.get(Options.MAX_PARALLELISM)

    def set_runtime_mode(self, execution_mode: RuntimeExecutionMode) -> StreamExecutionEnvironment:
        self._config.set(Options.RUNTIME_MODE, execution_mode.name)
        return self

    def set_buffer_timeout(self, timeout_millis: int) -> StreamExecutionEnvironment:
        self._config.set(Options.BUFFER_TIMEOUT, int(timeout_millis))
        return self

    def get_buffer_timeout(self) -> int:
        return self._config.get(Options.BUFFER_TIMEOUT)

    def disable_operator_chaining(self) -> StreamExecutionEnvironment:
        self._config.set(Options.OPERATOR_CHAINING, False)
        return self

    def is_chaining_enabled(self) -> bool:
        return self._config.get(Options.OPERATOR_CHAINING)

    def enable_checkpointing(
        self, interval: int, mode: CheckpointingMode | None = None
    ) -> StreamExecutionEnvironment:
        config = self.get_checkpoint_config()
        config.set_checkpoint_interval(interval)
        if mode is not None:
            config.set_checkpointing_mode(mode)
        return self

    def set_state_backend(self, state_backend: StateBackend) -> StreamExecutionEnvironment:
        """Where keyed state lives: ``HashMapStateBackend()`` or ``EmbeddedRocksDBStateBackend()``
        (writes ``state.backend.type`` and related keys; PyFlink 1.x's method, gone in 2.x)."""
        if not isinstance(state_backend, StateBackend):
            raise TypeError(
                f"set_state_backend: expected a StateBackend (HashMapStateBackend or "
                f"EmbeddedRocksDBStateBackend), got {state_backend!r}"
            )
        state_backend._configure(self._config)
        self._config.get(Options.INCREMENTAL_CHECKPOINTS)  # not implemented: raises if asked
        return self

    def get_state_backend(self) -> StateBackend:
        return state_backend_of(self._config)

    def get_checkpoint_config(self) -> CheckpointConfig:
        return CheckpointConfig(self._config)

    def get_checkpoint_interval(self) -> int:
        return self._config.get(Options.CHECKPOINT_INTERVAL)

    # sources --------------------------------------------------------------------------------
    def from_collection(self, collection: Iterable[Any], type_info: Any = None) -> DataStream:
        from undertow.datastream.data_stream import DataStream

        elements = list(collection)
        if type_info is not None and hasattr(type_info, "conform"):
            elements = [type_info.conform(e) for e in elements]
        t = SourceTransformation(
            name="Source: Collection Source", source=CollectionSource(elements),
            parallelism=1, max_parallelism=1, parallelism_set=True, output_type=type_info,
        )  # fmt: skip
        return DataStream(self, t)

    def from_source(
        self, source: Any, watermark_strategy: Any, source_name: str, type_info: Any = None
    ) -> DataStream:
        from undertow.datastream.data_stream import DataStream

        for method in ("create_reader", "create_enumerator", "get_boundedness"):
            if not callable(getattr(source, method, None)):
                raise GraphBuildError(
                    f"from_source('{source_name}'): {source!r} is not a Source (no {method}())"
                )
        t = SourceTransformation(
            name=f"Source: {source_name}", source=source, watermark_strategy=watermark_strategy,
            output_type=type_info,
        )  # fmt: skip
        return DataStream(self, t)

    # execution ------------------------------------------------------------------------------
    def _add_sink(self, transformation: Transformation) -> None:
        self._sinks.append(transformation)

    def get_stream_graph(self, job_name: str = "undertow job") -> StreamGraph:
        return build_stream_graph(
            job_name,
            self._sinks,
            default_parallelism=self.get_parallelism(),
            default_max_parallelism=self.get_max_parallelism(),
            default_buffer_timeout=self.get_buffer_timeout(),
            chaining_enabled=self.is_chaining_enabled(),
        )

    def get_execution_plan(self) -> str:
        """The stream graph as JSON (operators, parallelism, edges)."""
        return json.dumps(describe(self.get_stream_graph()), indent=2)

    def _job_graph(self, job_name: str) -> JobGraph:
        graph = build_job_graph(self.get_stream_graph(job_name))
        return graph

    def _effective_config(self) -> Configuration:
        config = Configuration(self._config)
        mode = config.get(Options.RUNTIME_MODE)
        if mode == "AUTOMATIC":
            bounded = all(
                getattr(t.source, "get_boundedness", lambda: None)() is not None
                and t.source.get_boundedness().name == "BOUNDED"
                for t in _sources(self._sinks)
            )
            config.set(Options.RUNTIME_MODE, "BATCH" if bounded else "STREAMING")
        return config

    def execute_async(self, job_name: str | None = None) -> JobClient:
        from undertow.deploy.executor import start_job

        config = self._effective_config()
        graph = self._job_graph(job_name or "undertow job")
        self._sinks = []
        return JobClient(start_job(graph, config))

    def execute(self, job_name: str | None = None) -> JobExecutionResult:
        """Run the job and wait for its result. Ctrl-C cancels the job (its workers stop,
        on Spark the job group is cancelled) before ``KeyboardInterrupt`` propagates."""
        client = self.execute_async(job_name)
        try:
            return client.get_job_execution_result()
        except KeyboardInterrupt:
            sys.stderr.write("[undertow] interrupted: cancelling the job\n")
            client.cancel()
            with contextlib.suppress(Exception):
                client.get_job_execution_result(timeout=CANCEL_WAIT_S)
            raise

    def close(self) -> None:
        self._sinks = []


def _sources(sinks: list[Transformation]) -> list[SourceTransformation]:
    seen: set[int] = set()
    found: list[SourceTransformation] = []
    stack = list(sinks)
    while stack:
        t = stack.pop()
        if t.id in seen:
            continue
        seen.add(t.id)
        if isinstance(t, SourceTransformation):
            found.append(t)
        stack.extend(t.inputs)
    return found
