"""Checkpoint latency per job shape, undertow side by side with PyFlink 2.3 in the same run.

Shapes (benchmarks/peers/shapes.py, the same job code on both engines): a slow map chained to
its source, the FLIP-76 anchor job with a sleeping and with a spinning UDF, a flat_map fan-out,
and a window firing 10,000 keys at once; modes: aligned, unaligned, aligned with a 1 s timeout;
undertow on the local and spark targets, PyFlink's MiniCluster in process and thread mode
(``--peers``: installed on demand into .bench/pyflink-venv, never a dependency of undertow).
Every run is a subprocess of benchmarks/peers/run_shape.py, which measures both engines through
Flink's REST API. Prints p50/p99 end-to-end duration, p50 start delay, records/s of the last
vertex and its ratio to the same engine with checkpoints off, then the issue-14 targets.

Usage: ``python benchmarks/checkpoint_latency.py [--peers] [--shapes a,b] [--modes a,b]
[--targets local,spark] [--seconds 15]`` (``make bench-peers`` runs it with ``--peers``).
``--stop-savepoint`` measures instead stop-with-savepoint after ``--seconds`` of backpressure
on the anchor job (unaligned checkpoints on): aligned vs undertow's unaligned savepoint, and
PyFlink's (always aligned) with ``--peers``.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE / "peers"))
import pyflink_venv  # noqa: E402
import shapes  # noqa: E402
from percentiles import percentile  # noqa: E402

RUNNER = HERE / "peers" / "run_shape.py"


def run(python: Path, env: dict[str, str] | None, engine: str, flavour: str, shape: str,
        mode: str, seconds: float, stop: str = "none") -> dict[str, Any] | None:  # fmt: skip
    command = [str(python), str(RUNNER), "--engine", engine, "--flavour", flavour,
               "--shape", shape, "--mode", mode, "--seconds", str(seconds),
               "--stop", stop]  # fmt: skip
    done = subprocess.run(command, env=env, capture_output=True, text=True, timeout=seconds + 240)
    for line in done.stdout.splitlines():
        if line.startswith("RESULT "):
            result: dict[str, Any] = json.loads(line[len("RESULT ") :])
            return result
    tail = "\n".join((done.stdout + done.stderr).splitlines()[-15:])
    print(f"  {engine}/{flavour} {shape} {mode}: no result (exit {done.returncode})\n{tail}")
    return None


def pct(values: list[int], q: float) -> float | None:
    """This script's percentiles: nearest index (``percentiles.py``), None for no values."""
    return percentile(values, q, "nearest-index", empty=None)


def cell(value: float | None, width: int = 8, suffix: str = "") -> str:
    return f"{'-':>{width}}" if value is None else f"{value:>{width - len(suffix)}.0f}{suffix}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--shapes", default=",".join(shapes.SHAPES))
    parser.add_argument("--modes", default="aligned,unaligned,aligned-1s")
    parser.add_argument("--targets", default="local,spark", help="undertow targets")
    parser.add_argument("--peers", action="store_true", help="also run PyFlink 2.3")
    parser.add_argument("--pyflink-modes", default="thread,process")
    parser.add_argument("--seconds", type=float, default=15.0, help="measuring window per run")
    parser.add_argument(
        "--stop-savepoint",
        action="store_true",
        help="measure stop-with-savepoint under backpressure instead",
    )
    parser.add_argument("--repeat", type=int, default=1, help="runs per row (--stop-savepoint)")
    args = parser.parse_args()
    engines: list[tuple[str, str, Path, dict[str, str] | None]] = [
        ("undertow", target, Path(sys.executable), None) for target in args.targets.split(",")
    ]
    if args.peers:
        python = pyflink_venv.ensure_pyflink()
        env = pyflink_venv.pyflink_environment(python)
        engines += [("pyflink", m, python, env) for m in args.pyflink_modes.split(",")]
    if args.stop_savepoint:
        stop_table(engines, args.shapes, args.seconds, args.repeat)
        return
    header = (f"{'mode':<11} {'engine':<17} {'n':>3} {'p50 ms':>8} {'p99 ms':>8} "
              f"{'delay ms':>8} {'rec/s':>8} {'vs off':>7} {'p50/thread':>10}")  # fmt: skip
    verdicts: list[str] = []
    for shape in args.shapes.split(","):
        print(f"\n{shape}: {shapes.DESCRIPTIONS[shape]}\n{header}", flush=True)
        results: dict[tuple[str, str, str], dict[str, Any]] = {}
        for engine, flavour, python, env in engines:
            for mode in ["off", *args.modes.split(",")]:
                result = run(python, env, engine, flavour, shape, mode, args.seconds)
                if result is not None:
                    results[engine, flavour, mode] = result
        for mode in args.modes.split(","):
            thread = results.get(("pyflink", "thread", mode))
            thread_p50 = pct(thread["durations_ms"], 0.5) if thread else None
            for engine, flavour, _, _ in engines:
                result = results.get((engine, flavour, mode))
                if result is None:
                    continue
                off = results.get((engine, flavour, "off"))
                durations = result["durations_ms"]
                p50 = pct(durations, 0.5)
                vs_off = (result["records_per_s"] / off["records_per_s"]
                          if off and off["records_per_s"] else None)  # fmt: skip
                ratio = p50 / thread_p50 if p50 is not None and thread_p50 else None
                print(f"{mode:<11} {engine + '/' + flavour:<17} {len(durations):>3} {cell(p50)} "
                      f"{cell(pct(durations, 0.99))} "
                      f"{cell(pct(result['start_delays_ms'], 0.5))} "
                      f"{cell(result['records_per_s'])} "
                      f"{'-' if vs_off is None else f'{vs_off:.2f}x':>7} "
                      f"{'-' if ratio is None else f'{ratio:.2f}x':>10}", flush=True)  # fmt: skip
                if engine == "undertow":
                    verdicts += targets(shape, mode, flavour, p50, thread_p50, vs_off)
    print("\nissue 14 targets:")
    for line in verdicts:
        print(line)


def stop_table(engines: list[tuple[str, str, Path, dict[str, str] | None]], shape_list: str,
               seconds: float, repeat: int) -> None:  # fmt: skip
    """Stop-with-savepoint after ``seconds`` of backpressure (unaligned checkpoints on, so the
    backlog is what an aligned savepoint waits for): seconds until the job stopped."""
    names = [s for s in shape_list.split(",") if s.startswith("anchor")] or ["anchor-sleep"]
    print(f"stop-with-savepoint after {seconds:g} s under backpressure (unaligned checkpoints "
          f"every 1 s); seconds until the job stopped, {repeat} run(s) each")  # fmt: skip
    print(f"{'shape':<13} {'engine':<17} {'savepoint':<10} {'stop s':>24}")
    verdicts = []
    for shape in names:
        for engine, flavour, python, env in engines:
            kinds = ("aligned", "unaligned") if engine == "undertow" else ("aligned",)
            for kind in kinds:
                times: list[float] = []
                shown_runs = []
                for _ in range(repeat):
                    result = run(python, env, engine, flavour, shape, "unaligned", seconds, kind)
                    stop_s = float(result.get("stop_s", -1)) if result is not None else None
                    if stop_s is None:
                        shown_runs.append("-")
                    elif stop_s < 0:  # not stopped within run_shape's 120 s
                        shown_runs.append(">120")
                        times.append(float("inf"))
                    else:
                        shown_runs.append(f"{stop_s:.2f}")
                        times.append(stop_s)
                shown = " ".join(shown_runs)
                print(f"{shape:<13} {engine + '/' + flavour:<17} {kind:<10} {shown:>24}",
                      flush=True)  # fmt: skip
                if engine == "undertow" and kind == "unaligned":
                    worst = max(times, default=None)
                    ok = worst is not None and worst <= 1.0
                    verdicts.append(f"target {shape}, undertow/{flavour} unaligned stop: "
                                    f"{'-' if worst is None else f'{worst:.2f}'} s, the slowest "
                                    f"run (goal <= 1 s): {'met' if ok else 'missed'}")  # fmt: skip
    print("\nissue 14 target (stop-with-savepoint under backpressure <= 1 s):")
    for line in verdicts:
        print(line)


def targets(shape: str, mode: str, flavour: str, p50: float | None, thread_p50: float | None,
            vs_off: float | None) -> list[str]:  # fmt: skip
    """The issue's targets for one undertow row, as target lines (the p50's goal: 20 ms, or
    PyFlink thread mode's p50 in the same run if lower)."""
    where = f"{shape}, {mode}, undertow/{flavour}"
    limit = (min(20.0, thread_p50) if thread_p50 else 20.0) if mode == "unaligned" else 50.0
    judged = mode == "unaligned" or (mode == "aligned" and shape == "slow-map-chained")
    if p50 is None:
        return [f"target {where} p50: no checkpoint completed (goal <= {limit:.0f} ms): missed"]
    out = []
    if judged:
        verdict = "met" if p50 <= limit else "missed"
        out.append(f"target {where} p50: {p50:.0f} ms (goal <= {limit:.0f} ms): {verdict}")
    if mode == "unaligned" and vs_off is not None:
        verdict = "met" if vs_off >= 0.9 else "missed"
        out.append(f"target {where} throughput: {vs_off:.2f}x off (goal >= 0.9x): {verdict}")
    return out


if __name__ == "__main__":
    main()
