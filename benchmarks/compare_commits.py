"""Throughput of two commits in the same run: is a change (a redesign) no slower?

Checks out ``--before`` (and ``--after``, else this checkout) as detached git worktrees under
``.bench/commits/``, each with its own venv, and runs ``benchmarks/throughput.py``'s job in
each, alternating round by round so that both sides see the same machine. Each round is one
driver process per side: a small first job (the driver's one-time start: imports, the
``local`` target's fork server where the commit has one), then one timed job per parallelism.
Prints every round, the medians, the after/before ratios, and one ``target`` line per
parallelism (no worse: ratio >= ``--goal``). ``--job cuts`` runs
``benchmarks/columnar_cuts.py``'s job (row cuts on; ``--records`` are its rows, 400,000
unless given) instead and compares its unaligned checkpoint p50, p90 and max (medians of the
rounds' figures), rows/s and the first times of three of its hops (``checkpoint_hops``: the
trigger at the worker, the source's mail, a barrier at a channel), ending with the
issue's target for the after side (p50 <= 20 ms) and a no-worse target for its rows/s.
``--job record`` runs ``benchmarks/throughput.py``'s job at p=2 without checkpoints (with
them every ``--checkpoint-interval``, as the target's job, when given) in
steady state (``record_vs_loop.steady``: a run of ``--records``, 4,000,000 unless given, minus
one of an eighth) and compares CPU per record of every process of the job, rows/s, and the
seconds its processes ran and waited on a run queue (``process_cpu.RunQueueWait``): a job
short of CPU waits, an idle one does neither; this checkout's scripts run the job on both
sides, each side's engine. ``--job pieces`` runs each side's own ``benchmarks/record_path.py``
(``--records`` its ``--repeat``, 100 unless given) and compares the nanoseconds per record of
every piece both sides time, also in units of the plain loop timed in the same run (the
machine's phase moves a whole run), with a ``target`` line for ``--piece``. ``--job columnar``
runs ``benchmarks/columnar.py``'s keyed running sum (CPU per row of every process of the job
in steady state, ``--records`` its rows, 8,000,000 unless given: on a loaded machine the
difference of two timed runs moved by 10x, CPU much less) and the latency job of
``benchmarks/columnar_latency.py`` unpaced over twice the rows, doubled again while a run
ends within its 1 s warm-up (rows/s at its sink, which leaves the job's start out, and p99 ms
after the warm-up). Usage::

    python benchmarks/compare_commits.py --before f56c37c [--after HEAD] [--records 2000000]
        [--rounds 5] [--weighted] [--job throughput|cuts|columnar|record|pieces] [--piece NAME]
        [--checkpoint-interval '1 s']

``--weighted`` (Linux, root, cgroup v1 ``cpu`` controller) runs each side in a cgroup with the
highest CPU weight, so that other work on a shared machine takes little from either side; the
header says whether it was used.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
CPU_CGROUP = Path("/sys/fs/cgroup/cpu")
#: record_path.py's baseline piece: ``--job pieces`` also divides each piece by it.
LOOP_PIECE = "plain Python loop (baseline)"
#: Runs in a side's venv and tree; prints one JSON line: the first job and records/s per p.
CHILD = """
import json, sys
sys.path.insert(0, "benchmarks")
from throughput import run_job
records, parallelisms = int(sys.argv[1]), [int(p) for p in sys.argv[2].split(",")]
first = run_job(100_000, 1, "local")
rates = {p: records / run_job(records, p, "local") for p in parallelisms}
print(json.dumps({"first_s": first, "rates": rates}))
"""
#: The same for ``--job cuts``: one run of columnar_cuts.py's job with row cuts on, its hops
#: probed (``checkpoint_hops``; this checkout's scripts on both sides, each side's engine).
CUTS_CHILD = """
import json, statistics, sys
sys.path.insert(0, BENCHMARKS)
import checkpoint_hops
from columnar_cuts import run
checkpoint_hops.install()
durations, rate = run(int(sys.argv[1]), 20_000, 25e-6, True)
print(json.dumps({"p50_ms": statistics.median(durations) if durations else None, "rate": rate,
                  "p90_ms": statistics.quantiles(durations, n=10, method="inclusive")[-1]
                            if len(durations) > 1 else None,
                  "max_ms": max(durations, default=None), "hops": checkpoint_hops.medians()}))
"""
#: ``--job cuts``: the hops each round prints, ms after the trigger decision (p50 over the
#: checkpoints of its first or last occurrence: the later source is the one a checkpoint waits for).
CUT_HOPS = {"trigger at worker, last": ("worker received trigger", 1),
            "source mail, last": ("source mail taken", 1),
            "barrier at channel, first": ("barrier arrived (network)", 0)}  # fmt: skip

#: The same for ``--job record``: the record path's steady state at p=2 (BENCHMARKS: this
#: checkout's scripts, so both sides run the same job and readers on their own engine).
RECORD_CHILD = """
import json, os, sys, tempfile
sys.path.insert(0, BENCHMARKS)
import process_cpu, record_vs_loop, throughput
rows, queues, settings = int(sys.argv[1]), [], {}
if INTERVAL:
    settings = {"execution.checkpointing.interval": INTERVAL,
                "execution.checkpointing.dir": tempfile.mkdtemp(prefix="compare-record-")}
def run(n):
    with process_cpu.RunQueueWait(os.getpid()) as queue:
        sample = record_vs_loop.job_sample(n, settings)
    queues.append((queue.ran_s, queue.waited_s))
    return sample
throughput.run_job(throughput.FIRST_JOB_RECORDS, 2, "local")  # the driver's one-time start
job = record_vs_loop.steady(run, rows)
(ran_a, waited_a), (ran_b, waited_b) = queues
print(json.dumps({"cpu_us": job.cpu_s / job.rows * 1e6, "rate": job.rows / job.wall_s,
                  "ran_us": (ran_b - ran_a) / job.rows * 1e6,
                  "waited_us": (waited_b - waited_a) / job.rows * 1e6}))
"""

#: The same for ``--job columnar``: the running sum's CPU per row in steady state (every
#: process of the job; a run of an eighth of the rows subtracted), the latency job unpaced
#: (this checkout's scripts on both sides, each side's engine).
COLUMNAR_CHILD = """
import json, os, sys, tempfile
sys.path.insert(0, BENCHMARKS)
import columnar, columnar_latency, process_cpu
rows, work = int(sys.argv[1]), tempfile.mkdtemp()
def cpu_s():
    return process_cpu.CpuGroups({"tree": [os.getpid()]}, reaped=True).read()["tree"]
columnar.undertow_columnar(rows // 8, 32768, work)  # the driver's one-time start
c0 = cpu_s(); columnar.undertow_columnar(rows // 8, 32768, work)
c1 = cpu_s(); columnar.undertow_columnar(rows, 32768, work)
ns = (cpu_s() - c1 - (c1 - c0)) / (rows - rows // 8) * 1e9
checkpoints = columnar.CHECKPOINTS
def latency(n):
    return columnar_latency.measure(n, 32768, None, work, checkpoints, 1000.0)
((p50, p99), _, sink), latency_rows = columnar_latency.past_warmup(latency, 2 * rows)
print(json.dumps({"cpu_ns": ns, "latency_rate": sink, "p99_ms": p99,
                  "latency_rows": latency_rows}))
"""


def checkout(rev: str) -> Path:
    """A worktree of ``rev`` with its own venv (made once, reused by later runs)."""
    sha = subprocess.run(["git", "-C", str(ROOT), "rev-parse", rev], check=True,
                         capture_output=True, text=True).stdout.strip()  # fmt: skip
    tree = ROOT / ".bench" / "commits" / sha[:12]
    if not (tree / ".git").exists():
        tree.parent.mkdir(parents=True, exist_ok=True)
        subprocess.run(["git", "-C", str(ROOT), "worktree", "add", "--detach", str(tree), sha],
                       check=True, capture_output=True)  # fmt: skip
    python = tree / ".venv" / "bin" / "python"
    if not (tree / ".venv" / ".bench-installed").exists():
        print(f"installing {rev} ({sha[:12]}) into {tree}/.venv ...", flush=True)
        subprocess.run([sys.executable, "-m", "venv", str(tree / ".venv")], check=True)
        subprocess.run([str(python), "-m", "pip", "install", "-q", "-e", str(tree)], check=True)
        (tree / ".venv" / ".bench-installed").touch()
    return tree


def weighted_prefix() -> list[str] | None:
    """A command prefix that runs its command in a new cgroup of the highest CPU weight."""
    if os.geteuid() != 0 or not (CPU_CGROUP / "cpu.shares").exists():
        return None
    group = CPU_CGROUP / f"undertow-bench-{os.getpid()}"
    group.mkdir(exist_ok=True)
    (group / "cpu.shares").write_text("262144")
    return ["sh", "-c", f'echo $$ > {group}/tasks && exec "$@"', "sh"]


def release_weight() -> None:
    group = CPU_CGROUP / f"undertow-bench-{os.getpid()}"
    if group.exists():
        for pid in (group / "tasks").read_text().split():
            try:
                (CPU_CGROUP / "tasks").write_text(pid)
            except OSError:
                pass  # ended meanwhile
        group.rmdir()


def run_side(tree: Path, records: int, parallelisms: list[int], prefix: list[str],
             child: str = CHILD) -> dict:  # fmt: skip
    python = str(tree / ".venv" / "bin" / "python")
    cmd = [*prefix, python, "-c", child, str(records), ",".join(map(str, parallelisms))]
    done = subprocess.run(cmd, cwd=tree, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise SystemExit(f"the job in {tree} failed ({done.returncode}):\n{done.stderr[-2000:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--before", required=True)
    parser.add_argument("--after", help="a commit; default: this checkout as it is")
    parser.add_argument("--records", type=int, default=2_000_000)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--parallelism", default="1,2")
    parser.add_argument("--goal", type=float, default=0.95)
    parser.add_argument("--weighted", action="store_true")
    parser.add_argument("--job", choices=("throughput", "cuts", "columnar", "record", "pieces"),
                        default="throughput")  # fmt: skip
    parser.add_argument("--piece", default="sum: keys + fold into heap state",
                        help="--job pieces: the piece of the target line")  # fmt: skip
    parser.add_argument("--checkpoint-interval",
                        help="--job record: checkpoints at this interval (the target's job "
                             "takes them every second; default: none)")  # fmt: skip
    args = parser.parse_args()
    parallelisms = [int(p) for p in args.parallelism.split(",")]
    sides = {"before": checkout(args.before), "after": checkout(args.after) if args.after else ROOT}
    prefix = weighted_prefix() if args.weighted else None
    if args.weighted and prefix is None:
        raise SystemExit("--weighted needs root and the cgroup v1 cpu controller")
    weighted = "yes" if prefix else "no"
    if args.job != "throughput":
        try:
            compare = {"cuts": compare_cuts, "columnar": compare_columnar,
                       "record": compare_record, "pieces": compare_pieces}[args.job]  # fmt: skip
            compare(args, sides, prefix or [], weighted)
        finally:
            if prefix:
                release_weight()
        return
    print(f"before {args.before}, after {args.after or 'this checkout'}; {args.records:,} "
          f"records; weighted: {weighted}; load {os.getloadavg()[0]:.1f}")  # fmt: skip
    results: dict[str, list[dict]] = {"before": [], "after": []}
    try:
        for round_ in range(args.rounds):
            for name in ("before", "after") if round_ % 2 == 0 else ("after", "before"):
                result = run_side(sides[name], args.records, parallelisms, prefix or [])
                results[name].append(result)
                rates = "  ".join(
                    f"p={p} {result['rates'][str(p)]:>11,.0f}/s" for p in parallelisms
                )
                print(f"round {round_} {name:<6} first job {result['first_s']:.2f} s  {rates}",
                      flush=True)  # fmt: skip
    finally:
        if prefix:
            release_weight()
    print(f"{'median':<14}{'before':>14}{'after':>14}{'after/before':>14}")
    first = {n: statistics.median(r["first_s"] for r in results[n]) for n in results}
    print(f"{'first job, s':<14}{first['before']:>14.2f}{first['after']:>14.2f}"
          f"{first['after'] / first['before']:>14.2f}")  # fmt: skip
    ratios = {}
    for p in parallelisms:
        med = {n: statistics.median(r["rates"][str(p)] for r in results[n]) for n in results}
        ratios[p] = med["after"] / med["before"]
        print(f"{f'p={p}, rec/s':<14}{med['before']:>14,.0f}{med['after']:>14,.0f}"
              f"{ratios[p]:>14.2f}")  # fmt: skip
    for p in parallelisms:
        verdict = "met" if ratios[p] >= args.goal else "missed"
        print(
            f"target throughput p={p} no worse: {ratios[p]:.2f}x (goal >= {args.goal}x): {verdict}"
        )


def compare_cuts(args: argparse.Namespace, sides: dict[str, Path], prefix: list[str],
                 weighted: str) -> None:  # fmt: skip
    """``--job cuts``: columnar_cuts.py's job on both sides, alternating; p50 and rows/s."""
    rows = args.records if args.records != 2_000_000 else 400_000
    print(f"columnar_cuts job, before {args.before}, after {args.after or 'this checkout'}; "
          f"{rows:,} rows; weighted: {weighted}; load {os.getloadavg()[0]:.1f}")  # fmt: skip
    child = CUTS_CHILD.replace("BENCHMARKS", repr(str(ROOT / "benchmarks")))
    results: dict[str, list[dict]] = {"before": [], "after": []}
    for round_ in range(args.rounds):
        for name in ("before", "after") if round_ % 2 == 0 else ("after", "before"):
            result = run_side(sides[name], rows, [], prefix, child)
            for label, (hop, which) in CUT_HOPS.items():
                result[label] = result["hops"].get(hop, [None, None])[which]
            results[name].append(result)
            hops = "  ".join(f"{label} {result[label]:.1f}" for label in CUT_HOPS
                             if result[label] is not None)  # fmt: skip
            print(f"round {round_} {name:<6} checkpoint p50 {result['p50_ms']} ms "
                  f"p90 {result['p90_ms']} max {result['max_ms']} ms  "
                  f"{result['rate']:>9,.0f} rows/s  hops (ms, p50): {hops}  "
                  f"(load {os.getloadavg()[0]:.1f})", flush=True)  # fmt: skip
    print(f"{'median':<20}{'before':>10}{'after':>10}{'after/before':>14}")
    medians = {}
    for label, field in (("checkpoint p50, ms", "p50_ms"), ("checkpoint p90, ms", "p90_ms"),
                         ("checkpoint max, ms", "max_ms"), ("rows/s", "rate"),
                         *((f"{hop}, ms", hop) for hop in CUT_HOPS)):  # fmt: skip
        med = {n: statistics.median(r[field] for r in results[n] if r[field] is not None)
               for n in results}  # fmt: skip
        medians[field] = med
        print(f"{label:<20}{med['before']:>10,.1f}{med['after']:>10,.1f}"
              f"{med['after'] / med['before']:>14.2f}")  # fmt: skip
    print(f"load at end {os.getloadavg()[0]:.1f}")
    p50 = medians["p50_ms"]["after"]
    print(f"target unaligned-p50-with-row-cuts (after): {p50:.0f} ms (goal 20 ms): "
          f"{'met' if p50 <= 20 else 'missed'}")  # fmt: skip
    ratio = medians["rate"]["after"] / medians["rate"]["before"]
    print(f"target rows/s no worse: {ratio:.2f}x (goal >= {args.goal}x): "
          f"{'met' if ratio >= args.goal else 'missed'}")  # fmt: skip


def compare_columnar(args: argparse.Namespace, sides: dict[str, Path], prefix: list[str],
                     weighted: str) -> None:  # fmt: skip
    """``--job columnar``: the running sum and the unpaced latency job on both sides,
    alternating; medians and after/before ratios, a ``target`` line for the running sum."""
    rows = args.records if args.records != 2_000_000 else 8_000_000
    child = COLUMNAR_CHILD.replace("BENCHMARKS", repr(str(ROOT / "benchmarks")))
    print(f"columnar running sum, before {args.before}, after {args.after or 'this checkout'}; "
          f"{rows:,} rows; weighted: {weighted}; load {os.getloadavg()[0]:.1f}")  # fmt: skip
    results: dict[str, list[dict]] = {"before": [], "after": []}
    for round_ in range(args.rounds):
        for name in ("before", "after") if round_ % 2 == 0 else ("after", "before"):
            result = run_side(sides[name], rows, [], prefix, child)
            results[name].append(result)
            print(f"round {round_} {name:<6} running sum {result['cpu_ns']:>6,.0f} ns CPU/row  "
                  f"latency job {result['latency_rate']:>12,.0f} rows/s, p99 "
                  f"{result['p99_ms']:.0f} ms over {result['latency_rows']:,} rows  "
                  f"(load {os.getloadavg()[0]:.1f})",
                  flush=True)  # fmt: skip
    print(f"{'median':<22}{'before':>14}{'after':>14}{'after/before':>14}")
    med: dict[str, dict[str, float]] = {}
    for label, field in (("running sum, ns/row", "cpu_ns"), ("latency job, rows/s", "latency_rate"),
                         ("latency job p99, ms", "p99_ms")):  # fmt: skip
        med[field] = {n: statistics.median(r[field] for r in results[n]) for n in results}
        print(f"{label:<22}{med[field]['before']:>14,.0f}{med[field]['after']:>14,.0f}"
              f"{med[field]['after'] / med[field]['before']:>14.2f}")  # fmt: skip
    ratio = med["cpu_ns"]["before"] / med["cpu_ns"]["after"]  # > 1: less CPU per row after
    verdict = "met" if ratio >= args.goal else "missed"
    print(f"target columnar running sum CPU no worse: {ratio:.2f}x rows per CPU second "
          f"(goal >= {args.goal}x): {verdict}")  # fmt: skip


def compare_record(args: argparse.Namespace, sides: dict[str, Path], prefix: list[str],
                   weighted: str) -> None:  # fmt: skip
    """``--job record``: the record path's steady state on both sides, alternating; CPU per
    record, rows/s and run-queue figures, medians and after/before ratios, a ``target`` line."""
    rows = args.records if args.records != 2_000_000 else 4_000_000
    child = RECORD_CHILD.replace("BENCHMARKS", repr(str(ROOT / "benchmarks")))
    child = child.replace("INTERVAL", repr(args.checkpoint_interval or ""))
    checkpoints = f"checkpoints every {args.checkpoint_interval}" if args.checkpoint_interval \
        else "no checkpoints"  # fmt: skip
    print(f"record path p=2 steady, before {args.before}, after {args.after or 'this checkout'}; "
          f"{rows:,} rows; {checkpoints}; weighted: {weighted}; "
          f"load {os.getloadavg()[0]:.1f}")  # fmt: skip
    results: dict[str, list[dict]] = {"before": [], "after": []}
    for round_ in range(args.rounds):
        for name in ("before", "after") if round_ % 2 == 0 else ("after", "before"):
            result = run_side(sides[name], rows, [], prefix, child)
            results[name].append(result)
            print(f"round {round_} {name:<6} {result['cpu_us']:5.2f} us CPU/record "
                  f"{result['rate']:>11,.0f} rows/s; per record ran {result['ran_us']:5.2f} us, "
                  f"waited {result['waited_us']:5.2f} us on a run queue "
                  f"(load {os.getloadavg()[0]:.1f})", flush=True)  # fmt: skip
    print(f"{'median':<30}{'before':>12}{'after':>12}{'after/before':>14}")
    med: dict[str, dict[str, float]] = {}
    for label, field in (("CPU per record, us", "cpu_us"), ("rows/s", "rate"),
                         ("ran per record, us", "ran_us"),
                         ("run-queue wait per record, us", "waited_us")):  # fmt: skip
        med[field] = {n: statistics.median(r[field] for r in results[n]) for n in results}
        digits = 0 if field == "rate" else 2
        print(f"{label:<30}{med[field]['before']:>12,.{digits}f}"
              f"{med[field]['after']:>12,.{digits}f}"
              f"{med[field]['after'] / med[field]['before']:>14.2f}")  # fmt: skip
    low = {n: min(r["cpu_us"] for r in results[n]) for n in results}
    print(f"{'CPU per record, lowest, us':<30}{low['before']:>12,.2f}{low['after']:>12,.2f}"
          f"{low['after'] / low['before']:>14.2f}")  # fmt: skip
    print(f"load at end {os.getloadavg()[0]:.1f}")
    ratio = med["cpu_us"]["before"] / med["cpu_us"]["after"]  # > 1: less CPU per record after
    verdict = "met" if ratio >= args.goal else "missed"
    print(f"target record path CPU no worse: {ratio:.2f}x records per CPU second "
          f"(goal >= {args.goal}x): {verdict}")  # fmt: skip


def compare_pieces(args: argparse.Namespace, sides: dict[str, Path], prefix: list[str],
                   weighted: str) -> None:  # fmt: skip
    """``--job pieces``: each side's record_path.py, alternating; per piece both sides time,
    the median ns per record and after/before, a ``target`` line for ``--piece``."""
    repeat = args.records if args.records != 2_000_000 else 100
    print(f"record_path.py pieces, before {args.before}, after {args.after or 'this checkout'}; "
          f"--repeat {repeat}; weighted: {weighted}; load {os.getloadavg()[0]:.1f}")  # fmt: skip
    results: dict[str, list[dict[str, float]]] = {"before": [], "after": []}
    for round_ in range(args.rounds):
        for name in ("before", "after") if round_ % 2 == 0 else ("after", "before"):
            python = str(sides[name] / ".venv" / "bin" / "python")
            cmd = [*prefix, python, "benchmarks/record_path.py", "--repeat", str(repeat)]
            done = subprocess.run(cmd, cwd=sides[name], capture_output=True, text=True,
                                  check=True)  # fmt: skip
            pieces = {}
            table = done.stdout.split("\n\n", 1)[0]  # the budget follows a blank line
            for line in table.splitlines()[1:]:
                piece, ns = line.rsplit(maxsplit=1)
                pieces[piece.strip()] = float(ns)
            results[name].append(pieces)
            print(f"round {round_} {name:<6} " + "; ".join(f"{k} {v:.0f}" for k, v in
                  pieces.items()) + f" (load {os.getloadavg()[0]:.1f})", flush=True)  # fmt: skip
    # A run's pieces move together with the machine's phase (other work on the two cores), so
    # each piece is also taken relative to the plain loop timed in the same run.
    common = [p for p in results["before"][0] if p in results["after"][0]]
    print(f"{'median ns/record':<34}{'before':>8}{'after':>8}{'ratio':>7}"
          f"{'/loop before':>14}{'/loop after':>13}{'ratio':>7}")  # fmt: skip
    rel = {}
    for piece in common:
        ns = {n: statistics.median(r[piece] for r in results[n]) for n in results}
        rel[piece] = {n: statistics.median(r[piece] / r[LOOP_PIECE] for r in results[n])
                      for n in results}  # fmt: skip
        print(
            f"{piece:<34}{ns['before']:>8.1f}{ns['after']:>8.1f}"
            f"{ns['after'] / ns['before']:>7.2f}{rel[piece]['before']:>14.3f}"
            f"{rel[piece]['after']:>13.3f}{rel[piece]['after'] / rel[piece]['before']:>7.2f}"
        )
    print(f"load at end {os.getloadavg()[0]:.1f}")
    if args.piece in rel:
        ratio = rel[args.piece]["before"] / rel[args.piece]["after"]  # > 1: after is faster
        verdict = "met" if ratio >= args.goal else "missed"
        print(f"target {args.piece} no worse (each run's loop as the unit): {ratio:.2f}x "
              f"(goal >= {args.goal}x): {verdict}")  # fmt: skip


if __name__ == "__main__":
    main()
