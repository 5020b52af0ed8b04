"""The file source's split enumerator: finds files, hands them out as splits, remembers them.

Runs in the JobMaster (driver), on its loop thread. One split per file (a file is read by one
reader from start to end; none of the formats here can start in the middle of a file).

* Static (``process_static_file_set``): listed once at start, off the JobMaster's loop
  (``call_async``); requests before the listing ended are answered when it ends (a failure
  fails the job). Each request takes the next split; then the reader hears "no more".
* Continuous (``monitor_continuously(interval)``): a request that finds no split left lists the
  paths again (at most once per ``interval``), off the JobMaster's loop (``call_async``: an
  object store's listing of many files takes seconds), and turns every file not seen before
  into a split. Readers without a split ask again every ``interval`` and take the new splits
  then; the enumerator never says "no more splits" (the source is unbounded).

The longer story: docs/design.md, "Module notes", under this module's name.
"""

from __future__ import annotations

import datetime
import time
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

import fsspec  # type: ignore[import-untyped]

from undertow.connectors.file.split import FileSourceSplit
from undertow.connectors.source import (
    FirstDiscovery,
    SplitEnumerator,
    SplitEnumeratorContext,
    restore_discovery_state,
)
from undertow.core.errors import JobExecutionError


@dataclass(frozen=True, slots=True)
class FileEnumeratorState:
    """The enumerator's checkpoint (format ``version`` 2; :func:`restore_state` reads 1)."""

    version: int
    remaining: tuple[FileSourceSplit, ...]
    seen_paths: frozenset[str]
    #: The first listing ended (a checkpoint taken while it ran lists again on restore).
    initial_discovery_done: bool


def restore_state(checkpoint: Any, what: str) -> FileEnumeratorState:
    """The state of a checkpoint of format 2, or of format 1 (no ``initial_discovery_done``:
    the first discovery then ended before the job ran, so before any checkpoint)."""
    return restore_discovery_state(checkpoint, FileEnumeratorState, what, "file source")


def _hidden(relative: str) -> bool:
    return any(part.startswith((".", "_")) for part in relative.split("/") if part)


def _mtime(info: dict[str, Any]) -> float:
    value = info.get("mtime", info.get("created", 0.0))
    try:
        return float(value.timestamp() if isinstance(value, datetime.datetime) else value)
    except (TypeError, ValueError):
        return 0.0


def discover_files(paths: Iterable[str]) -> list[FileSourceSplit]:
    """Splits for every visible file under ``paths``, sorted by path. A missing path is an
    error naming it (a typo must not look like an empty input)."""
    found: dict[str, FileSourceSplit] = {}
    for url in paths:
        fs, root = fsspec.core.url_to_fs(url)
        if not fs.exists(root):
            raise FileNotFoundError(f"file source: input path {url!r} does not exist")
        if fs.isdir(root):
            entries = fs.find(root, detail=True, withdirs=False)
            base = root.rstrip("/") + "/"
        else:
            entries = {root: fs.info(root)}
            base = root.rsplit("/", 1)[0] + "/"
        for path, info in entries.items():
            if info.get("type") == "directory" or _hidden(path[len(base) :]):
                continue
            full = fs.unstrip_protocol(path)
            found[full] = FileSourceSplit(full, int(info.get("size") or 0), _mtime(info))
    return [found[p] for p in sorted(found)]


class FileEnumerator(SplitEnumerator[FileSourceSplit]):
    """Static or continuous enumerator (module doc). Only the JobMaster loop calls it; every
    listing runs on the context's ``call_async`` thread."""

    def __init__(
        self,
        context: SplitEnumeratorContext[FileSourceSplit],
        paths: tuple[str, ...],
        discovery_interval_ms: int | None,
        state: FileEnumeratorState | None = None,
        clock: Any = time.monotonic,
    ) -> None:
        self.context = context
        self.paths = paths
        self.interval_ms = discovery_interval_ms
        self.clock = clock
        self.remaining: list[FileSourceSplit] = list(state.remaining) if state else []
        self.seen: set[str] = set(state.seen_paths) if state else set()
        #: Ended (or restored as ended); the readers that ask before it ends wait for it.
        self._first = FirstDiscovery(state is not None and state.initial_discovery_done)
        self._last_discovery: float | None = None
        #: A listing is running (:meth:`start`, :meth:`_discover_later`); its handler clears it.
        self._discovering = False
        self._closed = False

    @property
    def continuous(self) -> bool:
        return self.interval_ms is not None

    def start(self) -> None:
        """The first listing (unless a restored checkpoint says it ended), off the loop like
        every later one: the JobMaster's loop must serve REST, checkpoint triggers and a
        cancel while an object store or a hung mount answers."""
        if self._first.done:
            return
        self._last_discovery = self.clock()
        self._discovering = True
        paths = self.paths
        self.context.call_async(lambda: discover_files(paths), self._first_listed)

    def _first_listed(
        self, splits: list[FileSourceSplit] | None, error: BaseException | None
    ) -> None:
        """The first listing's handler: a failure is raised naming the paths, which fails the
        job; else the readers that asked meanwhile are answered, in the order they asked."""
        self._discovering = False
        if self._closed:
            return
        if error is not None:
            raise JobExecutionError(
                f"FileSource over {list(self.paths)}: the first file listing failed: {error!r}"
            ) from error
        self._add_new(splits or [])
        for subtask in self._first.end():
            self._answer(subtask)

    def _add_new(self, splits: list[FileSourceSplit]) -> None:
        for split in splits:
            if split.path not in self.seen:
                self.seen.add(split.path)
                self.remaining.append(split)

    def _discover_later(self) -> None:
        self._last_discovery = self.clock()
        self._discovering = True
        paths = self.paths
        self.context.call_async(lambda: discover_files(paths), self._discovered)

    def _discovered(
        self, splits: list[FileSourceSplit] | None, error: BaseException | None
    ) -> None:
        self._discovering = False
        if self._closed:
            return
        if error is not None:  # a path gone: raised, which fails the job at once
            raise JobExecutionError(
                f"FileSource over {list(self.paths)}: listing the files failed: {error!r}"
            ) from error
        if splits:
            self._add_new(splits)

    def handle_split_request(self, subtask_id: int, requester_hostname: str | None) -> None:
        if self._first.defer(subtask_id):  # the first listing runs: answered when it ends
            return
        if not self.remaining and self.continuous and not self._discovering:
            due = self._last_discovery is None or (self.clock() - self._last_discovery) * 1000 >= (
                self.interval_ms or 0
            )
            if due:
                self._discover_later()  # at once when tested alone; else its splits come later
        self._answer(subtask_id)

    def _answer(self, subtask_id: int) -> None:
        if self.remaining:
            self.context.assign_split(self.remaining.pop(0), subtask_id)
        elif not self.continuous:
            self.context.signal_no_more_splits(subtask_id)
        # continuous and nothing new: the reader asks again after the interval

    def add_splits_back(self, splits: list[FileSourceSplit], subtask_id: int) -> None:
        self.remaining[:0] = splits

    def close(self) -> None:
        self._closed = True  # a listing still running is dropped when it ends

    def snapshot_state(self, checkpoint_id: int) -> FileEnumeratorState:
        return FileEnumeratorState(2, tuple(self.remaining), frozenset(self.seen), self._first.done)
