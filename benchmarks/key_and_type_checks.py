"""Nanoseconds per key or record of the checks undertow makes on keys and declared types.

``keys`` (docs/design.md, ``undertow.state.key_groups``): for int, str, ``(str, int)`` and
float keys, on ``--records`` unpickled ``(key, 1)`` records over 1,000 distinct keys (a stride
prime to 1,000, so consecutive records have other keys; unpickled, as a channel between
workers hands them over): the ``key_by`` partitioner's ``route`` to 4 channels, a loop of
``assign_to_key_group``, the heap backend's ``set_current_key`` + ``value()`` + ``update``, a
keyed reduce's fold (``fold_keyed`` in key context), and on 2,000 of the keys RocksDB's
``set_current_key`` + the current key's DB key. The peer: a bare Python loop that routes the
same records by a dict lookup (key -> channel). ``--before PYTHON`` runs this part on another
build too (its interpreter, for instance a wrapper that sets ``PYTHONPATH`` to an older
commit's ``src``), alternating rounds (``ab_sides.py``).

``checks`` (this build only): ``state_key`` of a float and of a ``(str, float)`` (a loop over
the keys; the loop alone beside it); the route of the same records with and without
``key_by``'s ``key_type`` (``with_key_type`` around the selector and ``checks_keys``, as
``DataStream.key_by`` builds it; docs/migrating-from-pyflink.md): ``STRING`` on str keys,
``LONG`` on int keys, a two-field ``ROW`` on ``(str, int)`` keys; a keyed reduce's fold of the
same records on the heap backend with the keyed operator's selector, with and without the
``key_type`` (a ``ROW`` key is delivered as a ``Row``); a declared ``output_type``'s
check (``CheckedOutput.collect_batch`` on a target that does nothing) per record of a batch of
1,000 and per batch of one record, the unchecked call beside it; the pending-bytes bound
(``PendingBound.observe`` + ``records_wanted``) per reader call of 4,096 ints or pairs.

Each figure is the best of ``--repeat`` interleaved repetitions in a child process, in CPU time
(the process's: on a machine others load, a call preempted would count their time in wall
time); the tables are the medians of ``--rounds`` children. Usage::

    python benchmarks/key_and_type_checks.py [--part all|keys|checks] [--rounds R]
        [--repeat N] [--records N] [--before PYTHON] [--weighted]
"""

from __future__ import annotations

import argparse
import json
import os
import pickle
import sys
import tempfile
import time
from collections.abc import Callable
from inspect import signature
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
import ab_sides

#: The key types of the ``keys`` part, each as the key of distinct key number ``j``.
KINDS: dict[str, Callable[[int], Any]] = {
    "int": lambda j: j,
    "str": lambda j: f"key-{j}",
    "(str, int)": lambda j: (f"key-{j % 100}", j // 100),
    "float": lambda j: j + 0.5,
}
KEY_PIECES = (
    "key_by route",
    "bare loop route (peer)",
    "assign_to_key_group",
    "heap set+value+update",
    "heap reduce fold",
    "RocksDB set key+DB key",
)
DISTINCT = 1_000
MAX_PARALLELISM = 128
CHANNELS = 4
ROCKSDB_KEYS = 2_000
OUTPUT_BATCH = 1_000
READER_CALL = 4_096


def key_names() -> list[str]:
    return [f"{kind}: {piece}" for kind in KINDS for piece in KEY_PIECES]


#: The ``checks`` part: key_type's declared type per key kind, output_type's per value.
KEY_TYPES = {"str": "STRING", "int": "LONG", "(str, int)": "ROW(STRING, LONG)"}
OUTPUT_TYPES = ("STRING", "LONG", "ROW(STRING, INT)", "TUPLE(STRING, LONG)")


def check_names() -> list[str]:
    names = ["state_key float", "state_key (str, float)", "loop alone"]
    for kind, declared in KEY_TYPES.items():
        names += [f"route {kind} keys", f"route {kind} keys, key_type {declared}",
                  f"reduce {kind} keys", f"reduce {kind} keys, key_type {declared}"]  # fmt: skip
    for declared in OUTPUT_TYPES:
        names += [f"output_type {declared}, per record of 1,000",
                  f"output_type {declared}, batch of 1"]  # fmt: skip
    names += ["unchecked collect_batch, batch of 1"]
    names += [f"pending bound, call of {READER_CALL:,} {what}" for what in ("ints", "pairs")]
    return names


def records_of(kind: str, records: int) -> list[tuple[Any, int]]:
    """``records`` unpickled ``(key, 1)`` records over ``DISTINCT`` keys of ``kind``."""
    make = KINDS[kind]
    return pickle.loads(pickle.dumps([(make(i * 7919 % DISTINCT), 1) for i in range(records)]))


def first(record: tuple[Any, int]) -> Any:
    return record[0]


def best_ns(calls: dict[str, tuple[Callable[[], Any], int]], repeat: int) -> dict[str, float]:
    """Each call's best CPU time over ``repeat`` interleaved repetitions, in ns per unit (a
    call and the number of keys, records or calls it does)."""
    for call, _ in calls.values():
        call()  # warm: caches filled, states made
    best = dict.fromkeys(calls, float("inf"))
    for _ in range(repeat):
        for name, (call, _) in calls.items():
            start = time.process_time()
            call()
            best[name] = min(best[name], time.process_time() - start)
    return {name: best[name] / units * 1e9 for name, (_, units) in calls.items()}


def key_calls(
    records: int, work: str, opened: list[Any]
) -> dict[str, tuple[Callable[[], Any], int]]:
    """The ``keys`` part; the backends it makes are appended to ``opened``. Only what every
    build since the key-group caches has (the partitioner, ``assign_to_key_group``, both
    backends), so ``--before`` can run it."""
    from undertow.graph.partitioners import KeyGroupStreamPartitioner
    from undertow.state.descriptors import ValueStateDescriptor
    from undertow.state.heap import HeapKeyedStateBackend
    from undertow.state.key_groups import assign_to_key_group
    from undertow.state.rocksdb import RocksDBKeyedStateBackend

    everything = range(MAX_PARALLELISM)
    calls: dict[str, tuple[Callable[[], Any], int]] = {}
    for kind in KINDS:
        values = records_of(kind, records)
        keys = [v[0] for v in values]
        router = KeyGroupStreamPartitioner(first, MAX_PARALLELISM)
        router.setup(CHANNELS)
        channel = {k: assign_to_key_group(k, MAX_PARALLELISM) * CHANNELS // MAX_PARALLELISM
                   for k in keys}  # fmt: skip

        def bare_route(values: list[Any] = values, channel: dict[Any, int] = channel) -> None:
            out: list[list[Any]] = [[] for _ in range(CHANNELS)]
            appends = [lst.append for lst in out]
            for v in values:
                appends[channel[v[0]]](v)

        heap = HeapKeyedStateBackend("op", MAX_PARALLELISM, everything, lambda: 0)
        count = heap.get_partitioned_state(ValueStateDescriptor("count"))
        reduced = heap.get_partitioned_state(ValueStateDescriptor("_reduce_value"))
        for key in keys[: DISTINCT * 3]:
            heap.set_current_key(key)
            count.update(0)

        def access(keys: list[Any] = keys, heap: Any = heap, count: Any = count) -> None:
            set_key, value, update = heap.set_current_key, count.value, count.update
            for key in keys:
                set_key(key)
                update(value() + 1)

        rocks = RocksDBKeyedStateBackend("op", MAX_PARALLELISM, everything, lambda: 0,
                                         local_dir=work)  # fmt: skip
        opened += [heap, rocks]
        rocks_keys = keys[:ROCKSDB_KEYS]

        def rocks_key(keys: list[Any] = rocks_keys, rocks: Any = rocks) -> None:
            set_key, db_key = rocks.set_current_key, rocks.current_void_db_key
            for key in keys:
                set_key(key)
                db_key()

        calls |= {
            f"{kind}: key_by route": (lambda r=router, v=values: r.route(v, None), records),
            f"{kind}: bare loop route (peer)": (bare_route, records),
            f"{kind}: assign_to_key_group": (
                lambda k=keys: [assign_to_key_group(key, MAX_PARALLELISM) for key in k], records),
            f"{kind}: heap set+value+update": (access, records),
            f"{kind}: heap reduce fold": (lambda h=heap, s=reduced, v=values: h.fold_keyed(
                s, v, first, lambda a, b: (a[0], a[1] + b[1])), records),
            f"{kind}: RocksDB set key+DB key": (rocks_key, len(rocks_keys)),
        }  # fmt: skip
    return calls


class Discard:
    """An output target that drops what it is given: what remains is the check's cost."""

    def collect_batch(self, values: list[Any], timestamps: Any) -> None:
        pass

    def emit_watermark(self, watermark: int) -> None:
        pass

    def collect_side(self, tag_id: str, value: Any, timestamp: int | None) -> None:
        pass

    def emit_watermark_status(self, idle: bool) -> None:
        pass


def check_calls(records: int) -> dict[str, tuple[Callable[[], Any], int]]:
    """The ``checks`` part (this build's code)."""
    from undertow.common.row import Row
    from undertow.common.typeinfo import Types
    from undertow.datastream.key_types import with_key_type
    from undertow.graph.partitioners import KeyGroupStreamPartitioner
    from undertow.runtime.task.output_check import CheckedOutput, OutputCheck
    from undertow.runtime.task.pending_bytes import PendingBound
    from undertow.state.descriptors import ValueStateDescriptor
    from undertow.state.heap import HeapKeyedStateBackend
    from undertow.state.key_groups import state_key

    floats = pickle.loads(pickle.dumps([j + 0.5 for j in range(records)]))
    pairs = pickle.loads(pickle.dumps([("key", j + 0.5) for j in range(records)]))
    calls: dict[str, tuple[Callable[[], Any], int]] = {
        "state_key float": (lambda: [state_key(k) for k in floats], records),
        "state_key (str, float)": (lambda: [state_key(k) for k in pairs], records),
        "loop alone": (lambda: [k for k in floats], records),
    }
    declared_keys = {"STRING": Types.STRING(), "LONG": Types.LONG(),
                     "ROW(STRING, LONG)": Types.ROW([Types.STRING(), Types.LONG()])}  # fmt: skip
    for kind, declared in KEY_TYPES.items():
        values = records_of(kind, records)
        plain = KeyGroupStreamPartitioner(first, MAX_PARALLELISM)
        # as DataStream.key_by builds it: the partitioner's selector does not make a ROW key a
        # Row (route_only, since 2026-12-02; an older build has no such parameter)
        route_only = (
            {"route_only": True} if "route_only" in signature(with_key_type).parameters else {}
        )
        selector = with_key_type(first, declared_keys[declared], "key_by()", **route_only)
        checked = KeyGroupStreamPartitioner(selector, MAX_PARALLELISM, checks_keys=True)
        for router in (plain, checked):
            router.setup(CHANNELS)
        calls[f"route {kind} keys"] = (lambda r=plain, v=values: r.route(v, None), records)
        calls[f"route {kind} keys, key_type {declared}"] = (
            lambda r=checked, v=values: r.route(v, None), records)  # fmt: skip
        keyed = with_key_type(first, declared_keys[declared], "key_by()")  # the operator's
        for name, select in ((f"reduce {kind} keys", first),
                             (f"reduce {kind} keys, key_type {declared}", keyed)):  # fmt: skip
            heap = HeapKeyedStateBackend("op", MAX_PARALLELISM, range(MAX_PARALLELISM), lambda: 0)
            state = heap.get_partitioned_state(ValueStateDescriptor("_reduce_value"))
            calls[name] = (lambda h=heap, s=state, v=values, k=select: h.fold_keyed(
                s, v, k, lambda a, b: (a[0], a[1] + b[1])), records)  # fmt: skip
    outputs = {
        "STRING": (Types.STRING(), lambda j: f"word-{j}"),
        "LONG": (Types.LONG(), lambda j: j),
        "ROW(STRING, INT)": (Types.ROW([Types.STRING(), Types.INT()]),
                             lambda j: Row(f"word-{j}", j)),
        "TUPLE(STRING, LONG)": (Types.TUPLE([Types.STRING(), Types.LONG()]),
                                lambda j: (f"word-{j}", j)),
    }  # fmt: skip
    for declared, (type_info, make) in outputs.items():
        check = OutputCheck.of(type_info, "map()")
        assert check is not None
        out = CheckedOutput(Discard(), check, "operator 'Map' (subtask 1/1)")
        batch = pickle.loads(pickle.dumps([make(j) for j in range(OUTPUT_BATCH)]))
        one = batch[:1]
        calls[f"output_type {declared}, per record of 1,000"] = (
            lambda o=out, b=batch: o.collect_batch(b, None), OUTPUT_BATCH)  # fmt: skip
        calls[f"output_type {declared}, batch of 1"] = (
            lambda o=out, b=one: [o.collect_batch(b, None) for _ in range(100)], 100)  # fmt: skip
    discard, one = Discard(), [1]
    calls["unchecked collect_batch, batch of 1"] = (
        lambda: [discard.collect_batch(one, None) for _ in range(100)], 100)  # fmt: skip
    reads = {"ints": list(range(READER_CALL)), "pairs": [(j % 1000, 1) for j in range(READER_CALL)]}
    for what, values in reads.items():
        bound = PendingBound()

        def reader_call(bound: PendingBound = bound, values: list[Any] = values) -> None:
            for _ in range(100):
                bound.records_wanted()
                bound.observe(values)

        calls[f"pending bound, call of {READER_CALL:,} {what}"] = (reader_call, 100)
    return calls


def child(part: str, records: int, repeat: int) -> None:
    """One round of ``part``: the best ns per unit of every figure, as one JSON line."""
    if part == "keys":
        opened: list[Any] = []
        with tempfile.TemporaryDirectory(prefix="key-checks-") as work:
            figures = best_ns(key_calls(records, work, opened), repeat)
            for backend in opened:  # RocksDB's files go with the directory
                backend.dispose()
    else:
        figures = best_ns(check_calls(records), repeat)
    print(json.dumps(figures), flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ab_sides.add_arguments(parser)
    parser.add_argument("--part", choices=("all", "keys", "checks"), default="all")
    parser.add_argument("--repeat", type=int, default=25)
    parser.add_argument("--records", type=int, default=20_000)
    args = parser.parse_args()
    if args.child:
        child(args.part, args.records, args.repeat)
        return
    script, sized = __file__, ["--records", str(args.records), "--repeat", str(args.repeat)]
    print(f"{time.strftime('%Y-%m-%d %H:%M:%S', time.gmtime())} UTC, load "
          f"{os.getloadavg()[0]:.1f}; {args.records:,} records over {DISTINCT:,} keys, best of "
          f"{args.repeat}, median of {args.rounds} rounds")  # fmt: skip
    rounds, weighted = args.rounds, args.weighted
    if args.part in ("all", "keys"):
        ab_sides.compare(script, ["--part", "keys", *sized], key_names(), "ns/key",
                         before=args.before, rounds=rounds, weighted=weighted)  # fmt: skip
    if args.part in ("all", "checks"):
        medians = ab_sides.compare(script, ["--part", "checks", *sized], check_names(), "ns",
                                   before=None, rounds=rounds, weighted=weighted)  # fmt: skip
        print_check_costs(medians["after"])
    print(f"{time.strftime('%Y-%m-%d %H:%M:%S', time.gmtime())} UTC, load "
          f"{os.getloadavg()[0]:.1f} at the end")  # fmt: skip


def print_check_costs(ns: dict[str, float]) -> None:
    """What each check adds: key_type's per record of the route, the pending bound's per
    record of a reader call, output_type's per batch of one over the unchecked call."""
    print()
    for kind, declared in KEY_TYPES.items():
        extra = ns[f"route {kind} keys, key_type {declared}"] - ns[f"route {kind} keys"]
        print(f"key_type {declared} on {kind} keys adds {extra:.0f} ns a record of the route")
        extra = ns[f"reduce {kind} keys, key_type {declared}"] - ns[f"reduce {kind} keys"]
        print(f"key_type {declared} on {kind} keys adds {extra:.0f} ns a record of a keyed reduce")
    unchecked = ns["unchecked collect_batch, batch of 1"]
    for declared in OUTPUT_TYPES:
        extra = ns[f"output_type {declared}, batch of 1"] - unchecked
        print(f"output_type {declared} adds {extra:.0f} ns to a batch of one record")
    for what in ("ints", "pairs"):
        call = ns[f"pending bound, call of {READER_CALL:,} {what}"]
        print(f"pending bound: {call / 1000:.2f} us a reader call of {READER_CALL:,} {what}, "
              f"{call / READER_CALL:.2f} ns a record")  # fmt: skip


if __name__ == "__main__":
    main()
