"""benchmarks/state_scale.py still runs (tests/benchmarks/smoke.py): on a few thousand keys
every backend's row is made, with its restore. The script sets no target line."""

from __future__ import annotations

import pytest

from .smoke import lines_after, run_script


@pytest.mark.bench_smoke
def test_every_backend_makes_its_row_with_a_restore() -> None:
    out = run_script("state_scale.py", "--keys", "4000", "--samples", "1", "--restore")
    header = next(line for line in out.splitlines() if line.startswith("backend ")).split()
    rows = [row.split() for row in lines_after(out, "backend ") if row.strip()]
    assert header[:3] == ["backend", "keys", "ckpt"] and header[-3:] == ["to", "chk", "s"], out
    assert [row[:2] for row in rows] == [
        [backend, "4,000"]
        for backend in ("hashmap", "hashmap-incremental", "rocksdb", "rocksdb-incremental")
    ], out
    assert all(len(row) == len(rows[0]) for row in rows), out  # no figure missing
    # the workers' resident memory (the ninth figure): it read 0 while the script looked for
    # workers by a command line that forked workers do not have
    assert all(int(row[8].replace(",", "")) > 0 for row in rows), out
