"""What a ``Row`` costs in a user's function: undertow's against PyFlink 2.3's, in the same run.

PyFlink jobs read named rows everywhere (``key_by(lambda r: r.user)``, ``r.amount + 1``, a
``Row(user=..., amount=...)`` per output), so each operation runs once per record or more. The
same statements are timed in this interpreter on ``undertow.common.Row`` and on a
``collections.namedtuple`` (the floor: fields read in C), and in PyFlink's own venv
(``benchmarks/peers/pyflink_venv.py``, installed on first use) on ``pyflink.common.Row``; each
figure is the best of several repetitions. Last comes a loop as a user writes a keyed running
sum over named rows: a row made per record, its key read, the old row's fields read and a new
row made. Then what a batch of 4,096 named rows costs between workers (undertow's network
batches: ``serialize_batch`` and the unpickling), against the same values as plain tuples.
Usage::

    python benchmarks/row_access.py [--number N] [--no-pyflink]
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent / "peers"))

#: Run by each interpreter with the row class's import path (``module:name``), the number of
#: runs per repetition and the loop's label; prints one JSON object, statement -> ns per run.
CHILD = r"""
import collections, importlib, json, sys, timeit
module, name = sys.argv[1].split(":")
Row = getattr(importlib.import_module(module), name)
number = int(sys.argv[2])
r = Row(user="u", amount=3)
u = Row("u", 3)
Person = Row("user", "amount")

def running_sum():
    sums = {}
    for x in range(1000):
        row = Row(user=x % 100, amount=1)
        old = sums.get(row.user)
        sums[row.user] = row if old is None else Row(user=old.user, amount=old.amount + row.amount)

statements = {
    "make a named row, Row(user=..., amount=...)": "Row(user=1, amount=2)",
    "make a row of a row class, Person(1, 2)": "Person(1, 2)",
    "read a field by attribute, r.user": "r.user",
    "read a field by name, r['user']": "r['user']",
    "read a field by position, r[0]": "r[0]",
    "read a field of an unnamed row, u[0]": "u[0]",
}
out = {}
for label, stmt in statements.items():
    best = min(timeit.repeat(stmt, globals=globals(), number=number, repeat=7))
    out[label] = best / number * 1e9
best = min(timeit.repeat(running_sum, number=max(1, number // 1000), repeat=7))
out[sys.argv[3]] = best / max(1, number // 1000) / 1000 * 1e9
print(json.dumps(out))
"""
#: The label of the user's loop (the child's last figure).
LOOP = "a keyed running sum over named rows, per record"


def measure(python: str, row_class: str, number: int) -> dict[str, float]:
    done = subprocess.run(
        [python, "-c", CHILD, row_class, str(number), LOOP],
        capture_output=True,
        text=True,
        check=True,
    )
    result: dict[str, float] = json.loads(done.stdout.strip().splitlines()[-1])
    return result


def namedtuple_floor(number: int) -> dict[str, float]:
    """The reads on a namedtuple (no name index: a namedtuple has none)."""
    import collections
    import timeit

    pair = collections.namedtuple("pair", "user amount")
    r = pair("u", 3)
    stmts = {
        "make a row of a row class, Person(1, 2)": "pair(1, 2)",
        "read a field by attribute, r.user": "r.user",
        "read a field by position, r[0]": "r[0]",
    }
    scope = {"pair": pair, "r": r}
    return {
        label: min(timeit.repeat(stmt, globals=scope, number=number, repeat=7)) / number * 1e9
        for label, stmt in stmts.items()
    }


def batch_between_workers(number: int) -> dict[str, tuple[float, float, float]]:
    """Per row of a batch of 4,096: ns to serialize, ns to unpickle, bytes; named rows and
    the same values as plain tuples."""
    import pickle
    import timeit

    from undertow.common import Row
    from undertow.runtime.network.buffer import serialize_batch

    rows = [Row(user=i % 1000, amount=i % 7, ts=i // 10) for i in range(4096)]
    out = {}
    for label, values in (("named rows", rows), ("plain tuples", [tuple(r) for r in rows])):
        data = serialize_batch(values, None)
        runs = max(1, number // 10_000)
        dump = min(timeit.repeat(lambda v=values: serialize_batch(v, None), number=runs, repeat=5))
        load = min(timeit.repeat(lambda d=data: pickle.loads(d), number=runs, repeat=5))
        out[label] = (dump / runs / 4096 * 1e9, load / runs / 4096 * 1e9, len(data) / 4096)
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--number", type=int, default=200_000)
    parser.add_argument("--no-pyflink", action="store_true", help="undertow's figures only")
    args = parser.parse_args()
    ours = measure(sys.executable, "undertow.common:Row", args.number)
    floor = namedtuple_floor(args.number)
    theirs: dict[str, float] = {}
    if not args.no_pyflink:
        import pyflink_venv

        theirs = measure(str(pyflink_venv.ensure_pyflink()), "pyflink.common:Row", args.number)
    columns = f"{'undertow':>9}{'PyFlink':>9}{'namedtuple':>11}{'PyFlink/ours':>13}"
    print(f"{'ns per operation':<52}{columns}")
    for label, value in ours.items():
        peer = theirs.get(label)
        tuple_ns = floor.get(label)
        print(
            f"{label:<52}{value:>9.1f}"
            + (f"{peer:>9.1f}" if peer is not None else f"{'-':>9}")
            + (f"{tuple_ns:>11.1f}" if tuple_ns is not None else f"{'-':>11}")
            + (f"{peer / value:>12.2f}x" if peer is not None else "")
        )
    print("\na batch of 4,096 rows between workers, per row: serialize, unpickle, bytes")
    for label, (dump, load, size) in batch_between_workers(args.number).items():
        print(f"  {label:<14}{dump:>8.1f} ns{load:>9.1f} ns{size:>7.1f} B")


if __name__ == "__main__":
    main()
