"""The engines benchmarks/kafka.py runs on one Kafka job, behind one small interface.

The job: Kafka ``in`` -> parse ``"<key>,<ts>"`` -> key_by -> running count -> ``"<key>,<count>"``
-> Kafka ``out``, p=2 (benchmarks/kafka_load.py describes the records).

* :class:`UndertowEngine`: the job on undertow's ``local`` target (two worker processes) in
  this process, with KafkaSource and KafkaSink at a delivery guarantee and a checkpoint interval.
* :class:`SubprocessEngine`: a peer's job script (benchmarks/peers/kafka_spark_job.py,
  kafka_pyflink_job.py) as a subprocess that prints ``READY`` or ``FAILED <reason>`` and stops
  when its stdin closes.

Lifecycle: ``start`` once, then ``failure()`` any number of times, then ``stop`` once (also after
a failed start). Not thread-safe: the benchmark's main thread owns an engine.
"""

from __future__ import annotations

import contextlib
import io
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any, Protocol

from undertow.common import Configuration, Types, WatermarkStrategy
from undertow.common.serialization import SimpleStringSchema
from undertow.datastream import ProcessFunction, StreamExecutionEnvironment
from undertow.datastream.connectors.kafka import (
    DeliveryGuarantee,
    KafkaOffsetsInitializer,
    KafkaRecordSerializationSchema,
    KafkaSink,
    KafkaSource,
)

START_TIMEOUT_S = 240.0


class Engine(Protocol):
    """One run of the job on one engine."""

    #: The row's name in the tables, e.g. ``undertow EXACTLY_ONCE``.
    name: str
    #: The isolation level a consumer of the job's output needs.
    isolation: str
    #: How long (ms) an output record waits by design before such a consumer may see it (an
    #: exactly-once sink's commit after the checkpoint: up to one interval); the lag judge
    #: allows it (benchmarks/kafka_sustainable.py).
    wait_ms: float

    def start(self, bootstrap: str, source_topic: str, sink_topic: str) -> None:
        """Start the job; raise RuntimeError with the reason if it cannot."""

    def failure(self) -> str | None:
        """Why the job stopped on its own, or None while it runs."""

    def stop(self) -> None:
        """Stop the job and free what it holds; idempotent."""


class _Quiet(io.TextIOBase):
    """Keeps what the JobMaster writes to stderr (its console lines) off the tables."""

    def __init__(self) -> None:
        self.lines = io.StringIO()

    def write(self, text: str) -> int:
        self.lines.write(text)
        return len(text)


class UndertowEngine:
    """The job on undertow's ``local`` target, p=2, checkpoints every ``interval_ms``."""

    def __init__(self, guarantee: DeliveryGuarantee, interval_ms: int,
                 settings: dict[str, str] | None = None, label: str = "",
                 hops: bool = False) -> None:  # fmt: skip
        self.guarantee = guarantee
        #: carry per-hop stamps to the output (benchmarks/kafka_hops.py)
        self.hops = hops
        self.interval_ms = interval_ms
        self.settings = settings or {}
        self.name = f"undertow {guarantee.name}{label}"
        self.isolation = (
            "read_committed" if guarantee is DeliveryGuarantee.EXACTLY_ONCE else "read_uncommitted"
        )
        self.wait_ms = float(interval_ms) if guarantee is DeliveryGuarantee.EXACTLY_ONCE else 0.0
        self._client: Any = None
        self._directory = tempfile.TemporaryDirectory(prefix="undertow-kafka-bench-")
        self._console = _Quiet()
        self._saved_stderr: Any = None

    def start(self, bootstrap: str, source_topic: str, sink_topic: str) -> None:
        settings = {
            "execution.target": "local",
            "rest.port": "-1",
            "execution.checkpointing.interval": f"{self.interval_ms} ms",
            "execution.checkpointing.dir": self._directory.name,
            **{k: v for k, v in self.settings.items() if ":" not in k},
        }
        #: ``source:KEY`` / ``sink:KEY`` settings go to the source's / sink's set_property
        props = {side: {k.split(":", 1)[1]: v for k, v in self.settings.items()
                        if k.startswith(f"{side}:")} for side in ("source", "sink")}  # fmt: skip
        env = StreamExecutionEnvironment.get_execution_environment(Configuration(settings))
        env.set_parallelism(2)
        source = (
            KafkaSource.builder()
            .set_bootstrap_servers(bootstrap)
            .set_topics(source_topic)
            .set_group_id(f"bench-{sink_topic}")
            .set_starting_offsets(KafkaOffsetsInitializer.earliest())
            .set_value_only_deserializer(SimpleStringSchema())
            .set_properties(props["source"])
            .build()
        )
        sink_builder = (
            KafkaSink.builder()
            .set_bootstrap_servers(bootstrap)
            .set_record_serializer(
                KafkaRecordSerializationSchema.builder()
                .set_topic(sink_topic)
                .set_value_serialization_schema(SimpleStringSchema())
                .build()
            )
            .set_delivery_guarantee(self.guarantee)
            .set_transactional_id_prefix(f"bench-{sink_topic}")
        )
        for key, value in props["sink"].items():
            sink_builder.set_property(key, value)
        sink = sink_builder.build()
        stream = env.from_source(source, WatermarkStrategy.no_watermarks(), "in")
        if self.hops:
            _stamped_count(stream).sink_to(sink)
        else:
            pair = Types.TUPLE([Types.STRING(), Types.INT()])
            (
                # lambdas travel by value to the workers (this module is not on their path)
                stream.map(lambda v: (v.split(",", 1)[0], 1), output_type=pair)
                .key_by(lambda p: p[0])
                .sum(1)
                .map(lambda p: f"{p[0]},{p[1]}", output_type=Types.STRING())
                .sink_to(sink)
            )
        self._saved_stderr, sys.stderr = sys.stderr, self._console
        self._client = env.execute_async(f"kafka benchmark: {self.name}")

    def console(self) -> str:
        """What the JobMaster wrote to stderr since :meth:`start` (its console lines)."""
        return self._console.lines.getvalue()

    def failure(self) -> str | None:
        if self._client is None:
            return "not started"
        status = self._client.get_job_status().result()
        if status.name in ("CREATED", "RUNNING", "INITIALIZING"):
            return None
        # the JobMaster's last console line names the cause (a bare FAILED says nothing)
        lines = [line for line in self.console().splitlines() if line.strip()]
        return f"{status.name}: {lines[-1][:400]}" if lines else status.name

    def stop(self) -> None:
        client, self._client = self._client, None
        if client is not None:
            client.cancel()
            with contextlib.suppress(Exception):
                client.wait(timeout=60)
        if self._saved_stderr is not None:
            sys.stderr, self._saved_stderr = self._saved_stderr, None
        self._directory.cleanup()


def _stamped_count(stream: Any) -> Any:
    """The job's count with the stamps of benchmarks/kafka_hops.py: ``"<key>,<count>,<input
    append ms>,<source task ns>,<keyed task ns>"`` (the newest record's stamps). The same
    operators as the plain job (a map at the source, the keyed count, a map before the sink),
    with a process function at the source for the record's Kafka timestamp."""
    import time

    class Stamp(ProcessFunction):
        def process_element(self, value: str, ctx: Any) -> Any:
            yield value.split(",", 1)[0], 1, ctx.timestamp() or 0, time.time_ns()

    stamped = Types.TUPLE([Types.STRING(), Types.INT(), Types.LONG(), Types.LONG()])
    return (
        stream.process(Stamp(), output_type=stamped)
        .key_by(lambda p: p[0])
        .reduce(lambda a, b: (b[0], a[1] + b[1], b[2], b[3]))
        .map(lambda p: f"{p[0]},{p[1]},{p[2]},{p[3]},{time.time_ns()}", output_type=Types.STRING())
    )


class SubprocessEngine:
    """A peer's job script run as ``command`` plus the topics (see the module docstring)."""

    def __init__(
        self,
        name: str,
        isolation: str,
        command: list[str],
        env: dict[str, str] | None = None,
        scratch: str | None = None,
        wait_ms: float = 0.0,
    ) -> None:
        self.name = name
        self.wait_ms = wait_ms
        #: a folder of the run's own (a checkpoint location), deleted by :meth:`stop`
        self.scratch = scratch
        self.isolation = isolation
        self.command = command
        self.env = env
        self._process: subprocess.Popen[str] | None = None
        self._failure: str | None = None
        self._ready = threading.Event()
        self._stderr_tail: list[str] = []

    def start(self, bootstrap: str, source_topic: str, sink_topic: str) -> None:
        command = [*self.command, "--bootstrap", bootstrap, "--source-topic", source_topic,
                   "--sink-topic", sink_topic]  # fmt: skip
        self._process = subprocess.Popen(
            command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
            text=True, env=self.env,
        )  # fmt: skip
        threading.Thread(target=self._read_stdout, daemon=True).start()
        threading.Thread(target=self._read_stderr, daemon=True).start()
        deadline = time.monotonic() + START_TIMEOUT_S
        while not self._ready.is_set() and self._failure is None:
            if time.monotonic() > deadline:
                self._failure = f"no READY within {START_TIMEOUT_S:.0f} s"
            elif self._process.poll() is not None:
                time.sleep(0.5)  # let the reader threads take the last lines
                self._failure = self._failure or (
                    f"exited with {self._process.returncode}: {self._tail()}"
                )
            time.sleep(0.1)
        if self._failure is not None:
            raise RuntimeError(self._failure)

    def _read_stdout(self) -> None:
        assert self._process is not None and self._process.stdout is not None
        for line in self._process.stdout:
            if line.startswith("READY"):
                self._ready.set()
            elif line.startswith("FAILED "):
                self._failure = self._failure or line[len("FAILED ") :].strip()

    def _read_stderr(self) -> None:
        assert self._process is not None and self._process.stderr is not None
        for line in self._process.stderr:
            self._stderr_tail = [*self._stderr_tail[-40:], line.rstrip()]

    def _tail(self) -> str:
        return " | ".join(self._stderr_tail[-6:])

    def failure(self) -> str | None:
        if self._failure is None and self._process is not None and self._process.poll() is not None:
            self._failure = f"exited with {self._process.returncode}: {self._tail()}"
        return self._failure

    def stop(self) -> None:
        process, self._process = self._process, None
        if self.scratch is not None:
            shutil.rmtree(self.scratch, ignore_errors=True)
        if process is None:
            return
        with contextlib.suppress(Exception):
            assert process.stdin is not None
            process.stdin.close()
        try:
            process.wait(90)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


def spark_engine(mode: str, jars: list[Path]) -> SubprocessEngine:
    checkpoint = tempfile.mkdtemp(prefix=f"spark-kafka-{mode}-")
    script = Path(__file__).resolve().parent / "peers" / "kafka_spark_job.py"
    # real-time mode runs the source stage (2 tasks) and the shuffle stage (2 tasks) at once:
    # it refuses to start with fewer than 4 task slots, so it gets local[4] on the 2 cores
    master = "local[4]" if mode == "real-time" else "local[2]"
    command = [sys.executable, str(script), "--mode", mode, "--checkpoint", checkpoint,
               "--master", master, "--jars", ",".join(str(j) for j in jars)]  # fmt: skip
    return SubprocessEngine(f"Spark {mode} ({master})", "read_uncommitted", command,
                            scratch=checkpoint)  # fmt: skip


def pyflink_engine(guarantee: str, interval_ms: int, jar: Path, python: Path,
                   env: dict[str, str]) -> SubprocessEngine:  # fmt: skip
    script = Path(__file__).resolve().parent / "peers" / "kafka_pyflink_job.py"
    command = [str(python), str(script), "--guarantee", guarantee, "--interval-ms",
               str(interval_ms), "--jar", str(jar)]  # fmt: skip
    isolation = "read_committed" if guarantee == "EXACTLY_ONCE" else "read_uncommitted"
    wait_ms = float(interval_ms) if guarantee == "EXACTLY_ONCE" else 0.0
    return SubprocessEngine(f"PyFlink {guarantee}", isolation, command, env, wait_ms=wait_ms)
