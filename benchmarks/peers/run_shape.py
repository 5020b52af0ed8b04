"""Run one job shape on one engine and measure its checkpoints through Flink's REST API.

Executed as a script by either engine's Python (the project's venv for undertow, the PyFlink
venv for PyFlink), so both are measured by the same code: the job is started with
``execute_async``, warmed up, then for ``--seconds`` every completed checkpoint's end-to-end
duration (``/jobs/:id/checkpoints``) and its largest subtask start delay
(``/checkpoints/details/:cid/subtasks/:vid``) are collected, and throughput is the last
vertex's ``read-records`` over the window. In debloat modes the engine's own estimate of the
time to consume in-flight buffers (``estimatedTimeToConsumeBuffersMs``, largest over the gates)
is sampled too. Prints one JSON line. Standard library only.
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import socket
import sys
import tempfile
import time
import urllib.request
from typing import Any

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import shapes

DEBLOAT_ON = {"taskmanager.network.memory.buffer-debloat.enabled": "true"}
#: The modes without "debloat" in their name switch it off explicitly, so that they measure the
#: same thing whatever the default (and the cost of debloating is a pair of modes).
DEBLOAT_OFF = {"taskmanager.network.memory.buffer-debloat.enabled": "false"}
UNALIGNED = {"execution.checkpointing.unaligned.enabled": "true"}
#: undertow's aim (beyond Flink): its floor at the (default) target is Flink's aim
FLINK_AIM = {"undertow.network.buffer-debloat.min-target": "1 s"}
AIM_100MS = {"undertow.network.buffer-debloat.min-target": "100 ms"}
MODES: dict[str, dict[str, str]] = {
    "off": DEBLOAT_OFF,
    "off-debloat": DEBLOAT_ON,  # no checkpoints: the cost of debloating alone
    "aligned": DEBLOAT_OFF,
    "unaligned": {**UNALIGNED, **DEBLOAT_OFF},
    "aligned-1s": {
        "execution.checkpointing.unaligned.enabled": "true",
        "execution.checkpointing.aligned-checkpoint-timeout": "1 s",
        **DEBLOAT_OFF,
    },
    # buffer debloating (FLIP-183) with Flink's defaults, and with a 300 ms target
    "aligned-debloat": DEBLOAT_ON,
    "aligned-debloat-300ms": {
        **DEBLOAT_ON,
        "taskmanager.network.memory.buffer-debloat.target": "300 ms",
    },
    "unaligned-debloat": {**UNALIGNED, **DEBLOAT_ON},
    # undertow's aim held at the target, as Flink's (by default it shrinks a standing queue to
    # half the target), and shrinking to 100 ms (PyFlink ignores the key)
    "aligned-debloat-flink": {**DEBLOAT_ON, **FLINK_AIM},
    "off-debloat-flink": {**DEBLOAT_ON, **FLINK_AIM},
    "unaligned-debloat-flink": {**UNALIGNED, **DEBLOAT_ON, **FLINK_AIM},
    "aligned-debloat-aim": {**DEBLOAT_ON, **AIM_100MS},
    "off-debloat-aim": {**DEBLOAT_ON, **AIM_100MS},
    "unaligned-debloat-aim": {**UNALIGNED, **DEBLOAT_ON, **AIM_100MS},
    "aligned-debloat-300ms-aim": {
        **DEBLOAT_ON,
        "taskmanager.network.memory.buffer-debloat.target": "300 ms",
        **AIM_100MS,
    },
}
#: Modes without periodic checkpoints.
UNCHECKPOINTED = ("off", "off-debloat", "off-debloat-aim", "off-debloat-flink")
INTERVAL_MS = {"slow-map-chained": 300}  # the shape; the others checkpoint every 1 s


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def get(url: str) -> Any:
    with urllib.request.urlopen(url, timeout=10) as response:
        return json.load(response)


def settings(args: argparse.Namespace, port: int, directory: str) -> dict[str, str]:
    values = {
        "rest.port": str(port),
        "web.checkpoints.history": "1000",
        "execution.checkpointing.dir": "file://" + directory,
    }
    if args.mode not in UNCHECKPOINTED:
        interval = INTERVAL_MS.get(args.shape, 1000)
        values["execution.checkpointing.interval"] = f"{interval} ms"
    values.update(MODES[args.mode])
    if args.engine == "pyflink":
        values["python.execution-mode"] = args.flavour
        values["python.executable"] = sys.executable
        values["python.client.executable"] = sys.executable
        values["metrics.fetcher.update-interval"] = "500"  # REST metrics are 10 s stale else
    else:
        values["execution.target"] = args.flavour
    return values


def start(args: argparse.Namespace, values: dict[str, str]) -> Any:
    common = __import__(f"{args.engine}.common", fromlist=["Configuration"])
    datastream = __import__(f"{args.engine}.datastream", fromlist=["StreamExecutionEnvironment"])
    config = common.Configuration()
    for key, value in values.items():
        config.set_string(key, value)
    env = datastream.StreamExecutionEnvironment.get_execution_environment(config)
    shapes.build(args.engine, args.shape, env)
    return env.execute_async(f"checkpoint latency: {args.shape}, {args.mode}")


def read_records(base: str, job_id: str) -> int:
    """Records read by the job's last vertex (the one no other vertex reads from)."""
    job = get(f"{base}/jobs/{job_id}")
    inputs = {i["id"] for node in job["plan"]["nodes"] for i in node.get("inputs", [])}
    last = [v for v in job["vertices"] if v["id"] not in inputs]
    return sum(int(v["metrics"]["read-records"]) for v in last)


def start_delay(base: str, job_id: str, checkpoint_id: int, vertex_ids: list[str]) -> int:
    delays = [0]
    for vid in vertex_ids:
        try:
            body = get(f"{base}/jobs/{job_id}/checkpoints/details/{checkpoint_id}/subtasks/{vid}")
        except OSError:
            continue
        delays += [int(s.get("start_delay", 0)) for s in body.get("subtasks", [])]
    return max(delays)


ESTIMATE = "estimatedTimeToConsumeBuffersMs"


def estimate_names(base: str, job_id: str, vertex_ids: list[str]) -> dict[str, list[str]]:
    """Per vertex, its task metrics that end in ``estimatedTimeToConsumeBuffersMs`` (Flink
    registers them per input gate in 2.x, at task scope in 1.x; undertow at task scope)."""
    names: dict[str, list[str]] = {}
    for vid in vertex_ids:
        listed = get(f"{base}/jobs/{job_id}/vertices/{vid}/subtasks/metrics")
        found = [m["id"] for m in listed if m["id"].endswith(ESTIMATE)]
        if found:
            names[vid] = found
    return names


def largest_estimate(base: str, job_id: str, names: dict[str, list[str]]) -> float | None:
    """The largest estimated time to consume in-flight buffers over every gate, now."""
    values = []
    for vid, metric_names in names.items():
        query = ",".join(metric_names)
        for m in get(f"{base}/jobs/{job_id}/vertices/{vid}/subtasks/metrics?get={query}&agg=max"):
            values.append(float(m["max"]))
    return max(values) if values else None


def rate(samples: list[tuple[float, int]]) -> float:
    """Records per second between the first and the last change of a sampled counter.

    PyFlink's REST metrics are fetched from the task managers in the background, so a reading
    may be stale; measuring between changes counts only intervals that were really observed.
    """
    changes = [s for prev, s in itertools.pairwise(samples) if s[1] != prev[1]]
    if len(changes) < 2:
        return 0.0
    (t0, r0), (t1, r1) = changes[0], changes[-1]
    return (r1 - r0) / (t1 - t0)


def measure(args: argparse.Namespace, base: str, job_id: str) -> dict[str, Any]:
    deadline = time.monotonic() + 120
    while get(f"{base}/jobs/{job_id}")["state"] != "RUNNING":
        if time.monotonic() > deadline:
            raise SystemExit(f"{args.engine} job {job_id} did not reach RUNNING in 120 s")
        time.sleep(0.2)
    time.sleep(args.warmup)
    vertex_ids = [v["id"] for v in get(f"{base}/jobs/{job_id}")["vertices"]]
    t0 = time.monotonic()
    window_start_ms = int(time.time() * 1000)
    seen: dict[int, tuple[int, int]] = {}
    samples = [(t0, read_records(base, job_id))]
    failed = 0
    debloated = "debloat" in args.mode
    names = estimate_names(base, job_id, vertex_ids) if debloated else {}
    estimates: list[float] = []
    while time.monotonic() - t0 < args.seconds:
        time.sleep(0.25)
        samples.append((time.monotonic(), read_records(base, job_id)))
        if names and (estimate := largest_estimate(base, job_id, names)) is not None:
            estimates.append(estimate)
        if args.mode in UNCHECKPOINTED:
            continue
        body = get(f"{base}/jobs/{job_id}/checkpoints")
        failed = int(body["counts"]["failed"])
        for entry in body["history"]:
            cid = int(entry["id"])
            if (entry["status"] == "COMPLETED" and cid not in seen
                    and int(entry["trigger_timestamp"]) >= window_start_ms):  # fmt: skip
                delay = start_delay(base, job_id, cid, vertex_ids)
                seen[cid] = (int(entry["end_to_end_duration"]), delay)
    return {
        "durations_ms": [d for d, _ in seen.values()],
        "start_delays_ms": [s for _, s in seen.values()],
        "failed": failed,
        "records_per_s": rate(samples),
        # the engine's own estimate of the time to consume in-flight buffers (debloat modes)
        "estimates_ms": estimates,
    }


def post(url: str, body: dict[str, Any]) -> Any:
    request = urllib.request.Request(
        url, data=json.dumps(body).encode(), headers={"Content-Type": "application/json"},
        method="POST",
    )  # fmt: skip
    with urllib.request.urlopen(request, timeout=10) as response:
        return json.load(response)


def stop_with_savepoint(base: str, job_id: str, directory: str, unaligned: bool) -> float:
    """Stop the job with a savepoint through REST (Flink's ``POST /jobs/:id/stop``; undertow's
    ``"unaligned": true`` when asked) and return the seconds until the savepoint completed
    and the job left RUNNING; -1 if that took more than 120 s."""
    body: dict[str, Any] = {"targetDirectory": "file://" + directory, "drain": False}
    if unaligned:
        body["unaligned"] = True
    started = time.monotonic()
    trigger = post(f"{base}/jobs/{job_id}/stop", body)["request-id"]
    deadline = started + 120
    while time.monotonic() < deadline:
        try:
            status = get(f"{base}/jobs/{job_id}/savepoints/{trigger}")
        except OSError:  # undertow's REST API closes once the job ended
            break
        if status["status"]["id"] == "COMPLETED":
            if "failure-cause" in status.get("operation", {}):
                raise SystemExit(f"stop-with-savepoint failed: {status['operation']}")
            break
        time.sleep(0.02)
    while time.monotonic() < deadline:
        try:
            if get(f"{base}/jobs/{job_id}")["state"] != "RUNNING":
                return time.monotonic() - started
        except OSError:
            return time.monotonic() - started
        time.sleep(0.02)
    return -1.0


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--engine", choices=("undertow", "pyflink"), required=True)
    parser.add_argument("--flavour", required=True,
                        help="undertow: local | spark; pyflink: process | thread")  # fmt: skip
    parser.add_argument("--shape", choices=shapes.SHAPES, required=True)
    parser.add_argument("--mode", choices=tuple(MODES), required=True)
    parser.add_argument("--seconds", type=float, default=15.0)
    parser.add_argument("--warmup", type=float, default=3.0)
    parser.add_argument(
        "--stop",
        choices=("none", "aligned", "unaligned"),
        default="none",
        help="end with stop-with-savepoint (of this kind) instead of cancel",
    )
    args = parser.parse_args()
    port = free_port()
    # Workers may still be writing a checkpoint as the job is cancelled: a failed clean-up
    # of the temporary directory must not lose the run's result.
    with tempfile.TemporaryDirectory(ignore_cleanup_errors=True) as directory:
        client = start(args, settings(args, port, directory))
        job_id = str(client.get_job_id())
        base = f"http://127.0.0.1:{port}"
        stop_s = None
        try:
            result = measure(args, base, job_id)
            if args.stop != "none":
                target = os.path.join(directory, "savepoints")
                stop_s = stop_with_savepoint(base, job_id, target, args.stop == "unaligned")
        finally:
            if stop_s is None or stop_s < 0:
                cancelled = client.cancel()
                if hasattr(cancelled, "result"):  # PyFlink returns a future
                    cancelled.result()
        if stop_s is not None:
            result["stop_s"] = stop_s
    result.update(engine=args.engine, flavour=args.flavour, shape=args.shape, mode=args.mode)
    print("RESULT " + json.dumps(result), flush=True)


if __name__ == "__main__":
    main()
