"""The file source's enumerator on the JobMaster's context: its first listing runs off the
loop, readers that ask meanwhile are answered when it ends, a checkpoint taken meanwhile lists
again on restore, and a listing that fails fails the attempt naming the paths."""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from undertow.connectors.file import enumerator as enumerator_module
from undertow.connectors.file.enumerator import (
    FileEnumerator,
    FileEnumeratorState,
    restore_state,
)
from undertow.core.errors import JobExecutionError
from undertow.runtime.control.messages import AddSplits, NoMoreSplits
from undertow.runtime.master.enumerators import EnumeratorContext
from undertow.testing.source_reader import StandaloneEnumeratorContext


async def _until(condition: Callable[[], bool]) -> None:
    for _ in range(1000):
        if condition():
            return
        await asyncio.sleep(0.01)
    raise AssertionError("the condition did not hold within 10 s")


def _answers(sent: list[tuple[int, Any]]) -> list[tuple[int, str]]:
    """What the readers were sent, as (subtask, file name or "no more")."""
    return [
        (s, m.splits[0].path.rsplit("/", 1)[-1] if isinstance(m, AddSplits) else "no more")
        for s, m in sent
        if isinstance(m, (AddSplits, NoMoreSplits))
    ]


def test_the_first_listing_blocking_leaves_the_jobmasters_loop_free(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``start`` and the split requests return at once while the listing hangs (an NFS mount,
    an object store: the loop serves REST, checkpoint triggers and a cancel meanwhile); a
    checkpoint then says the listing has not ended; when it ends the readers that asked get
    the files in the order they asked, as the listing on the loop gave them. (On the loop,
    ``start`` waited for the listing.)"""
    for name in ("a", "b", "c"):
        (tmp_path / name).write_text(f"{name}\n")
    listed = threading.Event()
    real = enumerator_module.discover_files

    def hanging_listing(paths: Any) -> Any:
        assert listed.wait(30), "the test never let the listing end"
        return real(paths)

    monkeypatch.setattr(enumerator_module, "discover_files", hanging_listing)
    sent: list[tuple[int, Any]] = []
    failures: list[BaseException] = []

    async def scenario() -> FileEnumeratorState:
        context = EnumeratorContext(
            lambda subtask, msg: sent.append((subtask, msg)), 0, 3, 2, fail=failures.append
        )
        enum = FileEnumerator(context, (str(tmp_path),), None)
        started = time.monotonic()
        enum.start()
        enum.handle_split_request(1, None)
        enum.handle_split_request(0, None)
        assert time.monotonic() - started < 1.0, "start waited for the listing"
        ticks = 0
        for _ in range(10):  # the loop is free while the listing hangs
            await asyncio.sleep(0.01)
            ticks += 1
        assert ticks == 10 and sent == []
        during = enum.snapshot_state(1)
        listed.set()
        await _until(lambda: len(sent) == 2)
        enum.handle_split_request(1, None)
        enum.handle_split_request(0, None)
        enum.close()
        return during

    during = asyncio.run(scenario())
    assert failures == []
    assert _answers(sent) == [(1, "a"), (0, "b"), (1, "c"), (0, "no more")]
    assert during == FileEnumeratorState(2, (), frozenset(), False)
    context = StandaloneEnumeratorContext[Any](parallelism=2)
    again = FileEnumerator(context, (str(tmp_path),), None, restore_state(during, "f"))
    again.start()  # lists again
    for subtask in (0, 1, 0, 1):
        again.handle_split_request(subtask, None)
    assert [Path(s.path).name for _, s in context.assigned] == ["a", "b", "c"]
    assert context.no_more == [1]


def test_a_first_listing_that_fails_fails_the_attempt_naming_the_path(tmp_path: Path) -> None:
    missing = str(tmp_path / "no-such-dir")
    sent: list[tuple[int, Any]] = []
    failures: list[BaseException] = []

    async def scenario() -> None:
        context = EnumeratorContext(
            lambda subtask, msg: sent.append((subtask, msg)), 0, 3, 1, fail=failures.append
        )
        enum = FileEnumerator(context, (missing,), None)
        enum.start()
        enum.handle_split_request(0, None)
        await _until(lambda: bool(failures))

    asyncio.run(scenario())
    [failure] = failures
    assert isinstance(failure, JobExecutionError)
    assert isinstance(failure.__cause__, FileNotFoundError)
    assert str(failure).startswith(
        f"FileSource over [{missing!r}]: the first file listing failed: FileNotFoundError("
    )
    assert sent == []  # the reader that asked was told nothing: the job fails instead


def test_a_checkpoint_of_format_1_restores_as_one_whose_first_listing_ended(
    tmp_path: Path,
) -> None:
    (tmp_path / "new").write_text("new\n")
    old = FileEnumeratorState.__new__(FileEnumeratorState)
    for name, value in (("version", 1), ("remaining", ()), ("seen_paths", frozenset())):
        object.__setattr__(old, name, value)  # as a pickle of format 1 unpickles: 3 fields
    restored = restore_state(old, "FileSource")
    assert restored == FileEnumeratorState(2, (), frozenset(), True)
    context = StandaloneEnumeratorContext[Any](parallelism=1)
    enum = FileEnumerator(context, (str(tmp_path),), None, restored)
    enum.start()  # does not list: the first listing ended before that checkpoint
    enum.handle_split_request(0, None)
    assert context.assigned == [] and context.no_more == [0]
    with pytest.raises(TypeError, match="FileSource: cannot restore the enumerator from dict"):
        restore_state({}, "FileSource")


def test_a_continuous_listing_that_fails_fails_the_attempt_at_once(tmp_path: Path) -> None:
    """The watched directory is gone at a later listing: its handler fails the attempt
    naming the path, without waiting for another split request. (The error was kept and
    raised only at the next request.)"""
    watched = tmp_path / "in"
    watched.mkdir()
    (watched / "a").write_text("a\n")
    sent: list[tuple[int, Any]] = []
    failures: list[BaseException] = []
    now = [0.0]

    async def scenario() -> None:
        context = EnumeratorContext(
            lambda subtask, msg: sent.append((subtask, msg)), 0, 3, 1, fail=failures.append
        )
        enum = FileEnumerator(context, (str(watched),), 100, clock=lambda: now[0])
        enum.start()
        enum.handle_split_request(0, None)
        await _until(lambda: len(sent) == 1)
        (watched / "a").unlink()
        watched.rmdir()
        now[0] = 1.0
        enum.handle_split_request(0, None)  # nothing left: lists again, and fails
        await _until(lambda: bool(failures))
        enum.close()

    asyncio.run(scenario())
    [failure] = failures
    assert isinstance(failure, JobExecutionError)
    assert isinstance(failure.__cause__, FileNotFoundError)
    assert str(failure).startswith(
        f"FileSource over [{str(watched)!r}]: listing the files failed: FileNotFoundError("
    )
    assert _answers(sent) == [(0, "a")]
