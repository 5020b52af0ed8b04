"""benchmarks/key_and_type_checks.py: its records are unpickled keys of each kind over 1,000
distinct keys, the added costs it prints are the differences of its figures, and one tiny round
of both parts prints every figure (tests/benchmarks/smoke.py)."""

from __future__ import annotations

import itertools
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))
import key_and_type_checks as bench

from .smoke import lines_after, run_script


@pytest.mark.parametrize("kind", list(bench.KINDS))
def test_records_cycle_over_a_thousand_unpickled_keys_never_twice_in_a_row(kind: str) -> None:
    records = bench.records_of(kind, 3000)
    keys = [r[0] for r in records]
    assert len(set(keys)) == bench.DISTINCT and all(r[1] == 1 for r in records)
    assert all(a != b for a, b in itertools.pairwise(keys))
    made = bench.KINDS[kind](7)
    assert type(keys[0]) is type(made)
    if isinstance(made, str):  # as a channel hands them over: equal keys, other objects
        assert sum(k is keys[0] for k in keys) == 1


def test_the_added_costs_are_the_differences_of_the_figures(
    capsys: pytest.CaptureFixture[str],
) -> None:
    ns = dict.fromkeys(bench.check_names(), 100.0)
    ns |= {
        "route str keys, key_type STRING": 190.0,
        "output_type LONG, batch of 1": 600.0,
        "unchecked collect_batch, batch of 1": 80.0,
        f"pending bound, call of {bench.READER_CALL:,} pairs": 8192.0,
    }
    bench.print_check_costs(ns)
    out = capsys.readouterr().out
    assert "key_type STRING on str keys adds 90 ns a record of the route" in out
    assert "key_type LONG on int keys adds 0 ns" in out
    assert "output_type LONG adds 520 ns to a batch of one record" in out
    assert "8.19 us a reader call of 4,096 pairs, 2.00 ns a record" in out


@pytest.mark.bench_smoke
def test_one_tiny_round_prints_every_figure() -> None:
    out = run_script(
        "key_and_type_checks.py", "--rounds", "1", "--repeat", "1", "--records", "1000"
    )
    keys = lines_after(out, "median ns/key")[: len(bench.key_names())]
    assert [line.rsplit(maxsplit=1)[0] for line in keys] == bench.key_names(), out
    checks = lines_after(out, "median ns ")[: len(bench.check_names())]
    assert [line.rsplit(maxsplit=1)[0] for line in checks] == bench.check_names(), out
    assert "key_type ROW(STRING, LONG) on (str, int) keys adds " in out
    assert out.rstrip().endswith("at the end"), out
