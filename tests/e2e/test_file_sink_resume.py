"""Row-format FileSink part files that stay open across checkpoints, end to end.

A row-format ``FileSink`` on the local file system with a ``DefaultRollingPolicy`` whose
limits are never reached keeps one part file per subtask and bucket open for the whole run,
however many checkpoints complete meanwhile (Flink's behaviour), and stays exactly-once when
the job fails: after a scheduled failure (``local-threads``, ``local``) or a ``kill -9`` of a
worker process (``local``, ``spark``), the restore cuts the open part file back to the length
its checkpoint recorded and appends to it again. The committed output read back equals the
expected records exactly, no hidden (in-progress or pending) file is left, each restore printed
its line, and each committed part file is the very file first written in progress (its inode,
held open by :class:`PartFileWatcher`): a part file deleted and rewritten is caught even with
identical bytes.

Input: CSV files, one per key, ``seq = 1..PER_KEY`` in order, through a keyed count (see
:mod:`.test_file_connectors`). Buckets: by key parity, so each sink subtask writes two buckets.
The kill test's seed is printed; replay with ``UNDERTOW_TEST_SEED``.
"""

from __future__ import annotations

import os
import re
import threading
import time
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from undertow.common import Encoder, WatermarkStrategy
from undertow.datastream.connectors.file_system import (
    BucketAssigner,
    FileSink,
    FileSource,
    OutputFileConfig,
    RollingPolicy,
)
from undertow.datastream.formats.csv import CsvReaderFormat
from undertow.testing import FailingMap
from undertow.testing.oracle import oracle_seed

from .conftest import EnvFactory
from .kills import COMPLETED, run_killing_a_worker_after_a_checkpoint
from .restore_evidence import evidence, restored_checkpoints
from .test_file_connectors import (
    CSV,
    EXPECTED,
    RESTARTING,
    CountPerKey,
    _as_csv,
    _config,
    _csv_input,
    _hidden_files,
    _text_output,
)

#: committed names: part-<writer uuid>-<subtask>-<counter>.csv
PART = re.compile(r"^part-[0-9a-f]{32}-(\d+)-\d+\.csv$")
PARALLELISM = 2
JOB_TIMEOUT_S = 120.0
#: per record, chained to the source: 4000 records over 2 readers last about 2 s
PACE_S = 0.001
NEVER_ROLLS = RollingPolicy.default_rolling_policy(
    part_size=1 << 30, rollover_interval=3_600_000, inactivity_interval=3_600_000
)


class ByKeyParity(BucketAssigner):
    """``"k,seq,count"`` -> ``parity=<k % 2>``."""

    def get_bucket_id(self, element: Any, context: Any) -> str:
        return f"parity={int(element.split(',', 1)[0]) % 2}"


def _paced(value: Any) -> Any:
    time.sleep(PACE_S)
    return value


def _job(env: Any, tmp_path: Path, failing: FailingMap | None = None) -> Path:
    """CSV files -> paced [-> failing] -> key_by -> CountPerKey -> row-format FileSink."""
    source = FileSource.for_record_stream_format(
        CsvReaderFormat.for_schema(CSV), str(_csv_input(tmp_path / "in"))
    )
    stream = env.from_source(source.set_batch_size(10).build(),
                             WatermarkStrategy.no_watermarks(), "files").uid("files")  # fmt: skip
    stream = stream.map(_paced).uid("paced")
    if failing is not None:
        stream = stream.map(failing).uid("failing")
    counted = stream.key_by(lambda r: r[0]).map(CountPerKey()).uid("count")
    out = tmp_path / "out"
    sink = (
        FileSink.for_row_format(str(out), Encoder.simple_string_encoder())
        .with_bucket_assigner(ByKeyParity())
        .with_output_file_config(OutputFileConfig.builder().with_part_suffix(".csv").build())
        .with_rolling_policy(NEVER_ROLLS)
        .build()
    )
    counted.map(_as_csv).uid("as-csv").sink_to(sink).uid("text-sink")
    return out


def _parts_per_subtask_and_bucket(out: Path) -> Counter[tuple[str, int]]:
    """How many committed part files each (bucket, subtask) wrote."""
    found: Counter[tuple[str, int]] = Counter()
    for path in out.rglob("*"):
        if path.is_file() and not path.name.startswith((".", "_")):
            match = PART.match(path.name)
            assert match is not None, f"unexpected file {path}"
            found[(path.parent.name, int(match.group(1)))] += 1
    return found


class PartFileWatcher:
    """Holds an open descriptor on the first in-progress file seen for each final part name
    (``.<final name>.inprogress.<uuid>``), polled every 10 ms while the job runs. A held
    descriptor keeps its inode allocated, so a part file deleted and written anew gets another
    inode: :meth:`assert_resumed` then tells a resumed file (same inode, renamed on commit)
    from a rewritten one even when their bytes are identical. It also notes the newest
    completed checkpoint (a ``chk-<n>/_metadata`` under ``checkpoints``) when it first saw
    each file: a file opened after the checkpoint a restore goes back to is in no state to
    resume, and the restore rightly deletes it (a reader reaches a bucket's first key late:
    CI, 2026-12-03, a kill 0.2 s after checkpoint 1)."""

    def __init__(self, out: Path, checkpoints: Path) -> None:
        self.out = out
        self.checkpoints = checkpoints
        self.held: dict[str, tuple[int, int]] = {}  # final name -> (fd, inode)
        #: final name -> the newest completed checkpoint when the file was first seen
        self.seen_after: dict[str, int] = {}
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="part-watcher", daemon=True)
        self._thread.start()

    def _completed(self) -> int:
        """The newest checkpoint whose ``_metadata`` exists (written last, by a rename)."""
        ids = [int(p.parent.name[4:]) for p in self.checkpoints.glob("*/chk-*/_metadata")]
        return max(ids, default=0)

    def _run(self) -> None:
        while not self._stop.wait(0.01):
            for path in self.out.rglob(".*.inprogress.*"):
                final = path.name[1:].split(".inprogress.", 1)[0]
                if final in self.held:
                    continue
                try:
                    fd = os.open(path, os.O_RDONLY)
                except FileNotFoundError:
                    continue
                self.held[final] = (fd, os.fstat(fd).st_ino)
                # read after the file was found: it existed when at most this one had completed
                self.seen_after[final] = self._completed()

    def assert_resumed(self, restored: list[int]) -> None:
        """Every committed part file was seen in progress and is the very same file (none was
        deleted and written anew: a restore that rewrites from scratch deletes the earlier
        attempts' files and starts new ones), and every file seen in progress was committed,
        but for one the restore of checkpoint ``r`` (of ``restored``) may delete: one first
        seen when ``r - 1`` or ``r`` was the newest completed checkpoint, so maybe opened
        after ``r``'s snapshot. One seen before ``r - 1`` completed was open when ``r`` was
        triggered (one checkpoint at a time), so ``r`` holds it."""
        self._stop.set()
        self._thread.join(5)
        try:
            committed = {p.name: p for p in self.out.rglob("part-*")}
            seen = self.seen_after
            dropped = {name for name in set(self.held) - set(committed)
                       if not any(r - 1 <= seen[name] <= r for r in restored)}  # fmt: skip
            evidence(set(committed) <= set(self.held) and not dropped,
                     f"part files seen in progress {sorted(self.held)} (after checkpoints "
                     f"{self.seen_after}) but committed {sorted(committed)}, restored "
                     f"{restored}: {sorted(dropped)} were deleted and written anew instead of "
                     "resumed")  # fmt: skip
            for name, (fd, inode) in self.held.items():
                if name not in committed:
                    continue
                evidence(committed[name].stat().st_ino == inode and os.fstat(fd).st_nlink == 1,
                         f"{committed[name]} was deleted and written anew instead of "
                         "resumed")  # fmt: skip
        finally:
            for fd, _ in self.held.values():
                os.close(fd)


def _assert_exact(out: Path) -> None:
    assert _text_output(out) == EXPECTED
    assert _hidden_files(out) == []
    parts = _parts_per_subtask_and_bucket(out)
    # at most one part file per subtask and bucket: the open one was resumed, not replaced
    assert set(parts.values()) == {1}, parts
    assert {bucket for bucket, _ in parts} == {"parity=0", "parity=1"}, parts


@pytest.mark.parametrize("target", ["local-threads", "local", "spark"])
def test_one_part_file_per_subtask_and_bucket_however_many_checkpoints(
    make_env: EnvFactory, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    env = make_env(parallelism=PARALLELISM, config=_config(tmp_path, restarts=0))
    out = _job(env, tmp_path)
    env.execute_async("one part file per bucket").get_job_execution_result(timeout=JOB_TIMEOUT_S)

    completed = {int(n) for n in COMPLETED.findall(capsys.readouterr().err)}
    assert len(completed) > 5, f"only {len(completed)} checkpoints completed: {completed}"
    _assert_exact(out)
    assert sum(_parts_per_subtask_and_bucket(out).values()) <= 2 * PARALLELISM


def scenario_scheduled_failures(
    make_env: EnvFactory, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Two failures, each after a checkpoint completed while part files were open and being
    appended to: the failing task's close flushes bytes written after that checkpoint into
    the open files; the restore must cut them off and append to the same files."""
    failing = FailingMap(fail_after_checkpoints=[2, 4], subtask=1)
    env = make_env(parallelism=PARALLELISM, config=_config(tmp_path, restarts=2))
    out = _job(env, tmp_path, failing)
    watcher = PartFileWatcher(out, tmp_path / "checkpoints")
    env.execute_async("resume after failures").get_job_execution_result(timeout=JOB_TIMEOUT_S)

    console = capsys.readouterr().err
    reasons = RESTARTING.findall(console)
    assert len(reasons) == 2 and all("InjectedFailure" in r for r in reasons), reasons
    restored = restored_checkpoints(console)
    evidence(len(restored) == 2, console)
    # before the output: a lost restore shows as itself
    watcher.assert_resumed([cid for cid, _, _ in restored])
    _assert_exact(out)


@pytest.mark.restores(catches=["operator-state"])
@pytest.mark.parametrize("target", ["local-threads", "local"])
def test_open_part_files_resume_exactly_after_scheduled_failures(
    make_env: EnvFactory, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    scenario_scheduled_failures(make_env, tmp_path, capsys)


def scenario_worker_killed(
    make_env: EnvFactory, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    seed = oracle_seed()
    env = make_env(parallelism=PARALLELISM, config=_config(tmp_path, restarts=3))
    out = _job(env, tmp_path)
    watcher = PartFileWatcher(out, tmp_path / "checkpoints")
    client = env.execute_async("resume after kill -9")
    _, console = run_killing_a_worker_after_a_checkpoint(
        client, capsys, seed, earliest_s=0.0, latest_s=0.5, timeout_s=JOB_TIMEOUT_S
    )

    assert len(RESTARTING.findall(console)) == 1, (seed, console)
    restored = restored_checkpoints(console)
    evidence(len(restored) == 1, f"seed {seed}: {console}")
    watcher.assert_resumed([cid for cid, _, _ in restored])
    _assert_exact(out)


@pytest.mark.restores
@pytest.mark.parametrize("target", ["local", "spark"])
def test_open_part_files_resume_exactly_after_a_worker_is_killed(
    make_env: EnvFactory, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    scenario_worker_killed(make_env, tmp_path, capsys)
