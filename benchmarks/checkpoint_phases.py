"""Where a job shape's checkpoints spend their time, per phase and per vertex (issue 14).

Runs one shape of benchmarks/peers/shapes.py on undertow (same settings as the latency
benchmark), then prints, for each checkpoint completed in the measuring window, its end-to-end
duration and per vertex the largest subtask start delay, alignment, synchronous and
asynchronous part, and acknowledgement time after the trigger (ms), read from the REST API's
subtask details; then the medians. The asynchronous part is what the I/O strategies of
``checkpoint_io_gil.py`` change.

Usage: ``python benchmarks/checkpoint_phases.py [--shape anchor-spin] [--mode unaligned]
[--target local] [--seconds 10]``.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent / "peers"))
import run_shape
import shapes

PHASES = ("start_delay", "alignment", "sync", "async", "ack")


def phases_of(subtask: dict[str, object], trigger_ms: int) -> dict[str, int]:
    checkpoint = subtask.get("checkpoint", {})
    alignment = subtask.get("alignment", {})
    assert isinstance(checkpoint, dict) and isinstance(alignment, dict)
    return {
        "start_delay": int(str(subtask.get("start_delay", 0))),
        "alignment": int(alignment.get("duration", 0)),
        "sync": int(checkpoint.get("sync", 0)),
        "async": int(checkpoint.get("async", 0)),
        "ack": int(str(subtask.get("ack_timestamp", trigger_ms))) - trigger_ms,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--shape", choices=shapes.SHAPES, default="anchor-spin")
    parser.add_argument("--mode", choices=tuple(run_shape.MODES), default="unaligned")
    parser.add_argument("--target", default="local")
    parser.add_argument("--seconds", type=float, default=10.0)
    args = parser.parse_args()
    settings = argparse.Namespace(engine="undertow", flavour=args.target, shape=args.shape,
                                  mode=args.mode)  # fmt: skip
    port = run_shape.free_port()
    base = f"http://127.0.0.1:{port}"
    with tempfile.TemporaryDirectory() as directory:
        client = run_shape.start(settings, run_shape.settings(settings, port, directory))
        job_id = str(client.get_job_id())
        try:
            while run_shape.get(f"{base}/jobs/{job_id}")["state"] != "RUNNING":
                time.sleep(0.2)
            time.sleep(3.0)  # warm-up, as the latency benchmark
            window_start = int(time.time() * 1000)
            time.sleep(args.seconds)
            vertices = run_shape.get(f"{base}/jobs/{job_id}")["vertices"]
            history = run_shape.get(f"{base}/jobs/{job_id}/checkpoints")["history"]
            rows = []
            for entry in sorted(history, key=lambda e: int(e["id"])):
                trigger = int(entry["trigger_timestamp"])
                if entry["status"] != "COMPLETED" or trigger < window_start:
                    continue
                cid = int(entry["id"])
                per_vertex = {}
                for vertex in vertices:
                    details = run_shape.get(
                        f"{base}/jobs/{job_id}/checkpoints/details/{cid}/subtasks/{vertex['id']}"
                    )
                    subtasks = [phases_of(s, trigger) for s in details["subtasks"]]
                    per_vertex[vertex["name"]] = {
                        p: max(s[p] for s in subtasks) for p in PHASES
                    }  # fmt: skip
                rows.append((cid, int(entry["end_to_end_duration"]), per_vertex))
        finally:
            client.cancel()
    print(f"{args.shape}, {args.mode}, {args.target}: per vertex, the largest subtask value (ms)")
    print(f"{'chk':>4} {'e2e':>5}  vertex: " + " / ".join(PHASES))
    for cid, e2e, per_vertex in rows:
        cells = "  ".join(
            f"{name[:18]}: " + "/".join(str(v[p]) for p in PHASES) for name, v in per_vertex.items()
        )
        print(f"{cid:>4} {e2e:>5}  {cells}")
    if rows:
        print(f"median e2e {statistics.median(r[1] for r in rows):.0f} ms")
        for name in rows[0][2]:
            medians = [statistics.median(r[2][name][p] for r in rows) for p in PHASES]
            print(f"  {name[:30]:<30} " + "  ".join(
                f"{p} {m:.0f}" for p, m in zip(PHASES, medians)))  # fmt: skip


if __name__ == "__main__":
    main()
