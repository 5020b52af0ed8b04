"""Nanoseconds per record of each piece of the record path of ``benchmarks/throughput.py``.

The pieces run in this process on one batch of 4,096 records (``(x % 1000, 1)`` pairs, keyed
by the first field), each timed as the best of many interleaved repetitions, so a loaded machine
moves the figures less than it moves ``throughput.py``'s end-to-end rates. Usage::

    python benchmarks/record_path.py [--repeat N] [--gc-threshold N]

The pieces run with the collector's young threshold a worker sets
(``undertow.worker.gc-threshold``, :func:`~undertow.runtime.worker.worker.fit_gc_threshold`),
so they allocate as in a worker; ``--gc-threshold 0`` keeps Python's (700), as before.

Pieces: the map (the job's lambda over a batch), the keyed sum's key selection and fold into
heap keyed state (as ``sum`` runs it, pairs combined inline, and as a user's ``reduce`` runs
it: in each record's key, through the fold function),
key-group routing to 2 channels, pickling the batch and unpickling it (channels between
workers; a channel within one worker hands the batch over unserialized; unpickling makes every
record's tuple and its key's int object: the same batch with keys below 257, whose ints Python
keeps cached, and the keys alone show the parts of that), the pairs rebuilt from
two int64 arrays (the floor of any columnar encoding of the batch: making the tuples), the
plain Python loop ``throughput.py`` uses as its baseline, and the loop of ``record_vs_loop.py``
(the record path's target), which calls the job's map and key functions.

Last, the budget: what a job at that target's ratio (0.7x) may spend per record, against what
its map and keyed fold alone take (the work the loop does too, in the engine's form), and what
is left for routing, the exchange between workers and scheduling.
"""

from __future__ import annotations

import argparse
import array
import gc
import operator
import pickle
import time
from collections.abc import Callable
from typing import Any

import record_vs_loop

from undertow.core.config import Options
from undertow.datastream.field_functions import field_aggregator
from undertow.graph.partitioners import KeyGroupStreamPartitioner
from undertow.runtime.network.buffer import serialize_batch
from undertow.runtime.worker.worker import fit_gc_threshold
from undertow.state.backend import PairAggregation
from undertow.state.descriptors import ValueStateDescriptor
from undertow.state.heap import HeapKeyedStateBackend

BATCH = 4096
#: The loop that calls the job's functions, as ``record_vs_loop.py``'s (its target's) does.
LOOP_CALLING = "loop calling map, key (target's)"
#: ``record_vs_loop.py``'s goal: the job's records per CPU second over that loop's.
TARGET_RATIO = 0.7


def pieces() -> dict[str, Callable[[], Any]]:
    """Each piece as a call on one batch."""
    numbers = list(range(1, BATCH + 1))
    pairs = [(x % 1000, 1) for x in numbers]

    def mapper(x: int) -> tuple[int, int]:
        return (x % 1000, 1)

    def key(t: tuple[int, int]) -> int:
        return t[0]

    backend = HeapKeyedStateBackend("sum", 128, range(128), lambda: 0)
    state = backend.get_partitioned_state(ValueStateDescriptor("_reduce_value"))
    fold = field_aggregator(1, operator.add)
    router = KeyGroupStreamPartitioner(key, 128)
    router.setup(2)
    data = serialize_batch(pairs, None)
    cached_keys = serialize_batch([(x % 200, 1) for x in numbers], None)
    keys_alone = serialize_batch([p[0] for p in pairs], None)
    firsts, seconds = (
        array.array("q", [p[0] for p in pairs]),
        array.array("q", [p[1] for p in pairs]),
    )

    def plain_loop() -> None:
        sums: dict[int, tuple[int, int]] = {}
        out = []
        for x in numbers:
            t = (x % 1000, 1)
            old = sums.get(t[0])
            new = t if old is None else (old[0], old[1] + t[1])
            sums[t[0]] = new
            out.append(new)

    return {
        "map (job's lambda)": lambda: [mapper(x) for x in numbers],
        "sum: key selection": lambda: [key(v) for v in pairs],
        "sum: keys + fold into heap state": lambda: backend.fold_keyed(
            state, pairs, key, fold, key_context=False, pair=PairAggregation(1, operator.add)
        ),
        "reduce: fold in key context": lambda: backend.fold_keyed(state, pairs, key, fold),
        "key_by routing, 2 channels": lambda: router.route(pairs, None),
        "pickle the batch": lambda: serialize_batch(pairs, None),
        "unpickle the batch": lambda: pickle.loads(data),
        "unpickle, keys below 257": lambda: pickle.loads(cached_keys),
        "unpickle the keys alone": lambda: pickle.loads(keys_alone),
        "pairs from two int64 arrays": lambda: list(zip(firsts, seconds)),
        "plain Python loop (baseline)": plain_loop,
        LOOP_CALLING: lambda: record_vs_loop.loop(1, BATCH),  # the target's own loop
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=300)
    parser.add_argument("--gc-threshold", type=int, default=Options.WORKER_GC_THRESHOLD.default)
    args = parser.parse_args()
    fit_gc_threshold(args.gc_threshold)
    calls = pieces()
    best = dict.fromkeys(calls, float("inf"))
    for _ in range(args.repeat):
        for name, call in calls.items():
            start = time.perf_counter()
            call()
            best[name] = min(best[name], time.perf_counter() - start)
    print(f"{'piece':<32}{'ns/record':>10}  (gc threshold {gc.get_threshold()[0]})")
    ns = {name: seconds / BATCH * 1e9 for name, seconds in best.items()}
    for name, value in ns.items():
        print(f"{name:<32}{value:>10.1f}")
    print_budget(ns)


def print_budget(ns: dict[str, float]) -> None:
    """What a job at the target's ratio may spend per record, against what its map and keyed
    fold alone take: the work a bare loop does too, in the engine's form (the key selector
    called in the fold, the state's table per key group). Whatever is left is all the engine
    may spend on routing, the exchange and scheduling at p=2."""
    budget = ns[LOOP_CALLING] / TARGET_RATIO
    user = ns["map (job's lambda)"] + ns["sum: keys + fold into heap state"]
    routing = ns["key_by routing, 2 channels"]
    exchange = (ns["pickle the batch"] + ns["unpickle the batch"]) / 2  # half the records
    print(
        f"\na job at {TARGET_RATIO}x that loop: {budget:.1f} ns a record; its map and keyed fold "
        f"take {user:.1f}, which leaves {budget - user:.1f} for the engine; key_by routing "
        f"takes {routing:.1f} and the exchange of half the records between workers "
        f"{exchange:.1f}"
    )


if __name__ == "__main__":
    main()
