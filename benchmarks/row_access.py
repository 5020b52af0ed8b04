"""What a ``Row`` costs in a user's function: undertow's against PyFlink 2.3's, in the same run.

PyFlink jobs read named rows everywhere (``key_by(lambda r: r.user)``, ``r.amount + 1``, a
``Row(user=..., amount=...)`` per output), so each operation runs once per record or more. The
same statements are timed in this interpreter on ``undertow.common.Row`` and on a
``collections.namedtuple`` (the floor: fields read in C), and in PyFlink's own venv
(``benchmarks/peers/pyflink_venv.py``, installed on first use) on ``pyflink.common.Row``; each
figure is the best of several repetitions. Last comes a loop as a user writes a keyed running
sum over named rows: a row made per record, its key read, the old row's fields read and a new
row made. Usage::

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


if __name__ == "__main__":
    main()
