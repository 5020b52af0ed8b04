"""benchmarks/recovery.py still runs (tests/benchmarks/smoke.py): a kill finds a worker
among the fork server's forks and the job's records flow again, and the checkpoint table is
made, on a few thousand keys. It broke once without a test: its own ``/proc`` scan looked for
a command line forked workers no longer have (fixed in b04614e)."""

from __future__ import annotations

from .smoke import assert_targets, run_script


def test_a_kill_and_the_checkpoint_table_at_a_few_thousand_keys() -> None:
    out = run_script("recovery.py", "--keys", "2000", "--seed", "1")
    assert "kill -9 worker pid" in out, out
    rows = {line.rsplit(None, 2)[0] for line in out.splitlines() if line[-1:].isdigit()}
    assert {
        "cold start to first record (baseline)",
        "kill -9 of a worker to records flowing again",
        "pickle 2,000 entries in-process (baseline)",
        "checkpoint with 2,000 keys (median of 3)",
    } <= rows, out
    assert_targets(out, "recovery")
