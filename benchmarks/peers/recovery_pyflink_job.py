"""benchmarks/recovery_progress.py's job on PyFlink 2.3, run by the PyFlink venv's Python.

The shape undertow's side runs, read from ``recovery_shape.py`` beside this script (data
only: this script never imports undertow): a sequence (faster than the rest) -> map to the
same 52-byte line -> rebalance -> the slow map (spins per record, fails ``--kill-every``
seconds after each attempt opened) -> a file sink committing a part file per checkpoint, with
the shape's options and buffers per channel, both FLIP-547 options as given
(``--flip547 on|off``).

Measured for ``--duration`` seconds through Flink's REST API (polled every 200 ms): each
restore's timestamp (``/jobs/:id/checkpoints``, ``latest.restored``) and the first checkpoint
completed after it (its trigger and acknowledgement times, its persisted in-flight bytes),
and the records in committed part files once a second. Prints one ``RESULT <json>`` line, or
``FAILED <reason>``. Standard library and PyFlink only.
"""

from __future__ import annotations

import argparse
import json
import os
import socket
import sys
import time
import traceback
import urllib.request
from typing import Any

import recovery_shape as shape  # beside this script (sys.path[0])


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def get(url: str) -> Any:
    with urllib.request.urlopen(url, timeout=5) as response:
        return json.load(response)


def committed_records(out: str) -> int:
    """Lines in committed part files (in-progress and pending ones start with a dot)."""
    total = 0
    for root, _, names in os.walk(out):
        for name in names:
            if not name.startswith((".", "_")):
                with open(os.path.join(root, name), "rb") as f:
                    total += sum(1 for _ in f)
    return total


def build(args: argparse.Namespace, port: int) -> Any:
    from pyflink.common import Configuration, Encoder, Types, WatermarkStrategy
    from pyflink.datastream import MapFunction, RuntimeContext, StreamExecutionEnvironment
    from pyflink.datastream.connectors.file_system import FileSink, RollingPolicy
    from pyflink.datastream.connectors.number_seq import NumberSequenceSource

    flip547 = "true" if args.flip547 == "on" else "false"
    values = {
        **shape.OPTIONS,
        shape.BUFFERS_PER_CHANNEL: str(args.buffers),
        "rest.port": str(port),
        "web.checkpoints.history": "1000",
        "execution.checkpointing.dir": "file://" + args.checkpoints,
        # FLIP-547 (Flink 2.3): the key Flink 2.3.0 reads, and the one issue 29 names
        "execution.checkpointing.during-recovery.enabled": flip547,
        "execution.checkpointing.unaligned.during-recovery.enabled": flip547,
        "execution.checkpointing.unaligned.recover-output-on-downstream.enabled": flip547,
        "python.execution-mode": args.python_mode,
        "python.executable": sys.executable,
        "python.client.executable": sys.executable,
    }
    config = Configuration()
    for key, value in values.items():
        config.set_string(key, value)
    env = StreamExecutionEnvironment.get_execution_environment(config)
    env.set_parallelism(shape.PARALLELISM)

    class SlowFailingMap(MapFunction):  # type: ignore[misc]
        def __init__(self, spin_s: float, fail_after_s: float) -> None:
            self.spin_s = spin_s
            self.fail_after_s = fail_after_s
            self.opened = 0.0

        def open(self, runtime_context: RuntimeContext) -> None:
            self.opened = time.monotonic()

        def map(self, value: Any) -> Any:
            end = time.perf_counter() + self.spin_s
            while time.perf_counter() < end:
                pass
            if time.monotonic() - self.opened > self.fail_after_s:
                raise RuntimeError(f"injected failure {self.fail_after_s} s into the attempt")
            return value

    sink = (
        FileSink.for_row_format(args.out, Encoder.simple_string_encoder())
        .with_rolling_policy(RollingPolicy.on_checkpoint_rolling_policy())
        .build()
    )
    digits, filler = shape.LINE_DIGITS, shape.LINE_FILLER  # values: pickled with the lambda
    (
        env.from_source(NumberSequenceSource(0, 10**15), WatermarkStrategy.no_watermarks(), "gen")
        .map(lambda i: f"{i:0{digits}d} {filler}", output_type=Types.STRING())
        .rebalance()
        .map(SlowFailingMap(args.spin_ms / 1000, args.kill_every), output_type=Types.STRING())
        .name(shape.SLOW_MAP)
        .sink_to(sink)
    )
    return env.execute_async(f"recovery progress (PyFlink, FLIP-547 {args.flip547})")


def measure(args: argparse.Namespace, base: str, job_id: str) -> dict[str, Any]:
    committed: list[tuple[float, int]] = []
    restores: dict[int, float] = {}  # restore timestamp (ms) -> when we saw it
    completed: dict[int, dict[str, Any]] = {}
    errors = 0
    started = time.monotonic()
    next_count = started
    while time.monotonic() - started < args.duration:
        time.sleep(0.2)
        try:
            doc = get(f"{base}/jobs/{job_id}/checkpoints")
        except Exception:  # the REST endpoint may stall while the job restarts
            errors += 1
            continue
        restored = (doc.get("latest") or {}).get("restored")
        if restored:
            restores.setdefault(int(restored["restore_timestamp"]), time.monotonic())
        for entry in doc.get("history", []):
            if entry.get("status") == "COMPLETED":
                completed.setdefault(int(entry["id"]), entry)
        if time.monotonic() >= next_count:
            committed.append((time.monotonic(), committed_records(args.out)))
            next_count += 1.0
    counts = doc.get("counts", {}) if "doc" in locals() else {}
    firsts = []
    for restore_ms in sorted(restores):
        after = [c for c in completed.values() if int(c["trigger_timestamp"]) >= restore_ms]
        if not after:
            firsts.append(None)
            continue
        first = min(after, key=lambda c: int(c["id"]))
        firsts.append({
            "seconds": (int(first["latest_ack_timestamp"]) - restore_ms) / 1000,
            "persisted": int(first.get("persisted_data", 0)),
        })  # fmt: skip
    return {
        "committed": committed, "restores": len(restores), "firsts": firsts,
        "restored_count": counts.get("restored"), "completed": len(completed),
        "rest_errors": errors,
    }  # fmt: skip


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", required=True)
    parser.add_argument("--checkpoints", required=True)
    parser.add_argument("--duration", type=float, required=True)
    parser.add_argument("--kill-every", type=float, required=True)
    parser.add_argument("--spin-ms", type=float, required=True)
    parser.add_argument("--buffers", type=int, required=True)
    parser.add_argument("--flip547", choices=("on", "off"), default="on")
    parser.add_argument("--python-mode", choices=("process", "thread"), default="thread")
    args = parser.parse_args()
    port = free_port()
    try:
        client = build(args, port)
    except Exception as err:
        print(f"FAILED {type(err).__name__}: {' '.join(str(err).split())[:600]}", flush=True)
        traceback.print_exc(file=sys.stderr)
        return 1
    job_id = str(client.get_job_id())
    try:
        result = measure(args, f"http://127.0.0.1:{port}", job_id)
    finally:
        try:
            client.cancel().result()
        except Exception as err:  # a job that failed on its own cannot be cancelled: say why
            print(f"FAILED {type(err).__name__}: {' '.join(str(err).split())[:600]}", flush=True)
    print("RESULT " + json.dumps(result), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
