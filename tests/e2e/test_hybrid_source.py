"""``HybridSource`` end to end: sources read one after another, and a restore in the middle.

Expected results are plain ranges over the inputs the tests write.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import pytest

from undertow.common import Encoder, WatermarkStrategy
from undertow.datastream import MapFunction, RuntimeContext
from undertow.datastream.connectors import NumberSequenceSource
from undertow.datastream.connectors.file_system import FileSink, FileSource, StreamFormat
from undertow.datastream.connectors.hybrid_source import HybridSource
from undertow.testing import FailingMap, InjectedFailure

from .conftest import EnvFactory
from .kills import RESTARTING
from .restore_evidence import (
    CountingMap,
    evidence,
    handled_in_finishing_attempt,
    restored_checkpoints,
)

FILES, PER_FILE = 4, 250
FIRST = FILES * PER_FILE  # the file source holds 0 .. FIRST-1, the sequence FIRST .. 2*FIRST-1


def _numbers_in_files(root: Path) -> str:
    root.mkdir()
    for f in range(FILES):
        lines = range(f * PER_FILE, (f + 1) * PER_FILE)
        (root / f"n{f}.txt").write_text("".join(f"{n}\n" for n in lines))
    return str(root)


def _hybrid(tmp_path: Path) -> HybridSource:
    files = FileSource.for_record_stream_format(
        StreamFormat.text_line_format(), _numbers_in_files(tmp_path / "in")
    ).set_batch_size(10)
    sequence = NumberSequenceSource(FIRST, 2 * FIRST - 1)
    return HybridSource.builder(files.build()).add_source(sequence).build()


def _as_int(value: Any) -> int:
    return int(value)


def _slowly(value: int) -> int:
    """Keeps the job running long enough for checkpoints to complete while it reads."""
    time.sleep(0.001)
    return value


def test_two_bounded_sources_give_all_records_in_source_order(
    make_env: EnvFactory, tmp_path: Path
) -> None:
    env = make_env(parallelism=1)
    stream = env.from_source(_hybrid(tmp_path), WatermarkStrategy.no_watermarks(), "hybrid")
    got = list(stream.map(_as_int).execute_and_collect())
    assert got == list(range(2 * FIRST))


def test_parallel_readers_give_every_record_once(make_env: EnvFactory, tmp_path: Path) -> None:
    env = make_env(parallelism=2)
    stream = env.from_source(_hybrid(tmp_path), WatermarkStrategy.no_watermarks(), "hybrid")
    got = list(stream.map(_as_int).execute_and_collect())
    assert sorted(got) == list(range(2 * FIRST))


class FailInSecondSource(MapFunction):
    """Identity that fails once, in attempt 0, once a checkpoint completed after it saw the
    second source's first record: that checkpoint's hybrid state is at the second source."""

    def open(self, runtime_context: RuntimeContext) -> None:
        self.armed = runtime_context.get_attempt_number() == 0
        self.completed = 0
        self.seen_at: int | None = None

    def notify_checkpoint_complete(self, checkpoint_id: int) -> None:
        self.completed = checkpoint_id

    def map(self, value: int) -> int:
        if self.armed and value >= FIRST:
            if self.seen_at is None:
                self.seen_at = self.completed
            elif self.completed > self.seen_at + 1:
                self.armed = False
                raise InjectedFailure(f"after checkpoint {self.completed} in the second source")
        return value


@pytest.mark.restores(catches=["source-positions"])
@pytest.mark.parametrize("where", ["first source", "second source"])
def test_restore_in_the_middle_is_exactly_once(
    make_env: EnvFactory, tmp_path: Path, capsys: pytest.CaptureFixture[str], where: str
) -> None:
    config = {
        "execution.checkpointing.interval": "100 ms",
        "execution.checkpointing.dir": str(tmp_path / "checkpoints"),
        "restart-strategy.type": "fixed-delay",
        "restart-strategy.fixed-delay.attempts": "1",
        "restart-strategy.fixed-delay.delay": "0 ms",
    }
    env = make_env(parallelism=2, config=config)
    out = tmp_path / "out"
    stream = env.from_source(_hybrid(tmp_path), WatermarkStrategy.no_watermarks(), "hybrid")
    stream = stream.uid("hybrid").map(CountingMap("read")).uid("counted").map(_as_int).uid("int")
    stream = stream.map(_slowly).uid("slowly")
    failing = FailingMap([2], subtask=1) if where == "first source" else FailInSecondSource()
    stream = stream.map(failing).uid("failing")
    stream.map(str).sink_to(FileSink.for_row_format(str(out), Encoder.simple_string_encoder())
                            .build())  # fmt: skip
    result = env.execute("hybrid with a failure")

    console = capsys.readouterr().err
    restored = restored_checkpoints(console)
    evidence(len(restored) == 1, f"expected one restore line, got {restored}:\n{console}")
    read = handled_in_finishing_attempt(result, "read")
    evidence(read < 2 * FIRST, f"the restored attempt read {read} of {2 * FIRST} records: "
             "a resumed hybrid source reads fewer")  # fmt: skip
    reasons = RESTARTING.findall(console)
    assert len(reasons) == 1 and "InjectedFailure" in reasons[0], reasons
    lines = [ln for p in out.rglob("*") if p.is_file() and not p.name.startswith(".")
             for ln in p.read_text().splitlines()]  # fmt: skip
    assert sorted(int(x) for x in lines) == list(range(2 * FIRST))
