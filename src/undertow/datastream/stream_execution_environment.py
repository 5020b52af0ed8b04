"""``StreamExecutionEnvironment``: where a job is declared and from where it is executed.

PyFlink's class and method names. Declaring a stream records transformations; ``execute``
builds the stream graph and the job graph (finding misuse with operator names), deploys the job
on ``execution.target`` and waits for it.

Its getters read the configuration each call (what is configured now); the runtime reads
options once, into its settings objects. Not thread-safe: declare the job from one thread.
``execute_async`` returns a thread-safe :class:`~undertow.datastream.job_client.JobClient`.
"""

from __future__ import annotations

import contextlib
import logging
import sys
from collections.abc import Iterable
from numbers import Integral
from typing import Any

from undertow.common import python_dependencies as dependencies
from undertow.common.execution_config import ExecutionConfig
from undertow.common.restart_strategy import RestartStrategyConfiguration
from undertow.common.typeinfo_basic import ConformingType, TypeInformation
from undertow.connectors.source import SourceLike, is_bounded, produced_type
from undertow.core.config import Configuration, Options, default_parallelism
from undertow.core.errors import GraphBuildError
from undertow.datastream.checkpoint_config import CheckpointConfig, CheckpointingMode
from undertow.datastream.connectors.collection import CollectionSource
from undertow.datastream.data_stream import DataStream
from undertow.datastream.execution_mode import RuntimeExecutionMode
from undertow.datastream.job_client import JobClient
from undertow.datastream.slot_sharing_group import SlotSharingGroup
from undertow.datastream.state_backend import StateBackend, state_backend_of
from undertow.graph.execution_plan import plan_json
from undertow.graph.job_graph import JobGraph, build_job_graph
from undertow.graph.stream_graph import StreamGraph, build_stream_graph
from undertow.graph.transformations import SourceTransformation, Transformation
from undertow.runtime.master.job_master import JobExecutionResult
from undertow.runtime.task.output_check import as_delivered, bools_as_ints

log = logging.getLogger(__name__)

_CHANGELOG = "state.changelog.enabled"
#: How long ``execute`` waits for a cancelled job's workers after Ctrl-C.
CANCEL_WAIT_S = 30.0

#: Options set by ``undertow run`` (``--parallelism``, ``--target``, ``-D``) for the job script it
#: runs; every environment starts from them, then applies its own configuration.
CLI_DEFAULTS = Configuration()


class StreamExecutionEnvironment:
    def __init__(self, configuration: Configuration | None = None) -> None:
        self._config = Configuration(CLI_DEFAULTS)
        if configuration is not None:
            self._config.add_all(configuration)
        self._sinks: list[Transformation] = []
        self._execution_config = ExecutionConfig(self._config)
        self._slot_sharing_groups: dict[str, SlotSharingGroup] = {}
        self._cached_files: list[tuple[str, str, bool]] = []
        #: (operator's transformation id, side output id) -> the type it was requested with
        self._side_output_types: dict[tuple[int, str], Any] = {}
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
        if (
            isinstance(parallelism, bool)
            or not isinstance(parallelism, Integral)
            or (parallelism < 1)
        ):
            raise GraphBuildError(f"parallelism must be an int >= 1, got {parallelism!r}")
        self._config.set(Options.PARALLELISM, int(parallelism))
        return self

    def get_parallelism(self) -> int:
        """``parallelism.default``, or the machine's cores for a job on one machine."""
        return default_parallelism(self._config)

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
        return self

    def get_state_backend(self) -> StateBackend:
        return state_backend_of(self._config)

    def set_restart_strategy(
        self, restart_strategy_configuration: RestartStrategyConfiguration
    ) -> StreamExecutionEnvironment:
        """Use this restart strategy (``RestartStrategies.failure_rate_restart(...)`` and the
        like): writes Flink's ``restart-strategy.*`` keys (PyFlink 1.x's method)."""
        self._execution_config.set_restart_strategy(restart_strategy_configuration)
        return self

    def get_restart_strategy(self) -> RestartStrategyConfiguration:
        return self._execution_config.get_restart_strategy()

    def get_checkpoint_config(self) -> CheckpointConfig:
        return CheckpointConfig(self._config)

    def get_checkpoint_interval(self) -> int:
        """Milliseconds between checkpoints; -1 while checkpointing is off (as PyFlink)."""
        return self.get_checkpoint_config().get_checkpoint_interval()

    def get_checkpointing_mode(self) -> CheckpointingMode:
        return self.get_checkpoint_config().get_checkpointing_mode()

    def get_checkpointing_consistency_mode(self) -> CheckpointingMode:
        return self.get_checkpointing_mode()

    def is_unaligned_checkpoints_enabled(self) -> bool:
        return self.get_checkpoint_config().is_unaligned_checkpoints_enabled()

    def is_force_unaligned_checkpoints(self) -> bool:
        return self.get_checkpoint_config().is_force_unaligned_checkpoints()

    def enable_changelog_state_backend(self, enabled: bool) -> StreamExecutionEnvironment:
        """Recorded as ``state.changelog.enabled`` (PyFlink's key). undertow has no changelog
        state backend; its checkpoints do not change with this setting."""
        self._config.set_string(_CHANGELOG, "true" if enabled else "false")
        return self

    def is_changelog_state_backend_enabled(self) -> bool | None:
        """None until the job set it (as PyFlink), else the recorded value."""
        if not self._config.contains_key(_CHANGELOG):
            return None
        return self._config.get_string(_CHANGELOG, "false").lower() == "true"

    def set_default_savepoint_directory(self, directory: str) -> StreamExecutionEnvironment:
        self._config.set(Options.SAVEPOINT_DIR, str(directory))
        return self

    def get_default_savepoint_directory(self) -> str | None:
        return self._config.get(Options.SAVEPOINT_DIR) or None

    def set_default_local_parallelism(self, parallelism: int) -> StreamExecutionEnvironment:
        """PyFlink's local-environment default parallelism: the job's default parallelism."""
        return self.set_parallelism(parallelism)

    def get_default_local_parallelism(self) -> int:
        return self.get_parallelism()

    def register_slot_sharing_group(
        self, slot_sharing_group: SlotSharingGroup
    ) -> StreamExecutionEnvironment:
        """Register a group's resource profile by name (operators name their group with
        ``slot_sharing_group``). Registering a name again replaces its profile."""
        if not isinstance(slot_sharing_group, SlotSharingGroup):
            raise TypeError(
                f"register_slot_sharing_group: expected a SlotSharingGroup, got "
                f"{slot_sharing_group!r}"
            )
        self._slot_sharing_groups[slot_sharing_group.get_name()] = slot_sharing_group
        return self

    def get_slot_sharing_group(self, name: str) -> SlotSharingGroup | None:
        """The profile registered under ``name``, or None."""
        return self._slot_sharing_groups.get(name)

    # java dependencies: PyFlink's calls, taken so that its programs port unchanged ------------
    def add_jars(self, *jars_path: str) -> None:
        """PyFlink's: jars for Java connectors. undertow runs no JVM and its connectors are
        Python (Kafka through confluent-kafka), so the jars are not loaded; logged, once a
        call, so that the line can go from the ported program."""
        _java_not_loaded("add_jars", jars_path)

    def add_classpaths(self, *classpaths: str) -> None:
        """PyFlink's: Java class paths; as :meth:`add_jars`, logged and not loaded."""
        _java_not_loaded("add_classpaths", classpaths)

    # python dependencies ---------------------------------------------------------------------
    def add_python_file(self, file_path: str) -> None:
        """Ship a Python file, package directory or zip/egg to every worker and put it on
        their ``sys.path`` (``python.files``, comma-separated, as PyFlink)."""
        dependencies.add_python_file(self._config, file_path)

    def add_python_archive(self, archive_path: str, target_dir: str | None = None) -> None:
        """Ship an archive (zip, tar, tar.gz) that every worker unpacks into its working
        directory, under ``target_dir`` or the archive's file name (``python.archives``)."""
        dependencies.add_python_archive(self._config, archive_path, target_dir)

    def set_python_requirements(
        self, requirements_file_path: str, requirements_cache_dir: str | None = None
    ) -> None:
        """Packages every worker installs with pip before the job runs (``python.requirements``),
        from the index, or only from ``requirements_cache_dir`` when it is given."""
        dependencies.set_python_requirements(
            self._config, requirements_file_path, requirements_cache_dir
        )

    def set_python_executable(self, python_exec: str) -> None:
        """The interpreter the workers run (``python.executable``)."""
        self._config.set_string(dependencies.PYTHON_EXECUTABLE, python_exec)

    def register_cached_file(self, file_path: str, name: str, executable: bool = False) -> None:
        """Ship a file to every worker under ``name`` in its working directory (Flink's
        distributed cache; ``undertow.cached-files``)."""
        dependencies.register_cached_file(self._config, file_path, name, executable)

    # sources --------------------------------------------------------------------------------
    def from_collection(self, collection: Iterable[Any], type_info: Any = None) -> DataStream:
        elements = list(collection)
        if isinstance(type_info, ConformingType):
            conformed = []
            for index, element in enumerate(elements):
                try:
                    conformed.append(type_info.conform(element))
                except (TypeError, ValueError) as err:  # a row of the wrong arity, say
                    raise GraphBuildError(
                        f"from_collection: element {index} ({element!r:.200}) does not fit "
                        f"{type_info!r}: {err}"
                    ) from err
            elements = conformed
            for index, element in enumerate(elements):
                problem = type_info.check(element)
                if problem is not None:  # Java would narrow silently; refuse instead
                    raise GraphBuildError(
                        f"from_collection: element {index} ({element!r}) does not fit "
                        f"{type_info!r}: {problem}"
                    )
            if isinstance(type_info, TypeInformation) and elements:
                # as the type delivers them (an int under DOUBLE a float, a bool under LONG an
                # int); PyFlink 2.3 fails such a job instead (its conversion makes them null)
                for convert in (as_delivered(type_info), bools_as_ints(type_info)):
                    if convert is not None:
                        elements = convert(elements)
        t = SourceTransformation(
            name="Source: Collection Source", source=CollectionSource(elements),
            parallelism=1, max_parallelism=1, parallelism_set=True, output_type=type_info,
        )  # fmt: skip
        return DataStream(self, t)

    def from_source(
        self, source: Any, watermark_strategy: Any, source_name: str, type_info: Any = None
    ) -> DataStream:
        if not isinstance(source, SourceLike):
            raise GraphBuildError(
                f"from_source('{source_name}'): {source!r} is not a Source (it needs "
                "create_reader(), create_enumerator() and get_boundedness())"
            )
        if type_info is None:
            type_info = produced_type(source)
        t = SourceTransformation(
            name=f"Source: {source_name}", source=source, watermark_strategy=watermark_strategy,
            output_type=type_info,
        )  # fmt: skip
        return DataStream(self, t)

    # execution ------------------------------------------------------------------------------
    def _add_sink(self, transformation: Transformation) -> None:
        self._sinks.append(transformation)

    def _request_side_output(self, producer: Transformation, tag_id: str, type_info: Any) -> None:
        """Refuses a side output id that ``producer`` was already asked for with another type,
        as Flink's ``getSideOutput`` does: both streams would carry the same records."""
        previous = self._side_output_types.setdefault((producer.id, tag_id), type_info)
        if previous != type_info:

            def shown(t: Any) -> str:
                return "no type (pickled objects)" if t is None else repr(t)

            raise GraphBuildError(
                f"get_side_output(): a side output with the id '{tag_id}' of operator "
                f"'{producer.name}' was already requested with {shown(previous)}, now with "
                f"{shown(type_info)}; side output ids must be unique (give each OutputTag its "
                "own id)"
            )

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
        """The job's plan as Flink's JSON (:mod:`undertow.graph.execution_plan`): nodes with
        ``id``, ``type``, ``pact``, ``contents``, ``parallelism`` and ``predecessors``."""
        return plan_json(self.get_stream_graph())

    def _job_graph(self, job_name: str) -> JobGraph:
        graph = build_job_graph(self.get_stream_graph(job_name))
        return graph

    def _effective_config(self) -> Configuration:
        config = Configuration(self._config)
        mode = config.get(Options.RUNTIME_MODE)
        if mode == "AUTOMATIC":
            bounded = all(
                isinstance(t.source, SourceLike) and is_bounded(t.source)
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
            return client.wait()
        except KeyboardInterrupt:
            sys.stderr.write("[undertow] interrupted: cancelling the job\n")
            client.cancel()
            with contextlib.suppress(Exception):
                client.wait(timeout=CANCEL_WAIT_S)
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


def _java_not_loaded(call: str, paths: tuple[str, ...]) -> None:
    log.warning(
        "%s(%s): undertow runs no JVM and its connectors are Python (Kafka through "
        "confluent-kafka), so Java jars and class paths are not loaded; the call can go",
        call, ", ".join(map(repr, paths)),
    )  # fmt: skip
