"""A ``KeyedProcessFunction`` with a ``MapState``: the heap backend against RocksDB, same run.

Two jobs, p=1 on the ``local`` target, no checkpoints, each record one ``get`` and one ``put``
of one map entry:

- ``small``: 1,000 keys, each with a 7-entry map (a count per ``x % 7``);
- ``large``: 4 keys, each with a 1,000-entry map (filled by the first 4,000 records; each
  record touches one entry).

Each job's rows/s is steady-state (the difference of a run of all rows and one of an eighth),
on ``hashmap`` and on ``rocksdb`` in the same child process. ``--before REV`` also runs the
jobs on another commit (a worktree and venv made by ``compare_commits.checkout``; this
script, each side's engine), the two sides alternating per round; ``--weighted`` runs each
side in a cgroup of the highest CPU weight. Targets (the after side, medians): RocksDB within
3x of the heap on the small map, and RocksDB's rows/s on the 1,000-entry map at least 0.8 of
its rows/s on the 7-entry one (no growth with map size). ``--ops``: only the ns of a ``get``
and a ``put`` on each backend's ``MapState`` by map key type, in this interpreter. Usage::

    python benchmarks/rocksdb_map_state.py [--rows N] [--large-rows N] [--rounds R]
        [--before REV] [--weighted] [--ops]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

JOBS = {"small": (1_000, 7), "large": (4, 1_000)}  # job -> (keys, map entries per key)
BACKENDS = ("hashmap", "rocksdb")
#: Goals: RocksDB rows/s at least 1/3 of the heap's (small map), and large/small >= 0.8.
SMALL_GOAL = 3.0
LARGE_GOAL = 0.8


def run(job: str, backend: str, rows: int) -> float:
    """Seconds to run ``job`` on ``backend`` over ``rows`` numbers (this process's undertow)."""
    from undertow.common import Configuration, WatermarkStrategy
    from undertow.datastream import StreamExecutionEnvironment
    from undertow.datastream.connectors import DiscardingSink, NumberSequenceSource
    from undertow.datastream.functions import KeyedProcessFunction
    from undertow.datastream.state import MapStateDescriptor

    keys, entries = JOBS[job]

    class CountPerEntry(KeyedProcessFunction):
        def open(self, runtime_context: Any) -> None:
            self.counts = runtime_context.get_map_state(MapStateDescriptor("counts", None, None))

        def process_element(self, value: Any, ctx: Any) -> None:
            entry = (value // keys) % entries
            count = self.counts.get(entry)
            self.counts.put(entry, 1 if count is None else count + 1)

    settings = {"execution.target": "local", "rest.port": "-1", "state.backend.type": backend}
    env = StreamExecutionEnvironment.get_execution_environment(Configuration(settings))
    env.set_parallelism(1)
    (
        env.from_source(NumberSequenceSource(0, rows - 1), WatermarkStrategy.no_watermarks(), "n")
        .key_by(lambda x: x % keys)
        .process(CountPerEntry())
        .sink_to(DiscardingSink())
    )
    start = time.perf_counter()
    env.execute(f"map-state {job} {backend}")
    return time.perf_counter() - start


def child(rows: dict[str, int]) -> None:
    """One round of every job on both backends in this interpreter: one JSON line."""
    run("small", "hashmap", 10_000)  # the fork server's start, outside the timed runs
    rates = {}
    for job, n in rows.items():
        for backend in BACKENDS:
            small, full = run(job, backend, n // 8), run(job, backend, n)
            rates[f"{job} {backend}"] = (n - n // 8) / (full - small)
    print(json.dumps(rates), flush=True)


def encoder_ns(repeat: int = 200_000) -> dict[str, float]:
    """Nanoseconds per key (median of 5 runs) of a new pickler per key (the encoding before
    ``KeyEncoder``) and of this checkout's ``KeyEncoder``, on a tuple key (its pickler reused)
    and on a short str key (remembered after its first call)."""
    import io
    import pickle
    import timeit

    from undertow.state.rocksdb_states import KeyEncoder

    def fresh(value: Any) -> bytes:
        buffer = io.BytesIO()
        pickler = pickle.Pickler(buffer, protocol=5)
        pickler.fast = True
        pickler.dump(value)
        return buffer.getvalue()

    encoder = KeyEncoder()
    cases = {"new pickler per key, tuple": (fresh, ("user", 123)),
             "KeyEncoder, tuple": (encoder, ("user", 123)),
             "KeyEncoder, str": (encoder, "user-123")}  # fmt: skip
    costs = {}
    for name, (encode, key) in cases.items():
        assert encode(key) == fresh(key)
        runs = timeit.repeat(lambda: encode(key), number=repeat, repeat=5)  # noqa: B023
        costs[name] = statistics.median(runs) / repeat * 1e9
    return costs


#: Map key types of :func:`op_ns`: 64 map keys of each.
OP_KEYS: dict[str, list[Any]] = {
    "int": list(range(64)),
    "str": [f"item-{i}" for i in range(64)],
    "float": [i + 0.5 for i in range(64)],
    "(str, int)": [("item", i) for i in range(64)],
}


def op_ns(repeat: int = 2_048, runs: int = 40) -> dict[str, float]:
    """Nanoseconds of one ``get`` and one ``put`` of a map entry on a ``MapState`` of one
    current key, straight on each backend (no job), by map key type (:data:`OP_KEYS`): the
    best of ``runs`` runs of ``repeat`` pairs (short runs: on a loaded machine some fit in
    a time slice). The per-operation cost a job's rows/s hides."""
    import timeit

    from undertow.state.descriptors import MapStateDescriptor
    from undertow.state.heap import HeapKeyedStateBackend
    from undertow.state.rocksdb import RocksDBKeyedStateBackend

    costs = {}
    for name, cls in (("hashmap", HeapKeyedStateBackend), ("rocksdb", RocksDBKeyedStateBackend)):
        backend: Any = cls("op", 128, range(128), lambda: 0)  # type: ignore[call-arg]
        state = backend.get_partitioned_state(MapStateDescriptor("m", None, None))
        backend.set_current_key("key")
        for kind, keys in OP_KEYS.items():

            def touch(keys: list[Any] = keys, get: Any = state.get, put: Any = state.put) -> None:
                for k in keys:
                    count = get(k)
                    put(k, 1 if count is None else count + 1)

            number = max(1, repeat // len(keys))
            best = min(timeit.repeat(touch, number=number, repeat=runs))
            costs[f"{name} {kind}"] = best / (number * len(keys)) * 1e9
        backend.dispose()
    return costs


def engine() -> str:
    """The commit of this interpreter's undertow (``+changes`` if its ``src`` differs)."""
    import undertow

    tree = Path(undertow.__file__).resolve().parents[2]
    git = ["git", "-C", str(tree)]
    head = subprocess.run([*git, "rev-parse", "--short", "HEAD"], capture_output=True,
                          text=True, check=False).stdout.strip()  # fmt: skip
    dirty = subprocess.run([*git, "status", "--porcelain", "src"], capture_output=True,
                           text=True, check=False).stdout.strip()  # fmt: skip
    return f"{head}{'+changes' if dirty else ''} ({tree})"


def side(python: str, rows: dict[str, int], prefix: list[str]) -> dict[str, float]:
    cmd = [*prefix, python, __file__, "--child", "--rows", str(rows["small"]),
           "--large-rows", str(rows["large"])]  # fmt: skip
    done = subprocess.run(cmd, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise SystemExit(f"{python} failed ({done.returncode}):\n{done.stderr[-2000:]}")
    rates: dict[str, float] = json.loads(done.stdout.strip().splitlines()[-1])
    return rates


def verdicts(rates: dict[str, float]) -> list[str]:
    """The target lines of one side's median rates."""
    slowdown = rates["small hashmap"] / rates["small rocksdb"]
    growth = rates["large rocksdb"] / rates["small rocksdb"]
    met = ("met" if slowdown <= SMALL_GOAL else "missed",
           "met" if growth >= LARGE_GOAL else "missed")  # fmt: skip
    return [
        f"target rocksdb-map-state small map: heap/RocksDB {slowdown:.2f}x "
        f"(goal <= {SMALL_GOAL:.0f}x): {met[0]}",
        f"target rocksdb-map-state large map: RocksDB 1,000-entry/7-entry rows/s {growth:.2f} "
        f"(goal >= {LARGE_GOAL}): {met[1]}",
    ]


def ops(rounds: int) -> None:
    """Print :func:`op_ns` per round and its medians (this interpreter's undertow: compare
    two builds by running it on each, e.g. with ``PYTHONPATH=<tree>/src``, in turns)."""
    print(f"{time.strftime('%Y-%m-%d %H:%M', time.gmtime())} UTC, engine = {engine()}, load "
          f"{os.getloadavg()[0]:.1f}; ns per get + put of a map entry, best of 40")  # fmt: skip
    runs = []
    for round_ in range(rounds):
        runs.append(op_ns())
        shown = ", ".join(f"{k} {v:,.0f}" for k, v in runs[-1].items())
        print(f"round {round_}: {shown} (load {os.getloadavg()[0]:.1f})", flush=True)
    medians = {k: statistics.median(r[k] for r in runs) for k in runs[0]}
    print("median: " + ", ".join(f"{k} {v:,.0f}" for k, v in medians.items()))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=400_000, help="rows of the small job")
    parser.add_argument("--large-rows", type=int, default=40_000)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--before", help="a commit to run on too (compare_commits.checkout)")
    parser.add_argument("--weighted", action="store_true")
    parser.add_argument("--ops", action="store_true",
                        help="only op_ns, --rounds times, in this interpreter")  # fmt: skip
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    rows = {"small": args.rows, "large": args.large_rows}
    if args.child:
        child(rows)
        return
    if args.ops:
        ops(args.rounds)
        return
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    import compare_commits

    sides = {"after": sys.executable}
    if args.before:
        tree = compare_commits.checkout(args.before)
        sides = {"before": str(tree / ".venv" / "bin" / "python"), "after": sys.executable}
    prefix = compare_commits.weighted_prefix() if args.weighted else []
    if prefix is None:
        raise SystemExit("--weighted needs root and the cgroup v1 cpu controller")
    print(f"{time.strftime('%Y-%m-%d %H:%M', time.gmtime())} UTC, after = {engine()}, before "
          f"= {args.before}; rows {rows}; weighted: {'yes' if prefix else 'no'}; load "
          f"{os.getloadavg()[0]:.1f}")  # fmt: skip
    results: dict[str, list[dict[str, float]]] = {name: [] for name in sides}
    try:
        for round_ in range(args.rounds):
            for name in list(sides) if round_ % 2 == 0 else list(reversed(sides)):
                rates = side(sides[name], rows, prefix)
                results[name].append(rates)
                shown = ", ".join(f"{k} {v:,.0f}" for k, v in rates.items())
                print(f"round {round_} {name:<6} rows/s: {shown} "
                      f"(load {os.getloadavg()[0]:.1f})", flush=True)  # fmt: skip
    finally:
        if prefix:
            compare_commits.release_weight()
    medians = {name: {k: statistics.median(r[k] for r in results[name]) for k in results[name][0]}
               for name in sides}  # fmt: skip
    print(f"{'median rows/s':<18}" + "".join(f"{name:>12}" for name in sides)
          + (f"{'after/before':>14}" if "before" in sides else ""))  # fmt: skip
    for key in medians["after"]:
        line = f"{key:<18}" + "".join(f"{medians[name][key]:>12,.0f}" for name in sides)
        if "before" in sides:
            line += f"{medians['after'][key] / medians['before'][key]:>14.2f}"
        print(line)
    for name in sides:
        heap = medians[name]["small hashmap"] / medians[name]["small rocksdb"]
        print(
            f"{name}: heap/RocksDB small map {heap:.2f}x, large map "
            f"{medians[name]['large hashmap'] / medians[name]['large rocksdb']:.2f}x"
        )
    costs = encoder_ns()
    print(
        "key encoding, ns per key (this checkout): "
        + ", ".join(f"{name} {ns:,.0f}" for name, ns in costs.items())
        + f" (load {os.getloadavg()[0]:.1f})"
    )
    for line in verdicts(medians["after"]):
        print(line)


if __name__ == "__main__":
    main()
