"""A Spark standalone cluster of test hosts on one machine (issue 30).

:func:`spark_cluster` starts, on a :func:`~tests.cluster.netns.test_network`, a Spark master on
the first host and a Spark worker on each other one (``spark-class`` from the installed
pyspark, each process bound to and advertising its own host's address), and waits until every
worker registered. The driver (the job's process, with the JobMaster and REST) runs in this
namespace at the network's driver address, so control, data and Spark's own RPC all cross the
bridge. Checkpoint storage: with ``storage=True`` an S3 store (moto's server) on a host of its
own, which the driver and every Spark process reach through the ``AWS_*`` environment
(:attr:`SparkCluster.checkpoint_dir` is ``s3://...``); otherwise a directory of this machine,
which every host sees (the shared directory case).

With ``kafka=True`` a Kafka broker (tools/kafka_broker.py) runs on a host of its own too, at
:attr:`SparkCluster.kafka_bootstrap`, which every host reaches across the bridge.

Faults: :meth:`SparkCluster.kill_host` sends SIGKILL to every process of a host (its Spark
worker daemon, executor JVM, Python daemon and undertow worker); :meth:`Host.cut` /
:meth:`Host.heal` take its link down and up (the storage host's too).

Lifecycle: everything is stopped and removed when the context exits, also after a failure;
logs of the Spark processes are kept in ``log_dir`` for the failure message.
"""

from __future__ import annotations

import importlib.util
import json
import os
import signal
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pyspark

from . import netns

SPARK_HOME = os.path.dirname(pyspark.__file__)
MASTER_PORT = 7077
MASTER_UI_PORT = 8080
#: The process name of an undertow worker inside a Spark Python worker (deploy.spark_task).
UNDERTOW_WORKER = "undertow-worker"
S3_PORT = 5000
S3_BUCKET = "undertow-cluster"
KAFKA_PORT = 9092
KAFKA_CONTROLLER_PORT = 9093


@dataclass
class SparkCluster:
    network: netns.Network
    master: netns.Host
    workers: tuple[netns.Host, ...]
    log_dir: Path
    processes: list[subprocess.Popen[bytes]] = field(default_factory=list)
    starts: int = 0
    #: The host of the S3 store, or None: checkpoints go to a shared directory.
    storage: netns.Host | None = None
    #: The Kafka broker's host, or None.
    kafka: netns.Host | None = None

    @property
    def kafka_bootstrap(self) -> str:
        assert self.kafka is not None
        return f"{self.kafka.address}:{KAFKA_PORT}"

    @property
    def master_url(self) -> str:
        return f"spark://{self.master.address}:{MASTER_PORT}"

    def env(self, address: str) -> dict[str, str]:
        """The environment of a Spark process (or driver) on the host at ``address``."""
        env = dict(os.environ)
        env.update(SPARK_HOME=SPARK_HOME, SPARK_LOCAL_IP=address, PYSPARK_PYTHON=sys.executable,
                   PYSPARK_DRIVER_PYTHON=sys.executable, SPARK_LOG_DIR=str(self.log_dir),
                   PYTHONPATH=os.pathsep.join(p for p in sys.path if p))  # fmt: skip
        if self.storage is not None:
            env.update(AWS_ACCESS_KEY_ID="testing", AWS_SECRET_ACCESS_KEY="testing",
                       AWS_DEFAULT_REGION="us-east-1",
                       AWS_ENDPOINT_URL=self.s3_endpoint)  # fmt: skip
        return env

    @property
    def s3_endpoint(self) -> str:
        assert self.storage is not None
        return f"http://{self.storage.address}:{S3_PORT}"

    def checkpoint_dir(self, local: Path) -> str:
        """Where the job checkpoints: the S3 store's bucket, or ``local`` (shared)."""
        return f"s3://{S3_BUCKET}/checkpoints" if self.storage is not None else str(local)

    def alive_workers(self) -> int:
        """Workers the master counts as ALIVE (its UI's JSON), or -1 if it does not answer."""
        url = f"http://{self.master.address}:{MASTER_UI_PORT}/json/"
        try:
            with urllib.request.urlopen(url, timeout=5) as response:
                state = json.loads(response.read())
        except (OSError, ValueError):
            return -1
        return sum(1 for w in state.get("workers", []) if w.get("state") == "ALIVE")

    def pids(self, host: netns.Host) -> list[int]:
        listed = subprocess.run(["ip", "netns", "pids", host.name], capture_output=True,
                                text=True).stdout.split()  # fmt: skip
        return [int(pid) for pid in listed]

    def hosts_running_undertow(self) -> list[netns.Host]:
        """The worker hosts where an undertow worker runs now."""
        return [
            h for h in self.workers if any(_named(pid, UNDERTOW_WORKER) for pid in self.pids(h))
        ]

    def undertow_worker_pids(self, host: netns.Host) -> list[int]:
        """The processes of ``host`` that host an undertow worker now: named so themselves
        (``/proc/PID/comm``, the main thread's name; a thread started while a worker ran keeps
        the name after it ended, so :meth:`hosts_running_undertow` may still count them)."""
        found = []
        for pid in self.pids(host):
            try:
                with open(f"/proc/{pid}/comm") as f:
                    if f.read().strip() == UNDERTOW_WORKER:
                        found.append(pid)
            except OSError:
                continue
        return found

    def kill_host(self, host: netns.Host) -> int:
        """SIGKILL every process of ``host``; how many there were."""
        pids = self.pids(host)
        for pid in pids:
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        return len(pids)

    def start_worker(self, host: netns.Host, cores: int = 2) -> None:
        """Start a Spark worker on ``host`` (again, after :meth:`kill_host`)."""
        i = self.workers.index(host)
        self.starts += 1
        _start(self, host, f"worker{i}-{self.starts}", ["org.apache.spark.deploy.worker.Worker",
               "--host", host.address, "--cores", str(cores), "--memory", "2g",
               "--work-dir", str(self.log_dir / f"work{i}"), self.master_url])  # fmt: skip

    def wait_for_workers(self, count: int, timeout_s: float = 120) -> None:
        deadline = time.monotonic() + timeout_s
        while self.alive_workers() < count:
            if time.monotonic() > deadline:
                raise TimeoutError(
                    f"{count} Spark workers did not register with "
                    f"{self.master_url} in {timeout_s} s:\n{self.logs()}"
                )
            time.sleep(0.5)

    def logs(self, lines: int = 40) -> str:
        out = []
        for path in sorted(self.log_dir.glob("*.log")):
            text = path.read_text(errors="replace").splitlines()
            out.append(f"--- {path.name}\n" + "\n".join(text[-lines:]))
        return "\n".join(out)


def _named(pid: int, name: str) -> bool:
    """Whether a thread of ``pid`` carries ``name`` (set with prctl, so in its ``comm``)."""
    try:
        threads = os.listdir(f"/proc/{pid}/task")
    except OSError:
        return False
    for thread in threads:
        try:
            with open(f"/proc/{pid}/task/{thread}/comm") as f:
                if f.read().strip() == name:
                    return True
        except OSError:
            continue
    return False


@contextmanager
def spark_cluster(log_dir: Path, workers: int = 2, cores: int = 2, timeout_s: float = 120,
                  storage: bool = False,
                  kafka: bool = False) -> Iterator[SparkCluster]:  # fmt: skip
    """A master and ``workers`` workers of ``cores`` cores each, all registered, with
    ``storage`` an S3 store and with ``kafka`` a Kafka broker, each on a host of its own;
    stopped and removed on exit."""
    log_dir.mkdir(parents=True, exist_ok=True)
    with netns.test_network(hosts=1 + workers + int(storage) + int(kafka)) as network:
        master, *others = network.hosts
        broker_host = others.pop() if kafka else None
        store = others.pop() if storage else None
        cluster = SparkCluster(network, master, tuple(others), log_dir, storage=store,
                               kafka=broker_host)  # fmt: skip
        broker = None
        try:
            # every process is launched before any is waited for: the S3 store's Python, the
            # broker's and Spark's JVMs start side by side (one after the other, the S3 store
            # alone took 20 s of a loaded machine before the master was launched)
            if store is not None:
                moto = [sys.executable, "-m", "moto.server", "-H", store.address]
                _launch(cluster, store, "s3", [*moto, "-p", str(S3_PORT)])
            _start(cluster, master, "master", ["org.apache.spark.deploy.master.Master",
                   "--host", master.address, "--port", str(MASTER_PORT),
                   "--webui-port", str(MASTER_UI_PORT)])  # fmt: skip
            for host in cluster.workers:
                cluster.start_worker(host, cores)
            if broker_host is not None:
                broker = _start_kafka(broker_host)
            if store is not None:
                _wait_for_s3(cluster, store)
            cluster.wait_for_workers(workers, timeout_s)
            yield cluster
        finally:
            if broker is not None:
                broker.stop()
            for host in network.hosts:
                cluster.kill_host(host)
            for process in cluster.processes:
                try:
                    process.wait(10)
                except subprocess.TimeoutExpired:
                    pass


def _wait_for_s3(cluster: SparkCluster, host: netns.Host, timeout_s: float = 60) -> None:
    """Until moto's S3 server (launched on ``host``) answers; then the bucket is made."""
    deadline = time.monotonic() + timeout_s
    while True:
        made = subprocess.run(
            [sys.executable, "-c", "import fsspec; fsspec.filesystem('s3').mkdir("
             f"{S3_BUCKET!r})"],
            env=cluster.env(cluster.network.driver_address), capture_output=True, text=True,
        )  # fmt: skip
        if made.returncode == 0:
            return
        if time.monotonic() > deadline:
            raise TimeoutError(f"the S3 store on {host.address} did not answer: {made.stderr}")
        time.sleep(0.5)


def _start_kafka(host: netns.Host) -> Any:
    """tools/kafka_broker.py's broker on ``host``, answering (it removes its folder on stop)."""
    path = Path(__file__).resolve().parents[2] / "tools" / "kafka_broker.py"
    spec = importlib.util.spec_from_file_location("undertow_tools_kafka_broker", path)
    assert spec is not None and spec.loader is not None
    module = sys.modules.get(spec.name) or importlib.util.module_from_spec(spec)
    if spec.name not in sys.modules:
        sys.modules[spec.name] = module
        spec.loader.exec_module(module)
    broker = module.KafkaBroker(port=KAFKA_PORT, controller_port=KAFKA_CONTROLLER_PORT,
                                host=host.address, wrap=tuple(host.command([])))  # fmt: skip
    return broker.start()


def _start(cluster: SparkCluster, host: netns.Host, name: str, args: list[str]) -> None:
    _launch(cluster, host, name, [os.path.join(SPARK_HOME, "bin", "spark-class"), *args])


def _launch(cluster: SparkCluster, host: netns.Host, name: str, argv: list[str]) -> None:
    log = open(cluster.log_dir / f"{name}.log", "wb")  # noqa: SIM115 - the process owns it
    command = host.command(argv)
    cluster.processes.append(subprocess.Popen(command, env=cluster.env(host.address),
                                              stdout=log, stderr=subprocess.STDOUT))  # fmt: skip
    log.close()
