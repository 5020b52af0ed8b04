"""CPU per record of keyed state access on the heap backend, by the number of distinct keys,
on two builds.

A keyed operator makes each record's key current and reads and writes its state:
``set_current_key(k)``, ``value()``, ``update(v + 1)`` on a ``ValueState``, for records whose
int keys cycle over 1,000, 10,000 or 50,000 distinct keys (a stride that is prime to the
count, so consecutive records have different keys); at 10,000 keys also with the
descriptor's type declared (``Types.LONG()``: each update checked,
``undertow.state.value_types``). The first pass over the keys is left out (their first access
computes a key group in any case); each figure is the median of three runs. The peer, in the
same child: the same loop over a plain dict (the floor of a keyed count). ``--before PYTHON``
runs another build in alternating rounds, ``--weighted`` each side in a cgroup of the highest
CPU weight (``ab_sides.py``). Usage::

    python benchmarks/keyed_access.py [--records N] [--rounds R] [--before PYTHON] [--weighted]
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import ab_sides

KEY_COUNTS = (1_000, 10_000, 50_000)
FLOOR = "dict, 10,000 keys"
TYPED = "heap, 10,000 keys, Types.LONG() state"
#: Goal: at 10,000 keys, a record's keyed access at most this many times the plain dict's.
GOAL_VS_DICT = 6.0
#: Goal: a declared state type's check costs at most this many ns a write, as ``key_by``'s
#: ``key_type`` check of a ``str`` or ``int`` key (110-135 ns, docs/migrating-from-pyflink.md).
GOAL_TYPED_NS = 150


def keys_of(count: int, records: int) -> list[int]:
    """``records`` keys cycling over ``count`` distinct ints, a stride prime to ``count``."""
    return [(i * 7919) % count for i in range(records)]


def heap_ns(count: int, records: int, typed: bool = False) -> float:
    """CPU ns per record of set_current_key + value + update, after a first pass."""
    from undertow.common.typeinfo import Types
    from undertow.state.descriptors import ValueStateDescriptor
    from undertow.state.heap import HeapKeyedStateBackend

    backend = HeapKeyedStateBackend("op", 128, range(128), lambda: 0)
    declared = Types.LONG() if typed else None
    state = backend.get_partitioned_state(ValueStateDescriptor("count", declared))
    set_key, value, update = backend.set_current_key, state.value, state.update
    for key in range(count):
        set_key(key)
        update(0)
    keys = keys_of(count, records)
    start = time.process_time()
    for key in keys:
        set_key(key)
        update(value() + 1)
    return (time.process_time() - start) / records * 1e9


def dict_ns(count: int, records: int) -> float:
    counts = dict.fromkeys(range(count), 0)
    keys = keys_of(count, records)
    start = time.process_time()
    for key in keys:
        counts[key] = counts[key] + 1
    return (time.process_time() - start) / records * 1e9


def child(records: int) -> None:
    """One round: each figure the median of three measurements, as a JSON object."""
    figures = {f"heap, {count:,} keys": statistics.median(heap_ns(count, records) for _ in "abc")
               for count in KEY_COUNTS}  # fmt: skip
    figures[TYPED] = statistics.median(heap_ns(10_000, records, typed=True) for _ in "abc")
    figures[FLOOR] = statistics.median(dict_ns(10_000, records) for _ in "abc")
    print(json.dumps(figures), flush=True)


def targets(medians: ab_sides.Medians) -> list[str]:
    ratio = medians["after"]["heap, 10,000 keys"] / medians["after"][FLOOR]
    met = "met" if ratio <= GOAL_VS_DICT else "missed"
    typed = medians["after"][TYPED] - medians["after"]["heap, 10,000 keys"]
    typed_met = "met" if typed <= GOAL_TYPED_NS else "missed"
    return [f"target heap keyed access, 10,000 keys, vs dict: {ratio:.1f}x "
            f"(goal <= {GOAL_VS_DICT:.0f}x): {met}",
            f"target declared state type checked: {typed:+.0f} ns a write against the untyped "
            f"state (goal <= {GOAL_TYPED_NS} ns): {typed_met}"]  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--records", type=int, default=400_000)
    ab_sides.add_arguments(parser)
    args = parser.parse_args()
    if args.child:
        child(args.records)
        return
    names = (*(f"heap, {count:,} keys" for count in KEY_COUNTS), TYPED, FLOOR)
    medians = ab_sides.compare(__file__, ["--records", str(args.records)], names, "ns/record",
                               before=args.before, rounds=args.rounds,
                               weighted=args.weighted)  # fmt: skip
    for line in targets(medians):
        print(line)


if __name__ == "__main__":
    main()
