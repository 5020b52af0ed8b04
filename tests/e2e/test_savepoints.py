"""Savepoints and stop-with-savepoint (reference §6.4, §7), through the public API.

* stop without drain: the job ends FINISHED before its sources ran out; a new job resumes
  from the savepoint and the oracle counts no loss and no duplicate over both jobs;
* stop with drain: event time goes to the end (the last, partial windows fire), the sink's
  output is committed, the job ends FINISHED;
* an intermediate savepoint survives checkpoint retention and the job's end, and a job
  restored from it is exactly-once too;
* all of it also without periodic checkpoints (no ``execution.checkpointing.interval``), the
  directory then possibly coming from ``execution.checkpointing.savepoint-dir``.
"""

from __future__ import annotations

import re
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

from undertow.cli.main import main
from undertow.common import Duration, Encoder, WatermarkStrategy
from undertow.core.errors import ConfigurationError
from undertow.datastream import JobStatus
from undertow.datastream.connectors.datagen import DataGeneratorSource
from undertow.datastream.connectors.file_system import FileSink
from undertow.datastream.window import TumblingEventTimeWindows
from undertow.storage.keys import default_key_file
from undertow.testing.gates import SourceHold
from undertow.testing.oracle import OracleResult, OracleSource, build_pipeline

from .conftest import EnvFactory
from .restore_evidence import RestWatcher, assert_restores

KEYS, RECORDS_PER_KEY = 10, 1500
#: per source reader (2 readers): the job would read for about 1.5 s
THROTTLED = 5_000.0
TIMEOUT_S = 60.0
SAVEPOINT_DIR = re.compile(r"savepoint-[0-9a-f]{6}-\d+")


def _config(tmp_path: Path, **extra: str) -> dict[str, str]:
    return {
        "execution.checkpointing.interval": "100 ms",
        "execution.checkpointing.dir": str(tmp_path / "checkpoints"),
        **extra,
    }


def _wait_running(client: Any, after_s: float) -> None:
    deadline = time.monotonic() + TIMEOUT_S
    while client.get_job_status().result() is not JobStatus.RUNNING and time.monotonic() < deadline:
        time.sleep(0.01)
    time.sleep(after_s)


def _held_source(
    tmp_path: Path, records_per_key: int = RECORDS_PER_KEY
) -> tuple[OracleSource, SourceHold]:
    """A throttled oracle source whose 2 readers hold after a sixth of their records, so a
    savepoint taken inside :func:`_held` has records behind it by construction (a fixed wait
    after RUNNING could end before a loaded machine's sources emitted any: the resumed job
    then read everything, and its restore evidence was missing)."""
    hold = SourceHold(tmp_path / "hold", after_records=KEYS * records_per_key // 6)
    source = OracleSource(KEYS, records_per_key, records_per_second=THROTTLED, hold=hold)
    return source, hold


@contextmanager
def _held(hold: SourceHold) -> Iterator[None]:
    """Inside: both readers emitted their records up to the hold; released on the way out."""
    try:
        assert hold.wait_held(2, TIMEOUT_S), "the sources did not reach their hold"
        yield
    finally:
        hold.release()


def _check_savepoint(pointer: str, target: Path) -> None:
    path = Path(pointer)
    assert path.parent == target and SAVEPOINT_DIR.fullmatch(path.name), pointer
    assert (path / "_metadata").is_file()


def _resume(make_env: EnvFactory, tmp_path: Path, savepoint: str,
            records_per_key: int = RECORDS_PER_KEY) -> OracleResult:  # fmt: skip
    env = make_env(parallelism=2, config=_config(
        tmp_path, **{"execution.state-recovery.path": savepoint}
    ))  # fmt: skip
    build_pipeline(env, OracleSource(KEYS, records_per_key, records_per_second=THROTTLED))
    client = env.execute_async("resumed")
    result = client.get_job_execution_result(timeout=TIMEOUT_S)
    oracle = OracleResult.from_job_result(result, KEYS, records_per_key)
    oracle.assert_restored()  # a resumed source and restored state, not a rerun
    return oracle


def scenario_stop_without_drain_then_resume(
    make_env: EnvFactory, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Stop without drain, resume a new job from the savepoint: exactly-once over both jobs,
    and the second job restored the savepoint (console line, REST, resumed source, state)."""
    env = make_env(parallelism=2, config=_config(tmp_path))
    source, hold = _held_source(tmp_path)
    build_pipeline(env, source)
    client = env.execute_async("stopped")
    with _held(hold):
        savepoint = client.stop_with_savepoint(str(tmp_path / "sp")).result(timeout=TIMEOUT_S)

    client.get_job_execution_result(timeout=TIMEOUT_S)
    assert client.get_job_status().result() is JobStatus.FINISHED
    _check_savepoint(savepoint, tmp_path / "sp")
    capsys.readouterr()
    resumed = make_env(parallelism=2, config=_config(
        tmp_path, **{"execution.state-recovery.path": savepoint, "rest.port": "0"}
    ))  # fmt: skip
    build_pipeline(resumed, OracleSource(KEYS, RECORDS_PER_KEY, records_per_second=THROTTLED))
    resumed_client = resumed.execute_async("resumed")
    watcher = RestWatcher(resumed_client)
    result = resumed_client.get_job_execution_result(timeout=TIMEOUT_S)
    oracle = OracleResult.from_job_result(result, KEYS, RECORDS_PER_KEY)

    oracle.assert_exactly_once()
    assert oracle.received == oracle.expected == KEYS * RECORDS_PER_KEY
    assert oracle.restarts == 0
    ids = assert_restores(capsys.readouterr().err, watcher.stop(), restores=1)
    assert ids == [int(savepoint.rsplit("-", 1)[1])], (ids, savepoint)
    oracle.assert_restored()


@pytest.mark.restores
def test_stop_without_drain_then_resume_from_the_savepoint(
    make_env: EnvFactory, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    scenario_stop_without_drain_then_resume(make_env, tmp_path, capsys)


WINDOW_MS = 100


def _count(a: tuple[int, int, int], b: tuple[int, int, int]) -> tuple[int, int, int]:
    return a[0], a[1] + b[1], max(a[2], b[2])


def test_stop_with_drain_fires_every_window_and_commits_the_sink(
    make_env: EnvFactory, tmp_path: Path
) -> None:
    """Event time ``i`` ms for record ``i`` of an endless, throttled sequence; windows of
    100 ms count per key. After a drain the committed windows hold every record the source
    read, so the last, partial windows fired (only the MAX watermark fires them)."""
    env = make_env(parallelism=2, config=_config(tmp_path))
    source = DataGeneratorSource(lambda i: (i % 4, 1, i), count=10**9, records_per_second=3000)
    strategy = WatermarkStrategy.for_monotonous_timestamps().with_timestamp_assigner(
        lambda event, _: event[2]
    )
    out = tmp_path / "out"
    (
        env.from_source(source, strategy, "gen").set_parallelism(1)
        .key_by(lambda e: e[0])
        .window(TumblingEventTimeWindows.of(Duration.of_millis(WINDOW_MS)))
        .reduce(_count)
        .map(lambda c: f"{c[0]},{c[1]},{c[2]}")
        .sink_to(FileSink.for_row_format(str(out), Encoder.simple_string_encoder()).build())
    )  # fmt: skip
    client = env.execute_async("drained")
    _wait_running(client, after_s=0)
    # a window fired: its count is in the sink's in-progress file (a fixed wait after RUNNING
    # could end before a loaded machine's source read its first window)
    deadline = time.monotonic() + TIMEOUT_S
    while not any(p.is_file() for p in out.rglob("*")) and time.monotonic() < deadline:
        time.sleep(0.02)

    savepoint = client.stop_with_savepoint(str(tmp_path / "sp"), drain=True).result(TIMEOUT_S)

    client.get_job_execution_result(timeout=TIMEOUT_S)
    assert client.get_job_status().result() is JobStatus.FINISHED
    _check_savepoint(savepoint, tmp_path / "sp")
    hidden = [p for p in out.rglob("*") if p.is_file() and p.name.startswith(".")]
    assert hidden == [], "every part file must be committed"
    rows = [tuple(int(x) for x in line.split(","))
            for p in out.rglob("*") if p.is_file()
            for line in p.read_text().splitlines()]  # fmt: skip
    assert rows, "the windows must have fired"
    last = max(r[2] for r in rows)
    assert sum(r[1] for r in rows) == last + 1, "every record read is in a fired window"
    assert last < 10**9 - 1, "the source must have been stopped, not exhausted"


@pytest.mark.restores
def test_a_savepoint_survives_retention_and_the_job_and_restores(
    make_env: EnvFactory, tmp_path: Path
) -> None:
    """The sources are held a third of the way until the savepoint completed, and it is
    taken once both readers reached the hold: after records flowed (at load 46 on ``local``
    a savepoint 0.3 s after RUNNING came before any, and restored nothing) and before they
    run out (a savepoint of finished sources would resume nothing either). A third of
    the records: with the hold, the job need not last for the savepoint, and at load ~17
    the full volume kept the first job running past its 60 s."""
    records_per_key = RECORDS_PER_KEY // 3
    config = _config(tmp_path, **{"execution.checkpointing.num-retained": "1"})
    env = make_env(parallelism=2, config=config)
    source, hold = _held_source(tmp_path, records_per_key)
    build_pipeline(env, source)
    client = env.execute_async("savepointed")
    with _held(hold):  # records flowed before the savepoint: one taken first restores nothing
        savepoint = client.trigger_savepoint(str(tmp_path / "sp")).result(timeout=TIMEOUT_S)

    first = OracleResult.from_job_result(
        client.get_job_execution_result(timeout=TIMEOUT_S), KEYS, records_per_key
    )
    first.assert_exactly_once()  # the savepoint did not disturb the job
    assert first.received == first.expected
    _check_savepoint(savepoint, tmp_path / "sp")
    job_dirs = [p for p in (tmp_path / "checkpoints").iterdir() if p.is_dir()]
    assert all(not list(d.glob("chk-*/_metadata")) for d in job_dirs), "retained checkpoints"
    oracle = _resume(make_env, tmp_path, savepoint, records_per_key)
    oracle.assert_exactly_once()
    assert oracle.received == oracle.expected


@pytest.mark.parametrize("target", ["local-threads"])
def test_undertow_stop_through_the_rest_api(
    make_env: EnvFactory, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    env = make_env(parallelism=2, config=_config(tmp_path))
    build_pipeline(env, OracleSource(KEYS, RECORDS_PER_KEY, records_per_second=THROTTLED))
    client = env.execute_async("stopped by the CLI")
    _wait_running(client, after_s=0.3)
    url = client.get_rest_address()
    assert url is not None

    code = main(["stop", url, "--savepoint-path", str(tmp_path / "sp")])

    captured = capsys.readouterr()
    printed = captured.out
    assert code == 0, captured.err[-2000:]
    match = re.search(r"^Savepoint completed\. Path: (.+)$", printed, re.M)
    assert match is not None, printed
    _check_savepoint(match.group(1), tmp_path / "sp")
    client.get_job_execution_result(timeout=TIMEOUT_S)
    assert client.get_job_status().result() is JobStatus.FINISHED
    assert main(["stop", url, "--savepoint-path", str(tmp_path / "sp")]) == 2  # job gone


@pytest.mark.restores
@pytest.mark.parametrize("target", ["local-threads"])
def test_savepoints_stay_aligned_when_checkpoints_are_unaligned(
    make_env: EnvFactory, tmp_path: Path
) -> None:
    """Savepoints are aligned unless asked (reference §7): with unaligned checkpoints on and a
    slow sink (in-flight data), the savepoint holds no channel state yet resumes exactly."""
    config = _config(tmp_path, **{"execution.checkpointing.unaligned.enabled": "true"})
    env = make_env(parallelism=2, config=config)
    source, hold = _held_source(tmp_path)
    build_pipeline(env, source, sink_spin_s=0.0002)
    client = env.execute_async("unaligned")
    with _held(hold):
        savepoint = client.stop_with_savepoint(str(tmp_path / "sp")).result(timeout=TIMEOUT_S)

    client.get_job_execution_result(timeout=TIMEOUT_S)
    files = sorted(
        p.name for p in (Path(savepoint) / f"chk-{savepoint.rsplit('-', 1)[1]}").iterdir()
    )
    assert not [f for f in files if "channel" in f], files
    oracle = _resume(make_env, tmp_path, savepoint)
    oracle.assert_exactly_once()
    assert oracle.received == oracle.expected


# --- savepoints without periodic checkpoints ------------------------------------------------


def _no_checkpoints(tmp_path: Path, **extra: str) -> dict[str, str]:
    """No ``execution.checkpointing.interval``: periodic checkpoints are off."""
    return {"execution.checkpointing.dir": str(tmp_path / "checkpoints"), **extra}


def _resume_without_checkpoints(
    make_env: EnvFactory, tmp_path: Path, savepoint: str
) -> OracleResult:
    config = _no_checkpoints(tmp_path, **{"execution.state-recovery.path": savepoint})
    env = make_env(parallelism=2, config=config)
    build_pipeline(env, OracleSource(KEYS, RECORDS_PER_KEY, records_per_second=THROTTLED))
    result = env.execute_async("resumed").get_job_execution_result(timeout=TIMEOUT_S)
    oracle = OracleResult.from_job_result(result, KEYS, RECORDS_PER_KEY)
    oracle.assert_restored()  # a resumed source and restored state, not a rerun
    return oracle


@pytest.mark.restores
@pytest.mark.parametrize("drain", [False, True], ids=["no-drain", "drain"])
def test_stop_with_savepoint_without_periodic_checkpoints_then_resume(
    make_env: EnvFactory, tmp_path: Path, drain: bool
) -> None:
    """Flink takes savepoints of jobs without ``execution.checkpointing.interval``: the stop's
    savepoint is every task's final checkpoint all the same, and a job resumed from it (also
    without periodic checkpoints) loses and duplicates nothing. With drain the directory comes
    from ``execution.checkpointing.savepoint-dir`` (PyFlink's call without a directory)."""
    target = tmp_path / "sp"
    config = _no_checkpoints(tmp_path, **{"execution.checkpointing.savepoint-dir": str(target)})
    env = make_env(parallelism=2, config=config)
    source, hold = _held_source(tmp_path)
    build_pipeline(env, source)
    client = env.execute_async("stopped, no checkpoints")
    with _held(hold):
        if drain:
            stopped = client.stop_with_savepoint(True)
        else:
            stopped = client.stop_with_savepoint(str(target), drain=False)
        savepoint = stopped.result(timeout=TIMEOUT_S)

    client.get_job_execution_result(timeout=TIMEOUT_S)
    assert client.get_job_status().result() is JobStatus.FINISHED
    _check_savepoint(savepoint, target)
    oracle = _resume_without_checkpoints(make_env, tmp_path, savepoint)
    oracle.assert_exactly_once()
    assert oracle.received == oracle.expected == KEYS * RECORDS_PER_KEY
    assert oracle.restarts == 0


@pytest.mark.restores
def test_trigger_savepoint_without_periodic_checkpoints_then_resume(
    make_env: EnvFactory, tmp_path: Path
) -> None:
    env = make_env(parallelism=2, config=_no_checkpoints(tmp_path))
    source, hold = _held_source(tmp_path)
    build_pipeline(env, source)
    client = env.execute_async("savepointed, no checkpoints")
    with _held(hold):
        savepoint = client.trigger_savepoint(str(tmp_path / "sp")).result(timeout=TIMEOUT_S)

    first = OracleResult.from_job_result(
        client.get_job_execution_result(timeout=TIMEOUT_S), KEYS, RECORDS_PER_KEY
    )
    first.assert_exactly_once()
    assert first.received == first.expected
    _check_savepoint(savepoint, tmp_path / "sp")
    oracle = _resume_without_checkpoints(make_env, tmp_path, savepoint)
    oracle.assert_exactly_once()
    assert oracle.received == oracle.expected


@pytest.mark.parametrize("target", ["local-threads"])
def test_a_savepoint_without_any_directory_fails_naming_the_option(
    make_env: EnvFactory, tmp_path: Path
) -> None:
    env = make_env(parallelism=2, config=_no_checkpoints(tmp_path))
    build_pipeline(env, OracleSource(KEYS, RECORDS_PER_KEY, records_per_second=THROTTLED))
    client = env.execute_async("no savepoint directory")
    _wait_running(client, after_s=0.1)

    with pytest.raises(ConfigurationError, match=r"execution\.checkpointing\.savepoint-dir"):
        client.trigger_savepoint().result(timeout=TIMEOUT_S)
    with pytest.raises(ConfigurationError, match=r"stop-with-savepoint of job .*savepoint-dir"):
        client.stop_with_savepoint().result(timeout=TIMEOUT_S)

    assert client.get_job_status().result() is JobStatus.RUNNING, (
        "a refused request leaves the job be"
    )
    client.cancel()


@pytest.mark.restores
@pytest.mark.parametrize("target", ["local-threads"])
def test_undertow_stop_without_periodic_checkpoints_or_a_path(
    make_env: EnvFactory, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """``undertow stop URL`` without ``--savepoint-path``: the job's configured directory."""
    config = _no_checkpoints(
        tmp_path, **{"execution.checkpointing.savepoint-dir": str(tmp_path / "sp")}
    )
    env = make_env(parallelism=2, config=config)
    build_pipeline(env, OracleSource(KEYS, RECORDS_PER_KEY, records_per_second=THROTTLED))
    client = env.execute_async("stopped by the CLI, no checkpoints")
    _wait_running(client, after_s=0.3)
    url = client.get_rest_address()
    assert url is not None

    code = main(["stop", url])

    captured = capsys.readouterr()
    assert code == 0, captured.err[-2000:]
    match = re.search(r"^Savepoint completed\. Path: (.+)$", captured.out, re.M)
    assert match is not None, captured.out
    _check_savepoint(match.group(1), tmp_path / "sp")
    client.get_job_execution_result(timeout=TIMEOUT_S)
    assert client.get_job_status().result() is JobStatus.FINISHED
    oracle = _resume_without_checkpoints(make_env, tmp_path, match.group(1))
    oracle.assert_exactly_once()
    assert oracle.received == oracle.expected


@pytest.mark.restores
@pytest.mark.parametrize("target", ["local-threads"])
def test_no_checkpoint_directory_until_the_first_savepoint(
    make_env: EnvFactory, tmp_path: Path
) -> None:
    """A job without periodic checkpoints creates nothing under ``execution.checkpointing.dir``
    (no key file, no job directory), run to its end or while it runs; its first savepoint
    creates the key beside the checkpoints, and a job restored from the savepoint verifies it
    with that key."""
    root = tmp_path / "checkpoints"
    env = make_env(parallelism=2, config=_no_checkpoints(tmp_path))
    build_pipeline(env, OracleSource(KEYS, 10))
    env.execute("no checkpoints, to the end")
    assert not root.exists(), sorted(root.rglob("*"))

    env = make_env(parallelism=2, config=_no_checkpoints(tmp_path))
    build_pipeline(env, OracleSource(KEYS, RECORDS_PER_KEY, records_per_second=THROTTLED))
    client = env.execute_async("no checkpoints, one savepoint")
    _wait_running(client, after_s=0.3)
    assert not root.exists(), sorted(root.rglob("*"))

    savepoint = client.trigger_savepoint(str(tmp_path / "sp")).result(timeout=TIMEOUT_S)

    _check_savepoint(savepoint, tmp_path / "sp")
    assert default_key_file().is_file() and not (root / "_undertow_key").exists()
    client.get_job_execution_result(timeout=TIMEOUT_S)
    oracle = _resume_without_checkpoints(make_env, tmp_path, savepoint)
    oracle.assert_exactly_once()
    assert oracle.received == oracle.expected
