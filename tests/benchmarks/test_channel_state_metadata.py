"""benchmarks/channel_state_metadata.py still runs: at a tiny parallelism every channel's
handle is written, read back and resolved (its ``yes, P x P chunks`` column), in about a
second, so it runs in ``make test`` (tests/benchmarks/smoke.py)."""

from __future__ import annotations

from .smoke import run_script


def test_every_channel_is_restored_at_each_parallelism() -> None:
    out = run_script("channel_state_metadata.py", "--parallelism", "3", "10")
    rows = [line.split() for line in out.splitlines() if line[:5].strip().isdigit()]
    assert [(row[0], row[1]) for row in rows] == [("3", "9"), ("10", "100")], out
    assert [row[-3:] for row in rows] == [["yes,", "9", "chunks"], ["yes,", "100", "chunks"]]
