"""Timers in RocksDB end to end: event-time windows over many keys on incremental RocksDB.

The source gives record ``i`` the key ``i % KEYS`` and the event time ``i // 2`` ms; windows of
``WINDOW_MS`` count per key, with a watermark ``BOUND_MS`` behind, so thousands of window
timers wait at every checkpoint. Results go through the exactly-once file sink, so every
(key, window) must be committed exactly once with its exact count: a timer lost in a restore
leaves its window out, a window whose contents were lost counts wrong.

* Failures scheduled in a map (restore in place, the DB adopted whole), twice.
* Rescale: a first job at parallelism 2 is cancelled with its incremental checkpoint retained;
  a second job restores it with the window at parallelism 3 (timers copied by key group).

Both show the restore on the console and in REST, and a restored attempt's source resumes
(its first record is not event time 0: the output alone cannot tell a restore from a rerun,
which rewrites the same part files); the timers are in RocksDB: the window operator's DB has
the timer column family while the job runs. Both scenarios are in the no-restore controls.
"""

from __future__ import annotations

import time
import uuid
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from undertow.common import Duration, Encoder, WatermarkStrategy
from undertow.datastream import EmbeddedRocksDBStateBackend, JobStatus
from undertow.datastream.connectors import DataGeneratorSource
from undertow.datastream.connectors.file_system import FileSink
from undertow.datastream.functions import MapFunction, RuntimeContext
from undertow.datastream.window import TumblingEventTimeWindows
from undertow.storage import CheckpointStorage
from undertow.testing.oracle import FailingMap

from .conftest import EnvFactory
from .restore_evidence import RestWatcher, assert_restores, evidence

KEYS, RECORDS, RATE = 1_000, 40_000, 8_000.0
WINDOW_MS, BOUND_MS = 250, 2_000
TIMEOUT_S = 180.0


def _expected() -> Counter[tuple[int, int]]:
    windows: Counter[tuple[int, int]] = Counter()
    for i in range(RECORDS):
        t = i // 2
        windows[(i % KEYS, t - t % WINDOW_MS)] += 1
    return windows


def _earliest(a: tuple[int, int, int], b: tuple[int, int, int]) -> tuple[int, int, int]:
    return a[0], a[1] + b[1], min(a[2], b[2])


class FirstSeen(MapFunction):
    """Identity; writes the event time of the first record each attempt sees into a file of
    ``directory`` (restore evidence: a restored source resumes after event time 0)."""

    def __init__(self, directory: str) -> None:
        self.directory = directory
        self.attempt = -1
        self.logged = False

    def open(self, runtime_context: RuntimeContext) -> None:
        self.attempt = runtime_context.get_attempt_number()

    def map(self, value: Any) -> Any:
        if not self.logged:
            self.logged = True
            name = f"{self.directory}/{self.attempt}-{uuid.uuid4().hex}"
            Path(name).write_text(str(value[2]))
        return value


def _first_seen(directory: Path) -> list[tuple[int, int]]:
    """(attempt, first event time) per attempt that saw a record, by attempt."""
    return sorted((int(p.name.split("-")[0]), int(p.read_text())) for p in directory.iterdir())


def _job(
    env: Any, tmp_path: Path, failing: FailingMap | None, window_parallelism: int, seen: Path
) -> None:
    backend = EmbeddedRocksDBStateBackend(enable_incremental_checkpointing=True)
    backend.set_db_storage_paths(str(tmp_path / "rocksdb"))
    env.set_state_backend(backend)
    source = DataGeneratorSource(lambda i: (i % KEYS, 1, i // 2), count=RECORDS,
                                 records_per_second=RATE)  # fmt: skip
    strategy = WatermarkStrategy.for_bounded_out_of_orderness(
        Duration.of_millis(BOUND_MS)
    ).with_timestamp_assigner(lambda event, _: event[2])
    stream = env.from_source(source, strategy, "gen").uid("gen").set_parallelism(1)
    seen.mkdir(exist_ok=True)
    stream = stream.map(FirstSeen(str(seen))).uid("first-seen").set_parallelism(1)
    if failing is not None:
        stream = stream.map(failing).uid("failing").set_parallelism(1)
    (
        stream.key_by(lambda e: e[0])
        .window(TumblingEventTimeWindows.of(Duration.of_millis(WINDOW_MS)))
        .reduce(_earliest).uid("window").set_parallelism(window_parallelism)
        .map(lambda c: f"{c[0]},{c[1]},{c[2] - c[2] % WINDOW_MS}").uid("format")
        .set_parallelism(window_parallelism)
        .sink_to(FileSink.for_row_format(str(tmp_path / "out"),
                                         Encoder.simple_string_encoder()).build())
        .uid("sink").set_parallelism(window_parallelism)
    )  # fmt: skip


def _config(tmp_path: Path, **extra: str) -> dict[str, str]:
    return {
        "execution.checkpointing.interval": "200 ms",
        "execution.checkpointing.dir": str(tmp_path / "checkpoints"),
        "restart-strategy.type": "fixed-delay",
        "restart-strategy.fixed-delay.attempts": "2",
        "restart-strategy.fixed-delay.delay": "0 ms",
        "rest.port": "0",
        **extra,
    }


def _committed(out: Path) -> Counter[tuple[int, int]]:
    """(key, window start) -> count of every committed row; a window committed twice raises."""
    rows: Counter[tuple[int, int]] = Counter()
    for path in out.rglob("*"):
        if path.is_file() and not path.name.startswith("."):
            for line in path.read_text().splitlines():
                key, count, start = (int(x) for x in line.split(","))
                assert (key, start) not in rows, f"window {(key, start)} committed twice"
                rows[(key, start)] = count
    return rows


class TimerColumnWatcher:
    """Whether a RocksDB timer column family was seen under ``root`` (polled): the timers are
    in the DB, not in the Python heaps."""

    def __init__(self, root: Path) -> None:
        self.root = root

    def seen(self) -> bool:
        for options in self.root.glob("undertow-rocksdb-*/db/OPTIONS-*"):
            try:
                if "_timer_state/event_window-timers" in options.read_text(errors="replace"):
                    return True
            except OSError:
                continue
        return False


def _assert_exactly_once(out: Path) -> None:
    committed, expected = _committed(out), _expected()
    missing = sorted(set(expected) - set(committed))
    wrong = sorted(w for w in committed if committed[w] != expected.get(w))
    assert not missing and not wrong, (
        f"{len(missing)} windows missing (e.g. {missing[:5]}), {len(wrong)} counted wrong "
        f"(e.g. {[(w, committed[w], expected.get(w)) for w in wrong[:5]]}) of {len(expected)}"
    )


def scenario_window_timers_scheduled_failures(
    make_env: EnvFactory, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    failing = FailingMap(fail_after_checkpoints=[3, 7])
    env = make_env(parallelism=2, config=_config(tmp_path))
    _job(env, tmp_path, failing, window_parallelism=2, seen=tmp_path / "seen")
    watcher = TimerColumnWatcher(tmp_path / "rocksdb")
    client = env.execute_async("windows, timers in rocksdb")
    rest = RestWatcher(client)
    in_db = False
    try:
        deadline = time.monotonic() + TIMEOUT_S
        while not client.get_job_status().result().is_globally_terminal_state():
            in_db = in_db or watcher.seen()
            assert time.monotonic() < deadline, "the job did not finish in time"
            time.sleep(0.05)
        client.get_job_execution_result(timeout=TIMEOUT_S)
    finally:
        rest_ids = rest.stop()
        client.cancel()
    console = capsys.readouterr().err
    assert_restores(console, rest_ids, restores=2)
    first = _first_seen(tmp_path / "seen")
    assert [a for a, _ in first] == [0, 1, 2] and first[0][1] == 0, first
    evidence(all(t > 0 for _, t in first[1:]), f"restored attempts resume the source: {first}")
    assert in_db, "the window timers must be in a RocksDB column family"
    _assert_exactly_once(tmp_path / "out")


def scenario_window_timers_rescale(
    make_env: EnvFactory, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    retain = {"execution.checkpointing.externalized-checkpoint-retention":
              "RETAIN_ON_CANCELLATION"}  # fmt: skip
    env = make_env(parallelism=2, config=_config(tmp_path, **retain))
    _job(env, tmp_path, None, window_parallelism=2, seen=tmp_path / "seen-1")
    client = env.execute_async("windows at p=2")
    storage = CheckpointStorage(str(tmp_path / "checkpoints"), client.get_job_id())
    deadline = time.monotonic() + TIMEOUT_S
    while len(storage.completed_checkpoint_ids()) < 1 or max(
        storage.completed_checkpoint_ids()) < 6:  # fmt: skip
        assert time.monotonic() < deadline, "no sixth checkpoint"
        time.sleep(0.02)
    client.cancel()
    while client.get_job_status().result() is not JobStatus.CANCELED:
        assert time.monotonic() < deadline, "not cancelled"
        time.sleep(0.02)
    latest = max(storage.completed_checkpoint_ids())
    pointer = storage.checkpoint_pointer(latest)
    capsys.readouterr()

    resumed = make_env(parallelism=3, config=_config(tmp_path, **{
        "execution.state-recovery.path": pointer,
    }))  # fmt: skip
    _job(resumed, tmp_path, None, window_parallelism=3, seen=tmp_path / "seen-2")
    client = resumed.execute_async("windows at p=3")
    rest = RestWatcher(client)
    try:
        client.get_job_execution_result(timeout=TIMEOUT_S)
    finally:
        rest_ids = rest.stop()
        client.cancel()
    console = capsys.readouterr().err
    ids = assert_restores(console, rest_ids, restores=1)
    evidence(ids == [latest], f"restored {ids}, not checkpoint {latest}")
    evidence(_first_seen(tmp_path / "seen-2")[0][1] > 0, "the source did not resume")
    _assert_exactly_once(tmp_path / "out")


@pytest.mark.restores
@pytest.mark.parametrize("target", ["local"])
def test_window_timers_in_rocksdb_survive_scheduled_failures(
    make_env: EnvFactory, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    scenario_window_timers_scheduled_failures(make_env, tmp_path, capsys)


@pytest.mark.restores
@pytest.mark.parametrize("target", ["local"])
def test_window_timers_in_rocksdb_rescale_from_an_incremental_checkpoint(
    make_env: EnvFactory, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    scenario_window_timers_rescale(make_env, tmp_path, capsys)
