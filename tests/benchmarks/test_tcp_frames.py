"""benchmarks/tcp_frames.py still runs: one round of both readers over a few small frames
prints both rows, the medians and its three target lines, in about a second, so it runs in
``make test`` (tests/benchmarks/smoke.py)."""

from __future__ import annotations

from .smoke import assert_targets, run_script


def test_one_round_of_both_readers_ends_with_the_three_targets() -> None:
    out = run_script("tcp_frames.py", "--rounds", "1", "--frames", "20", "--frame-kib", "64")
    assert "round 0 stream " in out and "round 0 protocol " in out, out
    assert "protocol/stream" in out
    assert_targets(out, "tcp-reader-cpu", "tcp-reader-p50", "tcp-reader-p99")
