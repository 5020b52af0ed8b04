"""A single-node Kafka broker (KRaft, no ZooKeeper, no Docker) for undertow's tests and examples.

The broker is Apache Kafka's own, run from its Maven jars: ``tools/kafka/pom.xml`` names the
version, :func:`fetch_jars` copies the broker and its runtime classpath once into
``.cache/kafka/<version>/libs`` (an ignored folder) with Maven's dependency plugin, and
:class:`KafkaBroker` then

1. writes a ``server.properties`` into a fresh temporary folder: broker and controller in one
   process on two free loopback ports, every internal topic (consumer offsets, transaction
   state, share-group state) with replication factor 1 and min ISR 1 and one partition, so
   transactions work on one broker and the first ``init_transactions`` is quick;
2. formats the storage (``kafka.tools.StorageTool format --standalone``);
3. starts ``kafka.Kafka`` with a small heap, and waits until a client can list topics;
4. stops it (SIGTERM, then SIGKILL) and deletes the folder, also when the caller fails or is
   interrupted. The JVM is also told to die with the Python process that started it
   (``PR_SET_PDEATHSIG``), so a killed test run leaves no broker behind.

Usage::

    python tools/kafka_broker.py            # fetch once, run in the foreground, Ctrl-C stops
    python tools/kafka_broker.py --fetch    # only fetch the jars (make test depends on this)

    with KafkaBroker() as broker:           # from Python (tests/connectors/kafka/conftest.py)
        print(broker.bootstrap_servers)

Topics are not created automatically (``auto.create.topics.enable=false``): a typo in a topic
name must fail loudly, and tests create what they read and write.
"""

from __future__ import annotations

import argparse
import base64
import contextlib
import ctypes
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path
from types import TracebackType

ROOT = Path(__file__).resolve().parents[1]
POM = ROOT / "tools" / "kafka" / "pom.xml"
CACHE = ROOT / ".cache" / "kafka"

#: The broker's JVM: a small heap, quick start (C1 only) and a single-threaded collector;
#: enough for tests, which move megabytes, not gigabytes.
JVM_OPTIONS = (
    "-Xms64m",
    "-Xmx384m",
    "-XX:+UseSerialGC",
    "-XX:TieredStopAtLevel=1",
    "-Djava.awt.headless=true",
)
#: The JVM of Kafka's own start scripts (kafka-server-start.sh's heap, kafka-run-class.sh's
#: ``KAFKA_JVM_PERFORMANCE_OPTS``): the full JIT and G1, as brokers run in production. For
#: benchmarks (``benchmarks/kafka.py --broker-jvm server``), where the broker's CPU per
#: request competes with the job's on the same cores.
SERVER_JVM_OPTIONS = (
    "-Xms1g",
    "-Xmx1g",
    "-server",
    "-XX:+UseG1GC",
    "-XX:MaxGCPauseMillis=20",
    "-XX:InitiatingHeapOccupancyPercent=35",
    "-XX:+ExplicitGCInvokesConcurrent",
    "-Djava.awt.headless=true",
)
START_TIMEOUT_S = 120.0
STOP_TIMEOUT_S = 15.0

_LOG4J2 = """\
status = error
appender.file.type = File
appender.file.name = file
appender.file.fileName = {log}
appender.file.layout.type = PatternLayout
appender.file.layout.pattern = [%d] %p %m (%c)%n
rootLogger.level = WARN
rootLogger.appenderRef.file.ref = file
logger.started.name = kafka.server.KafkaRaftServer
logger.started.level = INFO
"""


def kafka_version() -> str:
    """The broker version ``tools/kafka/pom.xml`` pins."""
    match = re.search(r"<kafka\.version>([^<]+)</kafka\.version>", POM.read_text())
    if match is None:
        raise RuntimeError(f"{POM}: no <kafka.version> property")
    return match.group(1)


def libs_dir(version: str | None = None) -> Path:
    return CACHE / (version or kafka_version()) / "libs"


def fetch_jars(quiet: bool = False) -> Path:
    """Copy the broker's jars from Maven Central into the cache, once; returns the folder.

    A folder counts only when complete (a ``.complete`` marker written last), so an
    interrupted download is fetched again."""
    version = kafka_version()
    target = libs_dir(version)
    if (target / ".complete").exists():
        return target
    if shutil.which("mvn") is None:
        raise RuntimeError("fetching the Kafka broker needs Maven (`mvn`); install it (apt: maven)")
    staging = target.with_name("libs.partial")
    shutil.rmtree(staging, ignore_errors=True)
    command = [
        "mvn",
        "-B",
        "-q",
        "-f",
        str(POM),
        "dependency:copy-dependencies",
        f"-DoutputDirectory={staging}",
        "-DincludeScope=runtime",
    ]
    if not quiet:
        print(f"fetching Kafka {version} jars: {' '.join(command)}", file=sys.stderr)
    done = subprocess.run(command, capture_output=True, text=True)
    if done.returncode != 0 or not (staging / f"kafka_2.13-{version}.jar").exists():
        raise RuntimeError(
            f"could not fetch the Kafka {version} broker from Maven Central "
            f"(exit {done.returncode}): {' '.join(command)}\n{done.stdout[-3000:]}"
            f"{done.stderr[-3000:]}"
        )
    (staging / ".complete").write_text(version + "\n")
    shutil.rmtree(target, ignore_errors=True)
    staging.rename(target)
    return target


#: How many times :meth:`KafkaBroker.start` tries ports it chose itself.
PORT_ATTEMPTS = 3

#: What the JVM's BindException says when a port was taken.
ADDRESS_IN_USE = "Address already in use"


class _PortTaken(RuntimeError):
    """The broker exited while starting because a port it was to listen on was taken."""


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def cluster_id() -> str:
    """A random cluster id in Kafka's format (16 bytes, URL-safe base64 without padding).
    Like Kafka's ``Uuid.randomUuid`` it never starts with "-", which the storage tool's
    command line would take for an option."""
    while True:
        text = base64.urlsafe_b64encode(uuid.uuid4().bytes).decode().rstrip("=")
        if not text.startswith("-"):
            return text


def _die_with_parent() -> None:
    """In the child, before exec: SIGKILL when the parent process dies (Linux only)."""
    with contextlib.suppress(Exception):
        libc = ctypes.CDLL("libc.so.6", use_errno=True)
        libc.prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG


def server_properties(
    port: int, controller_port: int, data_dir: Path, host: str = "127.0.0.1"
) -> str:
    settings = {
        "process.roles": "broker,controller",
        "node.id": "1",
        "controller.quorum.bootstrap.servers": f"{host}:{controller_port}",
        "listeners": f"PLAINTEXT://{host}:{port},CONTROLLER://{host}:{controller_port}",
        "advertised.listeners": f"PLAINTEXT://{host}:{port}",
        "controller.listener.names": "CONTROLLER",
        "inter.broker.listener.name": "PLAINTEXT",
        "listener.security.protocol.map": "CONTROLLER:PLAINTEXT,PLAINTEXT:PLAINTEXT",
        "log.dirs": str(data_dir),
        "num.partitions": "1",
        "auto.create.topics.enable": "false",
        # transactions and consumer groups on one broker
        "offsets.topic.replication.factor": "1",
        "offsets.topic.num.partitions": "1",
        "transaction.state.log.replication.factor": "1",
        "transaction.state.log.min.isr": "1",
        "transaction.state.log.num.partitions": "1",
        "share.coordinator.state.topic.replication.factor": "1",
        "share.coordinator.state.topic.min.isr": "1",
        "group.initial.rebalance.delay.ms": "0",
        # a small machine: few threads, a small log-cleaner buffer (the default 128 MiB would
        # not fit the small heap)
        "num.network.threads": "2",
        "num.io.threads": "2",
        "background.threads": "2",
        "num.recovery.threads.per.data.dir": "1",
        "log.cleaner.dedupe.buffer.size": str(8 * 1024 * 1024),
    }
    return "".join(f"{key}={value}\n" for key, value in settings.items())


class KafkaBroker:
    """One broker process. ``start()`` returns when a client can talk to it; ``stop()`` is
    idempotent and always removes the temporary folder. Not thread-safe: one owner.

    ``host``: the address it listens on and advertises (loopback by default); ``wrap``: a
    command prefix its JVMs run under, e.g. ``ip netns exec NAME`` to run it on a test host of
    tests/cluster (which then passes that host's address and fixed ports); ``jvm_options``:
    the broker's JVM settings (:data:`JVM_OPTIONS`, or :data:`SERVER_JVM_OPTIONS`)."""

    def __init__(
        self,
        port: int | None = None,
        libs: Path | None = None,
        host: str = "127.0.0.1",
        wrap: tuple[str, ...] = (),
        controller_port: int | None = None,
        jvm_options: tuple[str, ...] = JVM_OPTIONS,
    ) -> None:
        self.jvm_options = jvm_options
        self._wanted_port = port
        self._wanted_controller_port = controller_port
        self._libs = libs
        self.host = host
        self.wrap = wrap
        self.port = 0
        self.process: subprocess.Popen[bytes] | None = None
        self.workdir: Path | None = None
        #: Seconds from ``start()`` to a broker answering (format included).
        self.start_seconds = 0.0

    @property
    def bootstrap_servers(self) -> str:
        return f"{self.host}:{self.port}"

    @property
    def log_file(self) -> Path:
        assert self.workdir is not None
        return self.workdir / "broker.log"

    def _java(self, libs: Path, *args: str) -> list[str]:
        return [
            *self.wrap,
            "java",
            *self.jvm_options,
            f"-Dlog4j2.configurationFile={self.workdir}/log4j2.properties",
            "-cp",
            f"{libs}/*",
            *args,
        ]

    def start(self) -> KafkaBroker:
        """Start the broker and wait until it answers. Ports it chose itself (none given) are
        free when chosen but bound only when the JVM is up, seconds later; if another process
        took one meanwhile (the broker exits with ``Address already in use``), it starts again
        on new ports, at most :data:`PORT_ATTEMPTS` times. A port that was given is not
        replaced."""
        began = time.monotonic()
        libs = self._libs or fetch_jars()
        chose_ports = self._wanted_port is None or self._wanted_controller_port is None
        for attempt in range(1, PORT_ATTEMPTS + 1):
            try:
                self._start_once(libs, began)
            except _PortTaken:
                if not chose_ports or attempt == PORT_ATTEMPTS:
                    raise
                continue
            break
        self.start_seconds = time.monotonic() - began
        return self

    def _start_once(self, libs: Path, began: float) -> None:
        self.workdir = Path(tempfile.mkdtemp(prefix="undertow-kafka-"))
        try:
            self.port = self._wanted_port or free_port()
            controller_port = self._wanted_controller_port or free_port()
            config = self.workdir / "server.properties"
            config.write_text(
                server_properties(self.port, controller_port, self.workdir / "data", self.host)
            )
            (self.workdir / "log4j2.properties").write_text(_LOG4J2.format(log=self.log_file))
            formatted = subprocess.run(
                self._java(
                    libs,
                    "kafka.tools.StorageTool",
                    "format",
                    "--standalone",
                    "-t",
                    cluster_id(),
                    "-c",
                    str(config),
                ),
                capture_output=True,
                text=True,
                preexec_fn=_die_with_parent,
            )
            if formatted.returncode != 0:
                raise RuntimeError(
                    f"formatting the Kafka storage in {self.workdir} failed "
                    f"(exit {formatted.returncode}): {formatted.stderr[-2000:]}"
                )
            with open(self.workdir / "stdout.log", "wb") as out:
                self.process = subprocess.Popen(
                    self._java(libs, "kafka.Kafka", str(config)),
                    stdout=out,
                    stderr=subprocess.STDOUT,
                    stdin=subprocess.DEVNULL,
                    preexec_fn=_die_with_parent,
                )
            self._wait_ready(began + START_TIMEOUT_S)
        except BaseException:
            self.stop()
            raise

    def _wait_ready(self, deadline: float) -> None:
        from confluent_kafka.admin import AdminClient

        # log_level 2: no connection-refused lines while the broker is still starting
        admin = AdminClient({"bootstrap.servers": self.bootstrap_servers, "log_level": 2})
        while True:
            assert self.process is not None
            if self.process.poll() is not None:
                log = self._log_tail()
                if ADDRESS_IN_USE in log:
                    raise _PortTaken(
                        f"the Kafka broker could not bind {self.bootstrap_servers} or its "
                        f"controller port; its log:\n{log}"
                    )
                raise RuntimeError(
                    f"the Kafka broker exited with {self.process.returncode} while starting; "
                    f"its log:\n{log}"
                )
            try:
                admin.list_topics(timeout=1.0)
                return
            except Exception as err:  # KafkaException while the broker is not up yet
                if time.monotonic() > deadline:
                    raise RuntimeError(
                        f"the Kafka broker at {self.bootstrap_servers} did not answer within "
                        f"{START_TIMEOUT_S:.0f} s ({err}); its log:\n{self._log_tail()}"
                    ) from err
                time.sleep(0.2)

    def _log_tail(self) -> str:
        parts = []
        for name in ("stdout.log", "broker.log"):
            path = self.workdir / name if self.workdir else None
            if path is not None and path.exists():
                parts.append(path.read_text(errors="replace")[-3000:])
        return "\n".join(parts) or "(empty)"

    def stop(self) -> None:
        process, self.process = self.process, None
        if process is not None and process.poll() is None:
            process.terminate()
            try:
                process.wait(STOP_TIMEOUT_S)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()
        workdir, self.workdir = self.workdir, None
        if workdir is not None:
            shutil.rmtree(workdir, ignore_errors=True)

    def kill(self) -> None:
        """SIGKILL the broker but keep its folder (a crash; :meth:`restart` brings it back)."""
        assert self.process is not None
        self.process.kill()
        self.process.wait()

    def restart(self) -> None:
        """Start the broker again on the same ports and data after :meth:`kill`/a crash."""
        assert self.workdir is not None and self.process is not None
        began = time.monotonic()
        with open(self.workdir / "stdout.log", "ab") as out:
            self.process = subprocess.Popen(
                self._java(
                    self._libs or libs_dir(), "kafka.Kafka", str(self.workdir / "server.properties")
                ),
                stdout=out,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
                preexec_fn=_die_with_parent,
            )
        self._wait_ready(began + START_TIMEOUT_S)

    def __enter__(self) -> KafkaBroker:
        return self.start()

    def __exit__(
        self,
        kind: type[BaseException] | None,
        value: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--fetch", action="store_true", help="only fetch the jars, then exit")
    parser.add_argument("--port", type=int, default=None, help="broker port (default: a free one)")
    args = parser.parse_args(argv)
    libs = fetch_jars()
    if args.fetch:
        print(f"Kafka {kafka_version()} jars in {libs}")
        return 0
    broker = KafkaBroker(port=args.port, libs=libs)
    # SIGTERM (as from `kill`) ends the wait like Ctrl-C does, so the finally clause runs
    signal.signal(signal.SIGTERM, lambda *_: (_ for _ in ()).throw(KeyboardInterrupt()))
    try:
        broker.start()
        print(f"Kafka {kafka_version()} broker ready in {broker.start_seconds:.1f} s")
        print(f"bootstrap servers: {broker.bootstrap_servers}")
        print(f"  export UNDERTOW_KAFKA_BOOTSTRAP={broker.bootstrap_servers}")
        print("Ctrl-C stops it (its data is deleted)", flush=True)
        while broker.process is not None and broker.process.poll() is None:
            time.sleep(0.5)
        print(f"the broker exited; its log:\n{broker._log_tail()}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        return 0
    finally:
        broker.stop()


if __name__ == "__main__":
    sys.exit(main())
