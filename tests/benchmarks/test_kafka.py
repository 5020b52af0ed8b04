"""benchmarks/kafka.py still runs (tests/benchmarks/smoke.py): ``--quick --at-least-once-only``
starts its own broker and runs every quick section (source throughput, latency and the
sustainable-rate search, Shopee's shape, the oracle after a kill) through the modules it is
made of (kafka_harness, kafka_engines, kafka_load, kafka_sustainable, kafka_rounds,
kafka_source, kafka_shopee, kafka_kill, process_cpu), and ends with its target lines. It took
12.5 minutes at load 10-19 with both guarantees (2026-12-01), far from the two minutes its
``--quick`` help names on a quiet machine."""

from __future__ import annotations

import pytest

from .smoke import assert_targets, lines_after, run_script


@pytest.mark.bench_smoke
@pytest.mark.timeout(1500)
def test_the_quick_sections_run_and_end_with_their_targets() -> None:
    out = run_script("kafka.py", "--quick", "--at-least-once-only", timeout=1400)
    for section in ("== 1. source throughput", "== 2. end-to-end latency",
                    "== 5. Shopee's shape", "== 6. oracle counts after a kill"):  # fmt: skip
        assert f"\n{section}" in out, out
    shopee = lines_after(out, "mode         checkpoints")[:2]
    assert [row.split()[0] for row in shopee] == ["aligned", "unaligned"], out
    assert_targets(
        out,
        "source throughput per core",
        "undertow AT_LEAST_ONCE end-to-end p50",
        "undertow AT_LEAST_ONCE after a kill",
        "undertow EXACTLY_ONCE after a kill",
    )
