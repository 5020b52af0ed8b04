"""undertow across hosts against the same job on one host (issue 30), on a Spark standalone
cluster of test hosts built on this machine (network namespaces on a bridge; needs root).

Job (benchmarks/jobs/cluster_job.py): numbers -> map -> key_by (1,000 keys) -> running sum ->
discarding sink, p=2, checkpoints every 200 ms. Layouts, each on a fresh cluster in the same
run:

* ``one host``: one Spark worker host with 2 cores: both undertow workers on it;
* ``two hosts``: two worker hosts with 1 core each: one undertow worker per host, so every
  exchange crosses the bridge.

Checkpoints go to an S3 store (moto's server) on a host of its own, which every host reaches
across the bridge (``--storage shared``: a directory of this machine instead).

Rows: records/s (records / time from RUNNING to the end) and checkpoint p50 and p99 (end to
end, from the job's REST history, every completed checkpoint of the runs); then, on ``two
hosts`` with a throttled job, the time from killing a host with everything on it to records
flowing again (the source writing records in the restored attempt), and the time from healing
a host cut off past the heartbeat timeout to the next completed checkpoint. The hosts share
this machine's 2 cores, so ``two hosts`` measures the network path and its protocol, not more
CPU. Issue 30 sets no targets for these figures, so no ``target`` line is printed.

Usage: ``sudo python benchmarks/cluster.py [--records N] [--repeats R] [--storage s3|shared]``
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from percentiles import percentile  # noqa: E402
from tests.cluster import netns  # noqa: E402
from tests.cluster.spark_cluster import SparkCluster, spark_cluster  # noqa: E402

JOB = ROOT / "benchmarks" / "jobs" / "cluster_job.py"
HEARTBEAT_TIMEOUT_S = 4


class Job:
    """A running benchmark job: its process and REST API."""

    def __init__(self, cluster: SparkCluster, settings: dict[str, Any], workdir: Path) -> None:
        base = {
            "spark.master": cluster.master_url,
            "spark.driver.host": cluster.network.driver_address,
            "spark.driver.bindAddress": cluster.network.driver_address,
            "execution.checkpointing.dir": cluster.checkpoint_dir(workdir / "checkpoints"),
            "heartbeat.interval": "500 ms",
            "heartbeat.timeout": f"{HEARTBEAT_TIMEOUT_S} s",
        }
        env = cluster.env(cluster.network.driver_address)
        self.process = subprocess.Popen(
            [sys.executable, str(JOB), json.dumps({**base, **settings})], env=env,
            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True, cwd=workdir,
        )  # fmt: skip
        assert self.process.stdout is not None
        for line in self.process.stdout:
            if line.startswith("REST "):
                self.url, self.job_id = line.split()[1:3]
                break
        else:
            raise RuntimeError(f"the job ended before it ran (exit {self.process.wait()})")
        self.durations: dict[int, int] = {}

    def get(self, path: str) -> dict[str, Any]:
        with urllib.request.urlopen(f"{self.url}/jobs/{self.job_id}{path}", timeout=5) as r:
            body: dict[str, Any] = json.loads(r.read())
        return body

    def poll_checkpoints(self) -> dict[str, Any]:
        body = self.get("/checkpoints")
        for entry in body["history"]:
            if entry["status"] == "COMPLETED" and not entry["is_savepoint"]:
                self.durations[int(entry["id"])] = int(entry["end_to_end_duration"])
        return body

    def source_records(self) -> int:
        vertices = self.get("")["vertices"]
        return int(vertices[0]["metrics"]["write-records"])

    def wait(self, predicate: Callable[[], Any], timeout_s: float = 180) -> Any:
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError("the job ended while the benchmark waited on it")
            try:
                value = predicate()
            except (OSError, ValueError, KeyError, IndexError):
                value = None
            if value:
                return value
            time.sleep(0.02)
        raise TimeoutError("the job did not get there in time")

    def finish(self) -> float:
        assert self.process.stdout is not None
        seconds = None
        while self.process.poll() is None:
            try:
                self.poll_checkpoints()
            except (OSError, ValueError):
                pass
            time.sleep(0.2)
        for line in self.process.stdout:
            if line.startswith("DONE "):
                seconds = float(line.split()[1])
        if self.process.returncode != 0 or seconds is None:
            raise RuntimeError(f"the job failed (exit {self.process.returncode})")
        return seconds


Run = tuple[float, list[int]]
"""One run: records/s and the end-to-end durations (ms) of its completed checkpoints."""


def throughput(layout: str, records: int, workdir: Path, s3: bool) -> Run:
    """One run on a fresh cluster of ``layout``."""
    workers, cores = (1, 2) if layout == "one host" else (2, 1)
    with spark_cluster(workdir / "logs", workers=workers, cores=cores, storage=s3) as cluster:
        job = Job(cluster, {"records": records}, workdir)
        seconds = job.finish()
    return records / seconds, list(job.durations.values())


def pct(values: list[int], q: float) -> float:
    """This script's checkpoint percentiles: rounded rank (``percentiles.py``), NaN for none."""
    return percentile(values, q, "rounded-rank", empty=float("nan"))


def faults(workdir: Path, s3: bool) -> tuple[float, float]:
    """(seconds from a host's death to records flowing again, seconds from healing a
    partition past the heartbeat timeout to the next completed checkpoint), two hosts."""
    with spark_cluster(workdir / "logs", workers=2, cores=2, storage=s3) as cluster:
        job = Job(cluster, {"records": 400_000, "records_per_second": 4_000}, workdir)
        job.wait(lambda: len(job.poll_checkpoints()["history"]) >= 2)
        victim = job.wait(cluster.hosts_running_undertow)[0]
        killed_at = time.monotonic()
        cluster.kill_host(victim)
        job.wait(lambda: job.poll_checkpoints()["latest"]["restored"] is not None)
        job.wait(lambda: job.source_records() > 0)
        recovery = time.monotonic() - killed_at
        cluster.start_worker(victim, cores=2)
        cluster.wait_for_workers(2)
        after_restore = job.poll_checkpoints()["counts"]["completed"]
        job.wait(lambda: job.poll_checkpoints()["counts"]["completed"] >= after_restore + 2)
        first = job.poll_checkpoints()["latest"]["restored"]["id"]
        cut = job.wait(cluster.hosts_running_undertow)[0]
        cut.cut()
        time.sleep(HEARTBEAT_TIMEOUT_S + 2)
        cut.heal()
        healed_at = time.monotonic()
        job.wait(lambda: job.poll_checkpoints()["latest"]["restored"]["id"] != first)
        restored_count = job.poll_checkpoints()["counts"]["completed"]
        job.wait(lambda: job.poll_checkpoints()["counts"]["completed"] > restored_count)
        healthy = time.monotonic() - healed_at
        job.process.kill()
        job.process.wait()
    return recovery, healthy


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--records", type=int, default=2_000_000)
    parser.add_argument("--repeats", type=int, default=2)
    parser.add_argument("--storage", choices=("s3", "shared"), default="s3")
    args = parser.parse_args()
    s3 = args.storage == "s3"
    problem = netns.unavailable()
    if problem is not None:
        raise SystemExit(f"benchmarks/cluster.py needs test hosts: {problem}")
    rows: dict[str, list[Run]] = {"one host": [], "two hosts": []}
    with tempfile.TemporaryDirectory() as tmp:
        for repeat in range(args.repeats):  # interleaved, so drift hits both layouts
            for layout in rows:
                workdir = Path(tmp) / f"{layout.replace(' ', '-')}-{repeat}"
                workdir.mkdir()
                rows[layout].append(throughput(layout, args.records, workdir, s3))
                rate, durations = rows[layout][-1]
                print(f"  {layout}, run {repeat + 1}: {rate:,.0f} records/s, "
                      f"{len(durations)} checkpoints, p50 {pct(durations, 0.5):.0f} ms, "
                      f"p99 {pct(durations, 0.99):.0f} ms "
                      f"(load {os.getloadavg()[0]:.1f})", flush=True)  # fmt: skip
        workdir = Path(tmp) / "faults"
        workdir.mkdir()
        recovery, healthy = faults(workdir, s3)
    where = "an S3 store on its own host" if s3 else "a directory every host shares"
    print(f"\nthroughput job, {args.records:,} records, p=2, checkpoints every 200 ms to "
          f"{where}; records/s: median of {args.repeats} runs, checkpoint percentiles over "
          f"every run's checkpoints (load average {os.getloadavg()[0]:.1f})")  # fmt: skip
    print(f"{'layout':<10} {'records/s':>12} {'checkpoints':>12} {'p50':>9} {'p99':>9}")
    medians = {}
    for layout, runs in rows.items():
        rate = statistics.median(r for r, _ in runs)
        durations = [d for _, ds in runs for d in ds]
        p50, p99 = pct(durations, 0.5), pct(durations, 0.99)
        medians[layout] = (rate, p50, p99)
        print(f"{layout:<10} {rate:>12,.0f} {len(durations):>12} {p50:>6.0f} ms {p99:>6.0f} ms")
    one, two = medians["one host"], medians["two hosts"]
    print(f"two hosts / one host: throughput {two[0] / one[0]:.2f}x, "
          f"checkpoint p50 {two[1] / one[1]:.2f}x, p99 {two[2] / one[2]:.2f}x")  # fmt: skip
    print(f"host killed -> records flowing again: {recovery:.1f} s")
    print(f"partition past the heartbeat timeout healed -> next checkpoint: {healthy:.1f} s")


if __name__ == "__main__":
    main()
