"""Buffer debloating (FLIP-183, issue 17): checkpoints under backpressure, off vs on.

The anchor job: number source -> map -> key_by -> map sleeping 1 ms per record -> discard,
p=1, a checkpoint every 1 s, on the ``local`` target. The source is unbounded and as fast as
it may, so the key_by edge is always full; after ``--seconds`` the job is stopped with a
savepoint (no drain). For each mode the table shows the completed checkpoints' duration
p50/p90 (from the JobMaster's console line), how many completed, the in-flight data they
persisted (median; unaligned rows), how long the stop-with-savepoint took, and the p50 and
in-flight ratios against the debloating-off row of the same checkpoint mode in the same run.

Rows: aligned with debloating off, on (Flink's defaults: target 1 s), on with target 300 ms,
on with the aim held at the target as Flink's (min-target 1 s) and with it shrinking to 100 ms
(min-target 100 ms; by default it shrinks to half the target); unaligned off vs on, with the aim
at 100 ms too (in-flight bytes). Then throughput: ``benchmarks/throughput.py``'s
pipeline with debloating on vs off, as a ratio (>= 0.97x is the bar for default on); the
``shapes`` case: the same ratio for every checkpoint-latency shape, without checkpoints and
with unaligned ones (``--cost-checkpointing``; aligned ones under backpressure complete more
often with debloating on, which is checkpoint work, not debloating's cost).

``aim-cost``: what the aim (by default down to half the target; ``--min-target`` sets another
floor) costs where tasks share the CPU, against Flink's aim (min-target at the target, 1 s):
records/s of throughput.py's pipeline
(the control: its consumers keep up, so the aim stays at the target) and of the oracle pipeline
(undertow.testing, p=2, on ``local`` and ``local-threads``), unthrottled (its consumers still
starve at times: a control too) and with a sink spinning 0.5 ms per record (every task before
it backpressured), interleaved ``--repeats`` times. ``--cost-checkpointing
aim-none,aim-unaligned`` gives the same ratio for every checkpoint-latency shape.

``--peers``: the anchor job (benchmarks/peers/shapes.py's ``anchor-sleep``) on undertow and on
PyFlink 2.3 in thread mode, debloating on (1 s and 300 ms targets; ``--peer-modes`` may add
``aligned-debloat-flink``: the aim held at the target as Flink's; ``aligned-debloat-aim``:
min-target 100 ms), interleaved
``--repeats`` times in this run after ``--warmup`` seconds, both measured by
benchmarks/peers/run_shape.py through REST; prints each run's p50, the engine's own estimate of
the time to consume its in-flight buffers (median of its ``estimatedTimeToConsumeBuffersMs``
samples), and the undertow / PyFlink ratio. The older ``pyflink`` case runs process mode.

Usage: ``python benchmarks/debloat.py [--seconds S]
[--cases checkpoints,throughput,shapes,pyflink,aim-cost] [--peers]``
"""

from __future__ import annotations

import argparse
import contextlib
import json
import math
import re
import statistics
import subprocess
import sys
import tempfile
import time
from concurrent.futures import TimeoutError as FutureTimeout
from pathlib import Path
from typing import Any

from undertow.common import Configuration, WatermarkStrategy
from undertow.datastream import MapFunction, StreamExecutionEnvironment
from undertow.datastream.connectors import DataGeneratorSource, DiscardingSink

try:  # run as a script from the repository root, or as ``benchmarks.debloat``
    from unaligned import COMPLETED, UNITS, Tee  # type: ignore[import-not-found,no-redef]
except ImportError:
    from benchmarks.unaligned import COMPLETED, UNITS, Tee

HERE = Path(__file__).resolve().parent
STOP_TIMEOUT_S = 30.0
DEBLOAT = "taskmanager.network.memory.buffer-debloat."
ALIGNED = {"execution.checkpointing.interval": "1 s"}
UNALIGNED = {**ALIGNED, "execution.checkpointing.unaligned.enabled": "true"}
ON = {DEBLOAT + "enabled": "true"}
OFF = {DEBLOAT + "enabled": "false"}  # explicit, whatever the default
AIM = "undertow.network.buffer-debloat.min-target"  # the aim's floor (beyond Flink)
FLINK_AIM = {AIM: "1 s"}  # at the (default) target: the aim stays there, as Flink's
#: The in-flight estimate of a checkpoint's console line (its slowest gate's).
ESTIMATE = re.compile(r"buffers ~(?P<ms>\d+) ms to consume")
MODES: dict[str, dict[str, str]] = {
    "aligned, off": {**ALIGNED, **OFF},
    "aligned, on (1 s)": {**ALIGNED, **ON},
    "aligned, on (300 ms)": {**ALIGNED, **ON, DEBLOAT + "target": "300 ms"},
    "aligned, on, Flink's aim": {**ALIGNED, **ON, **FLINK_AIM},
    "aligned, on, aim 100 ms": {**ALIGNED, **ON, AIM: "100 ms"},
    "unaligned, off": {**UNALIGNED, **OFF},
    "unaligned, on (1 s)": {**UNALIGNED, **ON},
    "unaligned, on, aim 100 ms": {**UNALIGNED, **ON, AIM: "100 ms"},
}


class Sleep(MapFunction):
    """The slow operator: sleeps ``seconds`` per record."""

    def __init__(self, seconds: float) -> None:
        self.seconds = seconds

    def map(self, value: Any) -> Any:
        time.sleep(self.seconds)
        return value


def anchor_job(settings: dict[str, str], records: int | None) -> StreamExecutionEnvironment:
    """The anchor job of issue 17 with ``settings`` on top of the local target's."""
    env = StreamExecutionEnvironment.get_execution_environment(Configuration(settings))
    env.set_parallelism(1)
    source = DataGeneratorSource(lambda i: i, count=records)
    stream = env.from_source(source, WatermarkStrategy.no_watermarks(), "numbers")
    stream = stream.map(lambda v: v + 1).name("map")
    stream = stream.key_by(lambda v: v % 128).map(Sleep(0.001)).name("sleepy map")
    stream.sink_to(DiscardingSink())
    return env


def run_anchor(mode: str, seconds: float) -> tuple[list[int], list[float], float | None]:
    """Run the (unbounded) anchor job for ``seconds``, then stop it with a savepoint (no
    drain). Returns the durations (ms) and in-flight bytes of the checkpoints that completed,
    and the seconds the stop-with-savepoint took (``None``: not within ``STOP_TIMEOUT_S``,
    the job was cancelled)."""
    tee, saved = Tee(), sys.stderr
    with tempfile.TemporaryDirectory() as directory:
        settings = {"execution.target": "local", "execution.checkpointing.dir": directory,
                    "execution.checkpointing.savepoint-dir": directory + "/savepoints",
                    "rest.port": "-1", **MODES[mode]}  # fmt: skip
        env = anchor_job(settings, None)
        sys.stderr = tee
        try:
            client = env.execute_async(f"debloat benchmark: {mode}")
            time.sleep(seconds)
            started = time.perf_counter()
            stopping = client.stop_with_savepoint(drain=False)
            stop_s: float | None
            try:
                stopping.result(timeout=STOP_TIMEOUT_S)
                stop_s = time.perf_counter() - started
            except FutureTimeout:
                stop_s = None
                client.cancel()
            with contextlib.suppress(Exception):  # cancelled: JobCancelledError
                client.get_job_execution_result(timeout=60)
        finally:
            sys.stderr = saved
    found = list(COMPLETED.finditer(tee.lines.getvalue()))
    durations = [int(m.group("ms")) for m in found]
    sizes = [float(m.group("size")) * UNITS[m.group("unit")] for m in found if m.group("size")]
    return durations, sizes, stop_s


def checkpoint_table(seconds: float) -> None:
    print(f"anchor job for {seconds:g} s (unbounded number source, ~1000 records/s taken), "
          f"checkpoint every 1 s, then stop-with-savepoint without drain")  # fmt: skip
    print(f"{'mode':<26} {'p50 ms':>8} {'p90 ms':>8} {'done':>5} {'in-flight':>10} "
          f"{'stop s':>7} {'p50 ratio':>9} {'bytes ratio':>11}")  # fmt: skip
    base: dict[str, tuple[float, float]] = {}
    for mode in MODES:
        durations, sizes, stop_s = run_anchor(mode, seconds)
        kind = mode.split(",")[0]
        p50 = statistics.median(durations) if durations else float("nan")
        p90 = statistics.quantiles(durations, n=10)[-1] if len(durations) > 1 else p50
        size = statistics.median(sizes) if sizes else float("nan")
        base.setdefault(kind, (p50, size))
        shown = f"{size / 1024:.1f} KiB" if sizes else "-"
        stop = f"{stop_s:.1f}" if stop_s is not None else f">{STOP_TIMEOUT_S:g}"
        print(f"{mode:<26} {_num(p50):>8} {_num(p90):>8} {len(durations):>5} {shown:>10} "
              f"{stop:>7} {_ratio(p50, base[kind][0]):>9} {_ratio(size, base[kind][1]):>11}",
              flush=True)  # fmt: skip


def _num(value: float) -> str:
    return "-" if math.isnan(value) else f"{value:.0f}"


def _ratio(value: float, baseline: float) -> str:
    """``value / baseline``, or "-" where either is missing (no checkpoint completed)."""
    if math.isnan(value) or math.isnan(baseline) or baseline == 0:
        return "-"
    return f"{value / baseline:.3f}x"


def _interleaved(
    modes: list[tuple[str, dict[str, str]]], run: Any, repeats: int
) -> tuple[dict[str, list[float]], dict[str, list[int]]]:
    """``run(settings)`` ``repeats`` times per mode, alternating which mode goes first (drift
    hits both): each mode's seconds per run, and the in-flight estimates of the checkpoint
    console lines its runs printed (kept from stderr, not shown)."""
    seconds: dict[str, list[float]] = {mode: [] for mode, _ in modes}
    estimates: dict[str, list[int]] = {mode: [] for mode, _ in modes}
    for repeat in range(repeats):
        for mode, extra in modes if repeat % 2 == 0 else modes[::-1]:
            tee, saved = Tee(), sys.stderr
            sys.stderr = tee
            try:
                seconds[mode].append(run(extra))
            finally:
                sys.stderr = saved
            found = ESTIMATE.finditer(tee.lines.getvalue())
            estimates[mode].extend(int(m.group("ms")) for m in found)
    return seconds, estimates


def throughput_table(records: int, repeats: int) -> None:
    try:
        import throughput  # type: ignore[import-not-found]
    except ImportError:
        from benchmarks import throughput  # type: ignore[no-redef]
    print(f"\nthroughput.py pipeline, p=2, {records} records, {repeats} runs each, local target")
    seconds, _ = _interleaved(
        [("off", OFF), ("on", ON)],
        lambda extra: throughput.run_job(records, 2, "local", extra),
        repeats,
    )
    rates = {mode: [records / s for s in runs] for mode, runs in seconds.items()}
    for mode, runs in rates.items():
        print(
            f"debloating {mode:<4} best {max(runs):>12,.0f}  median "
            f"{statistics.median(runs):>12,.0f} records/s",
            flush=True,
        )
    best = max(rates["on"]) / max(rates["off"])
    median = statistics.median(rates["on"]) / statistics.median(rates["off"])
    print(
        f"ratio on/off: best {best:.3f}x, median {median:.3f}x (>= 0.97x: may become the default)"
    )


def oracle_job_seconds(
    records: int, target: str, settings: dict[str, str], sink_spin_s: float = 0.0
) -> float:
    """Seconds the oracle pipeline (undertow.testing: p=2, 19 subtasks sharing the CPU,
    rebalance, shuffle and two hash exchanges) takes for ``records`` records from an
    unthrottled source, a checkpoint every 1 s, ``settings`` on top; ``sink_spin_s``: the
    verifying sink busy-waits that long per record (the bottleneck, every task before it
    backpressured; a subtask with fewer keys may still starve at times)."""
    from undertow.testing.oracle import OracleSource, build_pipeline

    with tempfile.TemporaryDirectory() as directory:
        config = {"execution.target": target, "execution.checkpointing.dir": directory,
                  "rest.port": "-1", **ALIGNED, **settings}  # fmt: skip
        env = StreamExecutionEnvironment.get_execution_environment(Configuration(config))
        env.set_parallelism(2)
        build_pipeline(env, OracleSource(20, records // 20), sink_spin_s=sink_spin_s)
        start = time.perf_counter()
        env.execute("debloat benchmark: oracle pipeline")
        return time.perf_counter() - start


def aim_cost_table(records: int, repeats: int, min_target: str) -> None:
    """What the aim costs where the tasks share the CPU: records/s with Flink's aim (held at
    the target) against the aim down to ``min_target`` (``"default"``: half the target),
    interleaved (who goes first alternates). The aim moves only while a consumer never waits
    for input. throughput.py's pipeline is the control, its consumers keep up (README). The
    unthrottled oracle pipeline turned out to be one too: its consumers starve now and then,
    so the aim stays near the target (its estimates barely move). Its rows with a spinning
    sink make the sink the bottleneck, every task before it backpressured. Each row shows the
    median in-flight estimate of the checkpoints (1 s apart; the slowest subtask's), which
    tells whether the aim moved."""
    try:
        import throughput  # type: ignore[import-not-found]
    except ImportError:
        from benchmarks import throughput  # type: ignore[no-redef]
    aim = {**ON} if min_target == "default" else {**ON, AIM: min_target}
    flink = {**ON, **FLINK_AIM}
    # throughput.py's pipeline is fast: at 800,000 records a run took ~1.3 s, mostly start-up,
    # and single runs spread 0.6x-1.7x; 5x the records (~2 s a run) still spread 0.7x-1.3x
    pipeline_records = 5 * records
    oracle_records = records // 10
    spun_records = records // 40
    jobs: list[tuple[str, int, Any]] = [
        ("throughput.py p=2, local", pipeline_records,
         lambda extra: throughput.run_job(pipeline_records, 2, "local", {**ALIGNED, **extra})),
        ("oracle p=2, local", oracle_records,
         lambda extra: oracle_job_seconds(oracle_records, "local", extra)),
        ("oracle p=2, local-threads", oracle_records,
         lambda extra: oracle_job_seconds(oracle_records, "local-threads", extra)),
        ("oracle, sink spins, local", spun_records,
         lambda extra: oracle_job_seconds(spun_records, "local", extra, SINK_SPIN_S)),
        ("oracle, sink spins, threads", spun_records,
         lambda extra: oracle_job_seconds(spun_records, "local-threads", extra, SINK_SPIN_S)),
    ]  # fmt: skip
    print(f"\nthe aim's cost: debloating on, Flink's aim (at the target) vs min-target "
          f"{min_target}; a checkpoint every 1 s; {repeats} interleaved runs each; records/s "
          "(median in-flight estimate of the checkpoints)")  # fmt: skip
    for name, size, run in jobs:
        seconds, estimates = _interleaved([("flink", flink), ("aim", aim)], run, repeats)
        rates = {mode: [size / s for s in runs] for mode, runs in seconds.items()}
        base, aimed = rates["flink"], rates["aim"]
        per_run = [b / a for a, b in zip(base, aimed, strict=False)]
        shown = {m: f"~{statistics.median(e):.0f} ms" if e else "-" for m, e in estimates.items()}
        print(f"{name:<26} Flink's aim {statistics.median(base):>9,.0f} ({shown['flink']})  aim "
              f"{statistics.median(aimed):>9,.0f} ({shown['aim']})  aim/Flink's median "
              f"{statistics.median(aimed) / statistics.median(base):.3f}x, per run "
              f"{', '.join(f'{r:.2f}' for r in per_run)}", flush=True)  # fmt: skip


PYFLINK_JOB = """
import json, sys, time, urllib.request
from pyflink.common import Configuration, WatermarkStrategy
from pyflink.datastream import StreamExecutionEnvironment
from pyflink.datastream.connectors.number_seq import NumberSequenceSource

seconds, port, settings = float(sys.argv[1]), int(sys.argv[2]), json.loads(sys.argv[3])
conf = Configuration()
for key, value in {"rest.port": str(port), "python.executable": sys.executable,
                   "python.client.executable": sys.executable, **settings}.items():
    conf.set_string(key, value)
env = StreamExecutionEnvironment.get_execution_environment(conf)
env.set_parallelism(1)
env.enable_checkpointing(1000)

def slow(v):
    time.sleep(0.001)
    return v

numbers = env.from_source(NumberSequenceSource(1, 10**12), WatermarkStrategy.no_watermarks(), "n")
numbers.map(lambda v: v + 1).key_by(lambda v: v % 128).map(slow).filter(lambda v: False).print()
client = env.execute_async("anchor")
time.sleep(seconds)
url = f"http://127.0.0.1:{port}/jobs/{client.get_job_id()}/checkpoints"
with urllib.request.urlopen(url, timeout=10) as response:
    stats = json.loads(response.read())
print(json.dumps({"completed": stats["counts"]["completed"],
                  "durations": [c["end_to_end_duration"] for c in stats.get("history", [])
                                if c["status"] == "COMPLETED"]}))
client.cancel().result()
"""


def pyflink_peer(python: str | None = None) -> tuple[Path, dict[str, str]]:
    """The interpreter of a PyFlink 2.3 venv and the environment to run it in: ``python``, or
    benchmarks/peers/pyflink_venv.py's venv (``UNDERTOW_PYFLINK_VENV``; made on first use)."""
    sys.path.insert(0, str(HERE / "peers"))
    import pyflink_venv  # type: ignore[import-not-found]

    found = Path(python) if python else pyflink_venv.ensure_pyflink()
    return found, pyflink_venv.pyflink_environment(found)


def pyflink_table(seconds: float, python: str | None) -> None:
    """The anchor job on PyFlink (process mode, its Python workers the venv's: the
    environment puts the venv first on ``PATH``), debloating off / on, in the same run as
    undertow's table. PyFlink is only run as an external interpreter; undertow does not depend
    on it."""
    interpreter, peer_env = pyflink_peer(python)
    print(f"\nPyFlink (process mode), anchor job for {seconds:g} s (start-up included), "
          "checkpoint every 1 s; p50 over the last 10 completed (its REST history)")  # fmt: skip
    modes = {
        "aligned, off": {},
        "aligned, on (1 s)": {DEBLOAT + "enabled": "true"},
        "aligned, on (300 ms)": {DEBLOAT + "enabled": "true", DEBLOAT + "target": "300 ms"},
    }
    with tempfile.NamedTemporaryFile("w", suffix=".py", delete=False) as script:
        script.write(PYFLINK_JOB)
    for port, (mode, settings) in enumerate(modes.items(), start=18951):
        run = subprocess.run(
            [str(interpreter), script.name, str(seconds), str(port), json.dumps(settings)],
            capture_output=True, text=True, timeout=seconds + 180, check=False, env=peer_env,
        )  # fmt: skip
        lines = [line for line in run.stdout.splitlines() if line.startswith("{")]
        if run.returncode != 0 or not lines:
            print(f"{mode:<22} failed: {run.stderr.strip().splitlines()[-1:]}", flush=True)
            continue
        result = json.loads(lines[-1])
        durations = result["durations"]
        p50 = _num(statistics.median(durations)) if durations else "-"
        print(f"{mode:<22} p50 {p50:>6} ms, {result['completed']} completed", flush=True)


def peers_table(seconds: float, repeats: int, modes: list[str], warmup: float) -> None:
    """undertow (local) beside PyFlink thread mode on the anchor job, debloating on,
    interleaved (who goes first alternates), each run measured by the same REST runner."""
    python, peers_env = pyflink_peer()
    engines: list[tuple[str, str, Path, dict[str, str] | None]] = [
        ("undertow", "local", Path(sys.executable), None),
        ("pyflink", "thread", python, peers_env),
    ]
    print(f"\nanchor job (anchor-sleep), {seconds:g} s windows after {warmup:g} s of warm-up, "
          f"{repeats} "
          "interleaved runs per engine and mode; p50 of each run's checkpoints")  # fmt: skip
    for mode in modes:
        p50s: dict[str, list[float]] = {"undertow": [], "pyflink": []}
        for repeat in range(repeats):
            order = engines if repeat % 2 == 0 else engines[::-1]
            for engine, flavour, interpreter, env in order:
                result = _run_shape(interpreter, env, engine, flavour, mode, seconds,
                                    warmup=warmup)  # fmt: skip
                durations = result["durations_ms"] if result else []
                if durations:
                    p50s[engine].append(statistics.median(durations))
                estimates = result.get("estimates_ms", []) if result else []
                estimate = f"{statistics.median(estimates):.0f} ms" if estimates else "-"
                print(f"  {mode:<22} run {repeat + 1} {engine}/{flavour:<6} p50 "
                      f"{_num(statistics.median(durations)) if durations else '-':>6} ms, "
                      f"{len(durations)} completed, own estimate (median) {estimate}",
                      flush=True)  # fmt: skip
        ours, theirs = p50s["undertow"], p50s["pyflink"]
        if ours and theirs:
            ratios = [a / b for a, b in zip(ours, theirs, strict=False)]
            print(f"{mode:<22} undertow p50 median {statistics.median(ours):.0f} ms "
                  f"[{min(ours):.0f}-{max(ours):.0f}], PyFlink thread "
                  f"{statistics.median(theirs):.0f} ms [{min(theirs):.0f}-{max(theirs):.0f}], "
                  "ratio per run "
                  f"{', '.join(f'{r:.2f}x' for r in ratios)}", flush=True)  # fmt: skip


#: The aim-cost case's spinning sink, per record: about twice the CPU the whole unthrottled
#: oracle pipeline spends per record on ``local`` (2 cores / ~9,300 records/s), so the sink is
#: the bottleneck.
SINK_SPIN_S = 0.0005

#: Pairs (debloating off, on) of benchmarks/peers/run_shape.py modes for the ``shapes`` case.
#: Aligned checkpoints under backpressure complete more often with debloating on, and each
#: completed checkpoint costs snapshot work, so the aligned pair measures more than debloating.
#: Without checkpoints and with unaligned ones both sides do the same checkpoint work.
COST_PAIRS = {
    "none": ("off", "off-debloat"),
    "unaligned": ("unaligned", "unaligned-debloat"),
    "aligned": ("aligned", "aligned-debloat"),
    # the default aim (down to half the target) against Flink's (at the target), both on
    "aim-none": ("off-debloat-flink", "off-debloat"),
    "aim-unaligned": ("unaligned-debloat-flink", "unaligned-debloat"),
}


def shapes_cost_table(seconds: float, repeats: int, checkpointing: list[str]) -> None:
    """Throughput (records/s of the last vertex) of every checkpoint-latency shape, debloating
    on vs off, undertow on ``local``, interleaved (alternating order), per checkpoint mode."""
    sys.path.insert(0, str(HERE / "peers"))
    import shapes  # type: ignore[import-not-found]

    for kind in checkpointing:
        modes = list(COST_PAIRS[kind])
        print(f"\ncheckpoint-latency shapes, checkpoints {kind}, {seconds:g} s windows, "
              f"{repeats} interleaved runs each: records/s (completed checkpoints), "
              "debloating on / off")  # fmt: skip
        for shape in shapes.SHAPES:
            rates: dict[str, list[float]] = {m: [] for m in modes}
            counts: dict[str, list[int]] = {m: [] for m in modes}
            for repeat in range(repeats):
                for mode in modes if repeat % 2 == 0 else modes[::-1]:
                    result = _run_shape(Path(sys.executable), None, "undertow", "local", mode,
                                        seconds, shape)  # fmt: skip
                    if result and result["records_per_s"] > 0:
                        rates[mode].append(float(result["records_per_s"]))
                        counts[mode].append(len(result["durations_ms"]))
            off, on = rates[modes[0]], rates[modes[1]]
            if not off or not on:
                print(f"{shape:<18} no result", flush=True)
                continue
            per_run = [b / a for a, b in zip(off, on, strict=False)]
            done = {m: statistics.median(c) for m, c in counts.items()}
            print(f"{shape:<18} off {statistics.median(off):>9,.0f} ({done[modes[0]]:g})  on "
                  f"{statistics.median(on):>9,.0f} ({done[modes[1]]:g})  on/off median "
                  f"{statistics.median(on) / statistics.median(off):.3f}x, per run "
                  f"{', '.join(f'{r:.2f}' for r in per_run)}", flush=True)  # fmt: skip


def _run_shape(python: Path, env: dict[str, str] | None, engine: str, flavour: str, mode: str,
               seconds: float, shape: str = "anchor-sleep",
               warmup: float = 3.0) -> dict[str, Any] | None:  # fmt: skip
    command = [str(python), str(HERE / "peers" / "run_shape.py"), "--engine", engine,
               "--flavour", flavour, "--shape", shape, "--mode", mode,
               "--seconds", str(seconds), "--warmup", str(warmup)]  # fmt: skip
    done = subprocess.run(command, env=env, capture_output=True, text=True,
                          timeout=seconds + warmup + 240)  # fmt: skip
    for line in done.stdout.splitlines():
        if line.startswith("RESULT "):
            result: dict[str, Any] = json.loads(line[len("RESULT ") :])
            return result
    tail = "\n".join((done.stdout + done.stderr).splitlines()[-5:])
    print(f"  {engine}/{flavour} {mode}: no result (exit {done.returncode})\n{tail}")
    return None


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=15.0, help="input per anchor run")
    parser.add_argument("--records", type=int, default=1_000_000, help="throughput run size")
    parser.add_argument("--repeats", type=int, default=3, help="throughput runs per mode")
    parser.add_argument("--cases", default="checkpoints,throughput",
                        help="tables: checkpoints, throughput, shapes, pyflink, "
                             "aim-cost")  # fmt: skip
    parser.add_argument("--min-target", default="default",
                        help="aim-cost case: the aim's min-target (default: unset, half the "
                             "target)")  # fmt: skip
    parser.add_argument("--pyflink-python", default=None,
                        help="interpreter with PyFlink installed (the pyflink case; default: "
                             "benchmarks/peers/pyflink_venv.py's venv)")  # fmt: skip
    parser.add_argument("--cost-checkpointing", default="none,unaligned",
                        help="shapes case: checkpointing of the on/off pairs: "
                             + ", ".join(COST_PAIRS))  # fmt: skip
    parser.add_argument("--peers", action="store_true",
                        help="the anchor job beside PyFlink thread mode only")  # fmt: skip
    parser.add_argument("--peer-modes", default="aligned-debloat,aligned-debloat-300ms",
                        help="run_shape.py modes of the --peers table")  # fmt: skip
    parser.add_argument("--warmup", type=float, default=3.0,
                        help="--peers: seconds after RUNNING before the window opens")  # fmt: skip
    args = parser.parse_args()
    if args.peers:
        peers_table(args.seconds, args.repeats, args.peer_modes.split(","), args.warmup)
        return
    cases = args.cases.split(",")
    if "checkpoints" in cases:
        checkpoint_table(args.seconds)
    if "pyflink" in cases:
        pyflink_table(args.seconds, args.pyflink_python)
    if "throughput" in cases:
        throughput_table(args.records, args.repeats)
    if "shapes" in cases:
        shapes_cost_table(args.seconds, args.repeats, args.cost_checkpointing.split(","))
    if "aim-cost" in cases:
        aim_cost_table(args.records, args.repeats, args.min_target)


if __name__ == "__main__":
    main()
