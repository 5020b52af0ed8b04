"""Faults injected into a job running on the test cluster, and the running job as the cluster
tests see it (test_spark_hosts.py, test_kafka_hosts.py).

:func:`run_job` starts a job script (``oracle_job.py``, ``kafka_job.py``) as the driver's
process at the network's driver address with :func:`cluster_settings`, reads its
``REST <url> <job id>`` line, waits for its first completed checkpoints, applies each fault in
turn and returns the job's whole output once its process ended with 0. A fault is a function
of the :class:`RunningJob`: it acts on the cluster (kill a host, cut a link, stop processes,
cut the storage host) and waits, through the job's REST API, for what must follow (a restore,
more checkpoints, no restart).

Lifecycle: everything here runs on the test's thread; the job's process is killed if the test
fails before it ended.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
import urllib.request
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from . import netns
from .spark_cluster import S3_PORT, SparkCluster

HEARTBEAT_TIMEOUT_S = 4
#: A worker cut off the driver ends within the heartbeat timeout of its own (TCP_USER_TIMEOUT);
#: the slack is for the machine's load. Without the fence it lives as long as the cut.
FENCED_WITHIN_S = HEARTBEAT_TIMEOUT_S + 20
STORAGE_OUTAGE_S = 6


class JobEnded(AssertionError):
    """The job's process ended while the test waited for something of it."""


@dataclass
class RunningJob:
    """The oracle job of one scenario, as the test sees it: its process and REST API."""

    cluster: SparkCluster
    process: subprocess.Popen[str]
    url: str = ""
    job_id: str = ""
    output: list[str] = field(default_factory=list)

    def _checkpoints(self) -> dict[str, Any]:
        address = f"{self.url}/jobs/{self.job_id}/checkpoints"
        with urllib.request.urlopen(address, timeout=5) as response:
            body: dict[str, Any] = json.loads(response.read())
        return body

    def completed(self) -> int:
        return int(self._checkpoints()["counts"]["completed"])

    def failed(self) -> int:
        return int(self._checkpoints()["counts"]["failed"])

    def restored(self) -> int | None:
        restored = self._checkpoints()["latest"]["restored"]
        return None if restored is None else int(restored["id"])

    def wait(self, what: str, predicate: Callable[[], Any], timeout_s: float = 120) -> Any:
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise JobEnded(f"the job ended while waiting for {what}")
            try:
                value = predicate()
            except (OSError, ValueError, KeyError):
                value = None
            if value:
                return value
            time.sleep(0.2)
        raise AssertionError(f"timed out waiting for {what}")

    def assert_not_restarted(self, why: str) -> None:
        """No restore so far: asked of REST while the job runs, read from its output after."""
        if self.process.poll() is None:
            assert self.restored() is None, why
            return
        assert self.process.stdout is not None
        self.output.extend(self.process.stdout)
        assert not any("; restarting" in line for line in self.output), why

    def undertow_host(self) -> netns.Host:
        """A worker host where an undertow worker runs now."""
        hosts = self.wait("a host running an undertow worker",
                          self.cluster.hosts_running_undertow, 30)  # fmt: skip
        return hosts[0]  # type: ignore[no-any-return]

    def checkpoints_go_on(self, count: int = 2) -> None:
        """``count`` more checkpoints complete, or the job ends (it cannot end without its final
        checkpoint; its oracle is checked then): a loaded machine may end the bounded input
        before the last fault's checkpoints."""
        before = self.completed()
        try:
            self.wait(f"{count} more completed checkpoints",
                      lambda: self.completed() >= before + count)  # fmt: skip
        except JobEnded:
            if self.process.wait() != 0:
                raise


def kill_a_host_then_bring_it_back(job: RunningJob) -> None:
    """Every process of a host running an undertow worker is killed: the job restores on the
    other host; then the host's Spark worker starts again (its JVM starts while the restored
    attempt's checkpoints go on: one after the other, they took 20 s of a loaded machine)."""
    victim = job.undertow_host()
    killed = job.cluster.kill_host(victim)
    print(f"killed {killed} processes of {victim.name} ({victim.address})")
    job.wait("a restore after the kill", lambda: job.restored() is not None)
    job.cluster.start_worker(victim)
    job.checkpoints_go_on()
    job.cluster.wait_for_workers(len(job.cluster.workers))


def cut_a_host_past_the_heartbeat_timeout(job: RunningJob) -> None:
    """A host running an undertow worker is cut off for longer than the heartbeat timeout:
    the attempt fails and the job restores again once the host is healed."""
    first = job.restored()
    cut = job.undertow_host()
    cut.cut()
    try:
        time.sleep(HEARTBEAT_TIMEOUT_S + 2)
    finally:
        cut.heal()
    print(f"cut {cut.name} ({cut.address}) off for {HEARTBEAT_TIMEOUT_S + 2} s")
    job.wait("a restore after the partition", lambda: job.restored() not in (None, first))
    job.checkpoints_go_on()


def answers(host: netns.Host, address: str, port: int = 9) -> bool:
    """Whether ``address`` answers a TCP connection from ``host`` within 3 s (accepts it, or
    refuses it: port 9 has no listener, so a refusal shows the address is reached)."""
    probe = ("import socket, sys\ntry:\n"
             f"    socket.create_connection(({address!r}, {port}), timeout=3).close()\n"
             "except ConnectionRefusedError:\n    pass\n"
             "except OSError:\n    sys.exit(1)\n")  # fmt: skip
    return host.run([sys.executable, "-c", probe], timeout=30).returncode == 0


def cut_the_driver_off_a_host_that_still_reaches_storage(job: RunningJob) -> None:
    """Fencing: the driver (JobMaster) and a host running an undertow worker stop reaching each
    other, while the host still reaches the S3 store and the other hosts. The JobMaster fails
    the attempt after the heartbeat timeout and restores elsewhere; the old attempt's worker
    behind the cut must end by itself (it lost its JobMaster), before the cut heals, rather
    than run on next to the newer attempt. Then the cut heals and the oracle must hold."""
    cluster = job.cluster
    storage = cluster.storage
    assert storage is not None
    driver = cluster.network.driver_address
    first = job.restored()
    host, workers = job.wait(
        "a host with a process hosting an undertow worker",
        lambda: next(
            ((h, p) for h in cluster.workers if (p := cluster.undertow_worker_pids(h))), None
        ),
        30,
    )
    host.cut_from_driver(driver)
    try:
        cut_at = time.monotonic()
        assert answers(host, storage.address, S3_PORT), "the cut host lost the storage host too"
        assert not answers(host, driver), "the cut host still reaches the driver"

        def ended() -> bool:
            return not set(workers) & set(cluster.undertow_worker_pids(host))

        try:
            job.wait(f"the old attempt's worker (pid {workers}) behind the cut to end", ended,
                     FENCED_WITHIN_S)  # fmt: skip
        except AssertionError as err:
            raise AssertionError(f"{err}; the job said:\n{''.join(job.output[-30:])}") from err
        print(
            f"the worker on {host.name} ({host.address}), cut off the driver but reaching "
            f"storage, ended {time.monotonic() - cut_at:.1f} s after the cut"
        )
        job.wait("a restore elsewhere", lambda: job.restored() not in (None, first))
    finally:
        host.heal_from_driver(driver)
    job.checkpoints_go_on()


def cut_a_host_within_the_heartbeat_timeout(job: RunningJob) -> None:
    """A cut shorter than the heartbeat timeout: TCP rides it out, nothing restarts."""
    cut = job.undertow_host()
    cut.cut()
    try:
        time.sleep(HEARTBEAT_TIMEOUT_S / 3)
    finally:
        cut.heal()
    job.checkpoints_go_on(3)
    job.assert_not_restarted("a cut shorter than the heartbeat timeout restarted the job")


def stop_a_host_for_a_while(job: RunningJob) -> None:
    """Every process of a host running an undertow worker is stopped (SIGSTOP) for less than
    the heartbeat timeout: checkpoints complete again once it resumes, without a restart."""
    host = job.undertow_host()
    pids = job.cluster.pids(host)
    for pid in pids:
        os.kill(pid, signal.SIGSTOP)
    try:
        time.sleep(HEARTBEAT_TIMEOUT_S / 2)
    finally:
        for pid in pids:
            os.kill(pid, signal.SIGCONT)
    job.checkpoints_go_on(3)
    job.assert_not_restarted("a host stopped within the heartbeat timeout restarted the job")


def cut_the_storage_host_for_a_while(job: RunningJob) -> None:
    """The S3 store's host is cut off for several checkpoint timeouts: the checkpoints of that
    time fail (tolerated), the job does not restart, and checkpoints complete again once the
    store is back."""
    storage = job.cluster.storage
    assert storage is not None
    failed = job.failed()
    storage.cut()
    try:
        time.sleep(STORAGE_OUTAGE_S)
        # the job cannot end while the store is away (its final checkpoint cannot complete)
        assert job.failed() > failed, "no checkpoint failed while the store was cut off"
        assert job.restored() is None, "a tolerated storage outage restarted the job"
    finally:
        storage.heal()
    print(f"cut the storage host {storage.name} ({storage.address}) off for {STORAGE_OUTAGE_S} s")
    job.checkpoints_go_on(3)
    job.assert_not_restarted("a tolerated storage outage restarted the job")


Fault = Callable[[RunningJob], None]


def cluster_settings(cluster: SparkCluster, tmp_path: Path) -> dict[str, Any]:
    """The settings every job script on the cluster takes: the master, the driver's address,
    the checkpoint directory and a heartbeat timeout short enough for a test."""
    return {
        "spark.master": cluster.master_url,
        "spark.driver.host": cluster.network.driver_address,
        "spark.driver.bindAddress": cluster.network.driver_address,
        "execution.checkpointing.dir": cluster.checkpoint_dir(tmp_path / "checkpoints"),
        "heartbeat.interval": "500 ms",
        "heartbeat.timeout": f"{HEARTBEAT_TIMEOUT_S} s",
    }


def run_job(cluster: SparkCluster, tmp_path: Path, script: Path, settings: dict[str, Any],
            faults: list[Fault], checkpoints_first: int) -> str:  # fmt: skip
    """Run ``script`` with ``settings`` (JSON, its one argument) as the driver's process; after
    ``checkpoints_first`` completed checkpoints apply ``faults`` in turn; return the job's
    output once the process ended with 0 (else fail with its output and the cluster's logs)."""
    process = subprocess.Popen([sys.executable, str(script), json.dumps(settings)],
                               env=cluster.env(cluster.network.driver_address),
                               stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                               cwd=tmp_path)  # fmt: skip
    job = RunningJob(cluster, process)
    try:
        assert process.stdout is not None
        for line in process.stdout:
            job.output.append(line)
            if line.startswith("REST "):
                break
        job.url, job.job_id = job.output[-1].split()[1:3]
        job.wait(f"{checkpoints_first} completed checkpoints",
                 lambda: job.completed() >= checkpoints_first)  # fmt: skip
        for fault in faults:
            fault(job)
        job.output.extend(process.stdout)
        assert process.wait(300) == 0, "".join(job.output[-80:]) + cluster.logs()
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
    return "".join(job.output)
