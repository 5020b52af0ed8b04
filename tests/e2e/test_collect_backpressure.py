"""``execute_and_collect`` with a slow reader: the driver holds at most
``undertow.collect.buffer-size`` of results the reader has not taken (plus one batch), the job
is backpressured instead, its checkpoints keep completing, and every record comes once.

Two shapes: a parallel map feeding the collect sink over the network with unaligned
checkpoints (the barrier overtakes the input the sink cannot take), and a source chained to
the sink with aligned ones (the source's checkpoint trigger is a mail, which runs while the
task waits for credit)."""

from __future__ import annotations

import time

import pytest

from undertow.common import WatermarkStrategy
from undertow.datastream.connectors import NumberSequenceSource
from undertow.testing.collect import collect_statistics, completed_checkpoints

from .conftest import EnvFactory

WINDOW = 64 * 1024
RECORDS = 12_000
PAD = "x" * 200  # ~2.6 MB in all: ~40 windows


@pytest.mark.parametrize(
    ("parallelism", "unaligned"),
    [(2, True), (1, False)],
    ids=["network-unaligned", "chained-aligned"],
)
def test_a_sleeping_reader_bounds_the_drivers_results_and_checkpoints_go_on(
    make_env: EnvFactory, parallelism: int, unaligned: bool
) -> None:
    env = make_env(parallelism=parallelism, config={
        "undertow.collect.buffer-size": f"{WINDOW} b",
        "execution.checkpointing.interval": "100 ms",
        "execution.checkpointing.unaligned.enabled": str(unaligned).lower(),
    })  # fmt: skip
    numbers = env.from_source(
        NumberSequenceSource(0, RECORDS - 1), WatermarkStrategy.no_watermarks(), "numbers"
    )
    padded = numbers.map(lambda n: (n, PAD))
    got: list[int] = []
    with padded.execute_and_collect("slow reader") as results:
        deadline = time.monotonic() + 120  # the reader sleeps (never waits) until the
        while collect_statistics(results).window.unread < WINDOW // 2:  # window fills
            assert time.monotonic() < deadline, collect_statistics(results)
            time.sleep(0.1)
        before = completed_checkpoints(results)
        time.sleep(1.5)
        asleep = collect_statistics(results)
        during = completed_checkpoints(results) - before
        for i, (n, pad) in enumerate(results):  # waiting for held records may overdraw
            assert pad == PAD
            got.append(n)
            if i % 1000 == 0:
                time.sleep(0.05)
        stats = collect_statistics(results)
    assert sorted(got) == list(range(RECORDS))  # none lost, none twice
    assert asleep.window.unread >= WINDOW // 2, asleep  # it did fill: the bound held the job
    assert during >= 3, f"{during} checkpoints completed while the reader slept"
    assert not asleep.window.in_overdraft and asleep.window.unread <= WINDOW + stats.largest_batch
    assert stats.peak_unread <= WINDOW + stats.largest_batch, stats
    assert stats.largest_batch < RECORDS * len(PAD) // 4  # the job did not end in one batch
