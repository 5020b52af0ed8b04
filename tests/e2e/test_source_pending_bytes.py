"""A source of large records checkpoints about one record pending, not a reader call's worth.

Records a reader call brought and the task has not emitted yet are part of the source's
snapshot (docs/design.md, "Mailbox slices end inside a batch"). ``DataGeneratorSource`` at
800 records a second reads 16 a call; with 10 MiB records and a map slower than the reader,
each checkpoint held up to 15 of them (150 MiB) before reader calls were bounded by bytes
(:mod:`undertow.runtime.task.pending_bytes`). A text file's chunk was 1,024 lines, whatever
their length, before it also ended at 1 MiB of the file (``formats.CHUNK_BYTES``)."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import pytest
from tests.e2e.restore_evidence import RestWatcher

from undertow.common import Configuration
from undertow.common.watermark_strategy import WatermarkStrategy
from undertow.datastream import JobStatus, MapFunction, StreamExecutionEnvironment
from undertow.datastream.connectors.datagen import DataGeneratorSource
from undertow.datastream.connectors.discard import DiscardingSink
from undertow.datastream.connectors.file_system import FileSource, StreamFormat

MIB = 1 << 20
RECORDS = 40


def large_record(index: int) -> bytes:
    return index.to_bytes(4, "big") * (10 * MIB // 4)


def large_line(index: int) -> str:
    return f"{index:08d}" + "x" * (4 * MIB - 8)


class SlowMap(MapFunction):
    """Takes 25 ms a record and notes which record it saw (in the file ``seen``): its index
    (the first 4 bytes of a generated record, the first 8 characters of a line) and size."""

    def __init__(self, seen: str) -> None:
        self.seen = seen

    def map(self, value: bytes | str) -> int:
        time.sleep(0.025)
        index = int(value[:8]) if isinstance(value, str) else int.from_bytes(value[:4], "big")
        with open(self.seen, "a") as out:
            out.write(f"{index} {len(value)}\n")
        return index


def _run(tmp_path: Path, source: Any) -> dict[int, int]:
    """Runs ``source -> SlowMap -> discard`` at parallelism 1 with checkpoints every 100 ms;
    the state size of each completed checkpoint (REST), by id."""
    env = StreamExecutionEnvironment.get_execution_environment(Configuration({
        "execution.target": "local-threads", "rest.port": "0",
        "execution.checkpointing.interval": "100 ms",
        "execution.checkpointing.dir": str(tmp_path / "checkpoints"),
        "restart-strategy.type": "none",
    }))  # fmt: skip
    env.set_parallelism(1)
    (env.from_source(source, WatermarkStrategy.no_watermarks(), "large records")
        .map(SlowMap(str(tmp_path / "seen.txt"))).sink_to(DiscardingSink()))  # fmt: skip
    client = env.execute_async("large records pending")
    watcher = RestWatcher(client)
    deadline = time.monotonic() + 120
    try:
        while not client.get_job_status().result().is_globally_terminal_state():
            assert time.monotonic() < deadline, "the job did not end within 120 s"
            time.sleep(0.05)
    finally:
        watcher.stop()
    assert client.get_job_status().result() is JobStatus.FINISHED
    sizes = {cid: state for cid, (_, state) in watcher.completed_sizes.items()}
    print(f"state sizes of {len(sizes)} checkpoints (MiB): "
          f"{sorted(round(s / MIB, 1) for s in sizes.values())}")  # fmt: skip
    return sizes


def _assert_read(tmp_path: Path, records: int, size: int) -> None:
    """Every record reached the map once, in order, whole."""
    seen = (tmp_path / "seen.txt").read_text().split()
    assert [int(i) for i in seen[0::2]] == list(range(records))
    assert set(seen[1::2]) == {str(size)}


@pytest.mark.timeout(180)
def test_a_checkpoint_holds_about_one_large_generated_record_pending(tmp_path: Path) -> None:
    source = DataGeneratorSource(large_record, count=RECORDS, records_per_second=800)
    sizes = _run(tmp_path, source)
    largest = max(sizes.values(), default=0)
    assert largest <= 11 * MIB, f"a checkpoint held {largest / MIB:.1f} MiB: {sizes}"
    assert len(sizes) >= 3, f"only {len(sizes)} checkpoints completed: {sizes}"
    _assert_read(tmp_path, RECORDS, 10 * MIB)


@pytest.mark.timeout(180)
def test_a_checkpoint_holds_about_one_long_line_of_a_file_pending(tmp_path: Path) -> None:
    lines = 24
    text = tmp_path / "in" / "long-lines.txt"
    text.parent.mkdir()
    with text.open("w") as out:
        for i in range(lines):
            out.write(large_line(i) + "\n")
    source = FileSource.for_record_stream_format(
        StreamFormat.text_line_format(), str(text.parent)
    ).build()
    sizes = _run(tmp_path, source)
    largest = max(sizes.values(), default=0)
    assert largest <= 5 * MIB, f"a checkpoint held {largest / MIB:.1f} MiB: {sizes}"
    assert len(sizes) >= 3, f"only {len(sizes)} checkpoints completed: {sizes}"
    _assert_read(tmp_path, lines, 4 * MIB)
