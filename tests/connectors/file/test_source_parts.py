"""File source pieces: discovery, the enumerator's checkpoint, reader positions, bad records."""

from __future__ import annotations

import datetime
from pathlib import Path
from typing import Any

import pytest

from undertow.connectors.file.bad_records import BadRecord, BadRecordError
from undertow.connectors.file.enumerator import FileEnumerator, _mtime, discover_files
from undertow.connectors.file.reader import FileSourceReader
from undertow.connectors.source import InputStatus
from undertow.datastream import OutputTag
from undertow.datastream.connectors.file_system import StreamFormat
from undertow.datastream.formats.json import JsonLinesFormat
from undertow.testing.source_reader import (
    CollectingOutput,
    StandaloneEnumeratorContext,
    StandaloneReaderContext,
)


def _names(ctx: StandaloneEnumeratorContext[Any]) -> list[tuple[str, int]]:
    """The assignments so far as (file name, subtask)."""
    return [(Path(split.path).name, subtask) for subtask, split in ctx.assigned]


def _files(root: Path, *names: str) -> None:
    for name in names:
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(f"{name}\n")


def test_discovery_is_recursive_sorted_and_skips_hidden(tmp_path: Path) -> None:
    _files(tmp_path, "b.txt", "a/c.txt", ".hidden", "_SUCCESS", "_tmp/x.txt", "a/.part.inprogress")
    found = discover_files([str(tmp_path)])
    assert [Path(s.path).name for s in found] == ["c.txt", "b.txt"]
    assert found[0].path.startswith("file://") and found[0].file_size == len("a/c.txt\n")
    with pytest.raises(FileNotFoundError, match="nope"):
        discover_files([str(tmp_path / "nope")])


def test_static_enumerator_and_restore(tmp_path: Path) -> None:
    _files(tmp_path, "1", "2", "3")
    ctx = StandaloneEnumeratorContext(parallelism=2)
    enum = FileEnumerator(ctx, (str(tmp_path),), None)
    enum.start()
    enum.handle_split_request(0, None)
    state = enum.snapshot_state(1)
    enum.handle_split_request(1, None)
    restored_ctx = StandaloneEnumeratorContext(parallelism=2)
    restored = FileEnumerator(restored_ctx, (str(tmp_path),), None, state)
    restored.start()  # must not rediscover "1", which reader 0 has in its state
    for subtask in (1, 0, 1):
        restored.handle_split_request(subtask, None)
    assert _names(ctx) == [("1", 0), ("2", 1)]
    assert _names(restored_ctx) == [("2", 1), ("3", 0)] and restored_ctx.no_more == [1]


def test_continuous_enumerator_discovers_new_files_once_per_interval(tmp_path: Path) -> None:
    now = [0.0]
    _files(tmp_path, "1")
    ctx = StandaloneEnumeratorContext(parallelism=2)
    enum = FileEnumerator(ctx, (str(tmp_path),), 1000, clock=lambda: now[0])
    enum.start()
    enum.handle_split_request(0, None)
    _files(tmp_path, "2")
    enum.handle_split_request(0, None)  # too early to look again
    assert _names(ctx) == [("1", 0)] and ctx.no_more == []
    now[0] = 1.0
    enum.handle_split_request(1, None)
    assert _names(ctx)[-1] == ("2", 1)
    state = enum.snapshot_state(7)
    assert {Path(p).name for p in state.seen_paths} == {"1", "2"}
    _files(tmp_path, "3")
    ctx2 = StandaloneEnumeratorContext(parallelism=2)
    restored = FileEnumerator(ctx2, (str(tmp_path),), 1000, state, clock=lambda: now[0])
    restored.start()
    restored.handle_split_request(0, None)
    restored.handle_split_request(0, None)
    assert _names(ctx2) == [("3", 0)] and ctx2.no_more == []


def _drain(
    reader: FileSourceReader, out: CollectingOutput, polls: int | None = None
) -> InputStatus:
    status = InputStatus.MORE_AVAILABLE
    while status is InputStatus.MORE_AVAILABLE and polls != 0:
        status = reader.poll_next(out)
        polls = None if polls is None else polls - 1
    return status


def test_reader_restores_from_any_snapshot_without_duplicates_or_loss(tmp_path: Path) -> None:
    for i in range(3):
        (tmp_path / f"f{i}.txt").write_text("".join(f"{i}-{j}\n" for j in range(10)))
    splits = discover_files([str(tmp_path)])
    expected = [f"{i}-{j}" for i in range(3) for j in range(10)]
    for stop_after in range(0, 12):
        reader = FileSourceReader(
            StandaloneReaderContext(), StreamFormat.text_line_format(), 3, None
        )
        reader.add_splits(list(splits))
        out = CollectingOutput()
        _drain(reader, out, polls=stop_after)
        state = reader.snapshot_state(1)
        reader.close()
        resumed = FileSourceReader(
            StandaloneReaderContext(), StreamFormat.text_line_format(), 3, None
        )
        resumed.add_splits(state)
        resumed.notify_no_more_splits()
        assert _drain(resumed, out) is InputStatus.END_OF_INPUT
        assert out.values == expected, stop_after


def test_reader_asks_again_only_after_the_discovery_interval() -> None:
    now = [0.0]
    ctx = StandaloneReaderContext()
    reader = FileSourceReader(ctx, StreamFormat.text_line_format(), 3, 500, clock=lambda: now[0])
    reader.start()
    assert (
        reader.poll_next(CollectingOutput()) is InputStatus.NOTHING_AVAILABLE
        and ctx.split_requests == 1
    )
    now[0] = 0.4
    reader.poll_next(CollectingOutput())
    assert ctx.split_requests == 1
    now[0] = 0.5
    reader.poll_next(CollectingOutput())
    assert ctx.split_requests == 2


BAD_JSON = '{"a": 1}\n{"a": \n{"a": 3}\n'


def test_bad_records_fail_naming_file_offset_and_line(tmp_path: Path) -> None:
    (tmp_path / "in.jsonl").write_text(BAD_JSON)
    reader = FileSourceReader(StandaloneReaderContext(), JsonLinesFormat(), 10, None)
    reader.add_splits(discover_files([str(tmp_path)]))
    with pytest.raises(BadRecordError) as info:
        _drain(reader, CollectingOutput())
    message = str(info.value)
    assert "in.jsonl" in message and "byte offset 9" in message and "line 2" in message
    assert "malformed JSON" in message and "subtask 1/1" in message and '{"a": ' in message


def test_bad_records_go_to_the_side_output(tmp_path: Path) -> None:
    (tmp_path / "in.jsonl").write_text(BAD_JSON)
    tag = OutputTag("bad")
    reader = FileSourceReader(
        StandaloneReaderContext(), JsonLinesFormat().with_bad_records(tag), 10, None
    )
    reader.add_splits(discover_files([str(tmp_path)]))
    reader.notify_no_more_splits()
    out = CollectingOutput()
    assert _drain(reader, out) is InputStatus.END_OF_INPUT
    assert out.values == [{"a": 1}, {"a": 3}]
    assert list(out.side) == ["bad"]
    [bad] = out.side["bad"]
    assert isinstance(bad, BadRecord)
    assert (Path(bad.path).name, bad.offset, bad.line, bad.raw) == ("in.jsonl", 9, 2, '{"a": ')


def test_a_files_time_is_read_from_a_datetime_or_a_number() -> None:
    moment = datetime.datetime(2026, 11, 30, 12, 0, tzinfo=datetime.timezone.utc)
    assert _mtime({"mtime": moment}) == moment.timestamp()
    assert _mtime({"created": 17.5}) == 17.5
    assert _mtime({"mtime": "not a time"}) == 0.0


def test_a_slow_continuous_listing_leaves_the_jobmasters_loop_free(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """On the JobMaster's context a continuous listing runs off the loop (an object store
    listing many files takes seconds): a split request returns at once, and the new file is
    handed out at the next request after the listing ends."""
    import asyncio
    import threading
    import time

    from undertow.connectors.file import enumerator as enumerator_module
    from undertow.runtime.control.messages import AddSplits
    from undertow.runtime.master.enumerators import EnumeratorContext

    (tmp_path / "a.txt").write_text("a\n")
    listed = threading.Event()
    real = enumerator_module.discover_files

    def slow_listing(paths: Any) -> Any:
        assert listed.wait(30), "the test never let the listing end"
        return real(paths)

    sent: list[tuple[int, Any]] = []
    failures: list[BaseException] = []
    now = [0.0]

    async def scenario() -> None:
        context = EnumeratorContext(
            lambda subtask, msg: sent.append((subtask, msg)), 0, 3, 1, fail=failures.append
        )
        enum = FileEnumerator(context, (str(tmp_path),), 100, clock=lambda: now[0])
        enum.start()
        enum.handle_split_request(0, None)  # takes a.txt
        (tmp_path / "b.txt").write_text("b\n")
        monkeypatch.setattr(enumerator_module, "discover_files", slow_listing)
        now[0] = 1.0
        started = time.monotonic()
        enum.handle_split_request(0, None)  # nothing left: a listing starts, and waits
        assert time.monotonic() - started < 1.0, "the split request waited for the listing"
        await asyncio.sleep(0.05)  # the loop runs on meanwhile
        listed.set()
        for _ in range(500):  # the reader asks again until it gets the new file
            await asyncio.sleep(0.01)
            enum.handle_split_request(0, None)
            paths = [m.splits[0].path for _, m in sent if isinstance(m, AddSplits)]
            if len(paths) == 2:
                break
        assert [p.rsplit("/", 1)[-1] for p in paths] == ["a.txt", "b.txt"], paths

    asyncio.run(scenario())
    assert failures == []
