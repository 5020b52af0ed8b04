"""benchmarks/kafka_sink_writer.py still runs (tests/benchmarks/smoke.py): against the test
broker, one round of a few hundred records prints the bare producer's row and one per
delivery guarantee. The script sets no target line."""

from __future__ import annotations

import pytest

from .smoke import run_script


@pytest.mark.bench_smoke
def test_one_round_prints_the_bare_producer_and_every_guarantee(kafka_bootstrap: str) -> None:
    broker = {"UNDERTOW_KAFKA_BOOTSTRAP": kafka_bootstrap}
    out = run_script("kafka_sink_writer.py", "--records", "400", "--checkpoints", "2",
                     "--rounds", "1", env=broker)  # fmt: skip
    rows = [line.split("  ")[0] for line in out.splitlines()[1:]]
    assert rows == [
        "bare confluent-kafka producer",
        "KafkaSink NONE",
        "KafkaSink AT_LEAST_ONCE",
        "KafkaSink EXACTLY_ONCE",
    ], out
    assert out.splitlines()[1].endswith(" 1.00x bare"), out
