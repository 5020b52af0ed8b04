"""How fast a job runs after ``undertow run``, and after one of its workers is killed.

For each target (``spark`` on local Spark, and ``local`` without Spark as the baseline in the
same run; ``local-fresh`` is ``local`` with fresh interpreters as workers instead of the fork
server's forks, ``execution.local.fork-server: false``) the script starts ``undertow run
benchmarks/jobs/start_job.py`` and times, from the moment the command starts:

* *first record*: the job's first record reached the map after the keyed sum;
* *first checkpoint*: ``[undertow] checkpoint 1 completed`` was printed;
* *recovery*: one worker process is then killed with SIGKILL; the time from the kill to the
  first record processed by the next attempt.

The command is stopped with SIGINT (Ctrl-C), which also checks that it cancels the job and
exits. Targets from the issue: running within 10 s of the command on local Spark, processing
again within 10 s of a kill.

``--peers`` also starts the same job shape on PyFlink 2.3 (its MiniCluster, in the PyFlink venv of
``benchmarks/peers/pyflink_venv.py``), in the same run, and times its *first record* the same way:
from the command's start to the first record reaching the map after the keyed sum, in any
subtask (PyFlink 2.3's thread mode cannot tell a function its subtask index: pemja's runtime
context lacks ``getIndexOfThisSubtask``; undertow's figure is subtask 0's), its source a
NumberSequenceSource, not throttled. Only start-up is compared: PyFlink's
MiniCluster runs in the one process, so there is no worker to kill.

Usage: ``python benchmarks/spark_start.py [--runs N] [--targets spark,local,local-fresh] [--peers
[--pyflink-modes thread,process]]``
"""

from __future__ import annotations

import argparse
import os
import queue
import re
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

JOB = Path(__file__).parent / "jobs" / "start_job.py"
#: The job of ``start_job.py`` on PyFlink: argv is the marker file and the execution mode.
PYFLINK_JOB = """
import sys, time
from pyflink.common import Configuration, Types, WatermarkStrategy
from pyflink.datastream import MapFunction, StreamExecutionEnvironment
from pyflink.datastream.connectors.number_seq import NumberSequenceSource

MARKER, MODE = sys.argv[1], sys.argv[2]


class FirstRecord(MapFunction):  # no runtime context: thread mode cannot give the subtask
    def open(self, runtime_context):
        self.seen = False

    def map(self, value):
        if not self.seen:
            self.seen = True
            with open(MARKER, "a") as marker:
                marker.write(f"{time.time():.3f}\\n")
        return value


config = Configuration()
config.set_string("python.execution-mode", MODE)
env = StreamExecutionEnvironment.get_execution_environment(config)
env.set_parallelism(2)
env.enable_checkpointing(200)
pairs = Types.TUPLE([Types.LONG(), Types.INT()])
(env.from_source(NumberSequenceSource(0, 10**12), WatermarkStrategy.no_watermarks(), "numbers")
    .map(lambda i: (i % 100, 1), output_type=pairs)
    .key_by(lambda pair: pair[0])
    .sum(1)
    .map(FirstRecord(), output_type=pairs)
    .filter(lambda pair: False)
    .print())
env.execute("start-up benchmark")
"""
FIRST = re.compile(r"FIRST_RECORD attempt=(\d+) t=([\d.]+)")
CHECKPOINT = re.compile(r"\[undertow\] checkpoint 1 completed")


def descendants(root: int) -> dict[int, tuple[int, str, str]]:
    """pid -> (parent, name, cmdline) for the processes below ``root``."""
    table: dict[int, tuple[int, str, str]] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as f:
                stat = f.read()
            with open(f"/proc/{entry}/cmdline", "rb") as raw:
                cmdline = raw.read().replace(b"\0", b" ").decode(errors="replace")
        except OSError:
            continue
        name = stat[stat.find("(") + 1 : stat.rfind(")")]
        table[int(entry)] = (int(stat.rsplit(")", 1)[1].split()[1]), name, cmdline)
    below: dict[int, tuple[int, str, str]] = {}
    for pid, row in table.items():
        parent, hops = row[0], 0
        while parent in table and parent != root and hops < 64:
            parent, hops = table[parent][0], hops + 1
        if parent == root:
            below[pid] = row
    return below


def worker_pids(root: int) -> list[int]:
    return sorted(
        pid for pid, (_, name, cmdline) in descendants(root).items()
        if name == "undertow-worker" or "undertow.deploy.worker_process" in cmdline
    )  # fmt: skip


def run_once(target: str) -> dict[str, float]:
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(p for p in sys.path if p))
    fresh = target == "local-fresh"  # local, workers as fresh interpreters (no fork server)
    command = [sys.executable, "-m", "undertow.cli.main", "run", "--target",
               "local" if fresh else target]  # fmt: skip
    if fresh:
        command += ["-D", "execution.local.fork-server=false"]
    if target == "spark":
        command += ["--master", "local[2]", "-D", "undertow.spark.log-level=ERROR"]
    started = time.time()
    proc = subprocess.Popen([*command, str(JOB)], env=env, stderr=subprocess.PIPE, text=True,
                            stdout=subprocess.DEVNULL)  # fmt: skip
    lines: queue.Queue[tuple[float, str]] = queue.Queue()

    def pump() -> None:
        assert proc.stderr is not None
        for line in proc.stderr:
            lines.put((time.time(), line))

    threading.Thread(target=pump, daemon=True).start()
    result: dict[str, float] = {}
    killed_at: float | None = None
    deadline = time.time() + 180
    try:
        while time.time() < deadline and "recovery" not in result:
            try:
                _, line = lines.get(timeout=0.5)
            except queue.Empty:
                if proc.poll() is not None:
                    raise RuntimeError(f"{target}: the job ended early") from None
                continue
            first = FIRST.search(line)
            if first and first.group(1) == "0" and "first record" not in result:
                result["first record"] = float(first.group(2)) - started
            elif first and first.group(1) != "0" and killed_at is not None:
                result["recovery"] = float(first.group(2)) - killed_at
            if CHECKPOINT.search(line) and "first checkpoint" not in result:
                result["first checkpoint"] = time.time() - started
            if killed_at is None and "first record" in result and "first checkpoint" in result:
                time.sleep(0.5)
                pids = worker_pids(proc.pid)
                if not pids:
                    raise RuntimeError(f"{target}: no worker process found to kill")
                killed_at = time.time()
                os.kill(pids[0], signal.SIGKILL)
        if "recovery" not in result:
            raise RuntimeError(f"{target}: timed out; measured so far {result}")
    finally:
        stop = time.time()
        proc.send_signal(signal.SIGINT)
        try:
            proc.wait(60)
            result["stop after Ctrl-C"] = time.time() - stop
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
            result["stop after Ctrl-C"] = float("nan")
    return result


def run_pyflink_once(python: Path, env: dict[str, str], mode: str) -> dict[str, float]:
    """Seconds from starting PyFlink's job (``mode``: thread or process) to its first record."""
    with tempfile.TemporaryDirectory() as scratch:
        job, marker = Path(scratch) / "start_job_pyflink.py", Path(scratch) / "first"
        job.write_text(PYFLINK_JOB)
        started = time.time()
        proc = subprocess.Popen([str(python), str(job), str(marker), mode], env=env,
                                stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
                                start_new_session=True)  # fmt: skip
        try:
            deadline = started + 180
            while time.time() < deadline and not marker.exists():
                if proc.poll() is not None:
                    raise RuntimeError(f"pyflink {mode}: the job ended early: {proc.stderr}")
                time.sleep(0.05)
            if not marker.exists():
                raise RuntimeError(f"pyflink {mode}: no record within 180 s")
            time.sleep(0.1)  # the line is written whole before the next poll reads it
            return {"first record": float(marker.read_text().split()[0]) - started}
        finally:
            os.killpg(proc.pid, signal.SIGKILL)  # the MiniCluster's JVM is in the session too
            proc.wait()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=2)
    parser.add_argument("--targets", default="spark,local")
    parser.add_argument("--peers", action="store_true", help="PyFlink 2.3 in the same run")
    parser.add_argument("--pyflink-modes", default="thread")
    args = parser.parse_args()
    measured: dict[str, list[dict[str, float]]] = {}
    peers: dict[str, list[dict[str, float]]] = {}
    if args.peers:
        sys.path.insert(0, str(Path(__file__).parent / "peers"))
        import pyflink_venv  # type: ignore[import-not-found]

        python = pyflink_venv.ensure_pyflink()
        peers_env = pyflink_venv.pyflink_environment(python)
    for run in range(args.runs):  # interleaved: each run starts every engine once
        for target in args.targets.split(","):
            outcome = run_once(target)
            measured.setdefault(target, []).append(outcome)
            print(f"{target} run {run + 1}: " +
                  ", ".join(f"{k} {v:.2f} s" for k, v in outcome.items()), flush=True)  # fmt: skip
        for mode in args.pyflink_modes.split(",") if args.peers else []:
            outcome = run_pyflink_once(python, peers_env, mode)
            peers.setdefault(f"pyflink {mode}", []).append(outcome)
            print(f"pyflink {mode} run {run + 1}: first record {outcome['first record']:.2f} s",
                  flush=True)  # fmt: skip
    keys = ["first record", "first checkpoint", "recovery", "stop after Ctrl-C"]
    print(f"\nmedian of {args.runs} runs (seconds from `undertow run`; recovery from the kill)")
    print(f"{'target':<12}" + "".join(f"{k:>20}" for k in keys))
    for target, runs in measured.items():
        print(f"{target:<12}" + "".join(f"{statistics.median(r[k] for r in runs):>20.2f}"
                                       for k in keys))  # fmt: skip
    for engine, runs in peers.items():
        first = statistics.median(r["first record"] for r in runs)
        print(f"{engine:<16}{first:>12.2f}  (first record only; measured in the same run)")
    if "local-fresh" in measured and "local" in measured:
        for key in ("first record", "recovery"):
            fresh = statistics.median(r[key] for r in measured["local-fresh"])
            forked = statistics.median(r[key] for r in measured["local"])
            print(f"local, fresh interpreters / forked workers, {key}: {fresh / forked:.1f}x "
                  f"({fresh:.2f} s / {forked:.2f} s)")  # fmt: skip
    if "spark" in measured and "local" in measured:
        for key in ("first record", "recovery"):
            spark = statistics.median(r[key] for r in measured["spark"])
            local = statistics.median(r[key] for r in measured["local"])
            print(f"spark / local, {key}: {spark / local:.1f}x")
    if "spark" in measured:
        spark_first = statistics.median(r["first record"] for r in measured["spark"])
        spark_recovery = statistics.median(r["recovery"] for r in measured["spark"])
        print(
            f"target spark-running: {spark_first:.2f} s after the command (goal <= 10 s): "
            f"{'met' if spark_first <= 10 else 'missed'}"
        )
        print(
            f"target spark-processing-after-a-kill: {spark_recovery:.2f} s after the kill "
            f"(goal <= 10 s): {'met' if spark_recovery <= 10 else 'missed'}"
        )


if __name__ == "__main__":
    main()
