"""benchmarks/spark_start.py still runs (tests/benchmarks/smoke.py): one run per target
(``undertow run`` on local Spark, on ``local`` and on ``local`` without the fork server) finds
a worker to kill among the command's descendants and times its recovery, PyFlink's
MiniCluster times its first record (the venv of benchmarks/peers/pyflink_venv.py), and the
two Spark targets end the output."""

from __future__ import annotations

import pytest

from .smoke import assert_targets, lines_after, run_script


@pytest.mark.bench_smoke
@pytest.mark.timeout(900)
def test_one_run_per_target_and_pyflink_make_the_table_and_the_targets() -> None:
    out = run_script("spark_start.py", "--runs", "1", "--targets", "spark,local,local-fresh",
                     "--peers", timeout=600)  # fmt: skip
    table = lines_after(out, "target ")[:4]
    assert [row.split()[0] for row in table[:3]] == ["spark", "local", "local-fresh"], out
    assert all(len(row.split()) == 5 for row in table[:3]), out  # every figure measured
    assert table[3].startswith("pyflink thread "), out
    assert_targets(out, "spark-running", "spark-processing-after-a-kill")
