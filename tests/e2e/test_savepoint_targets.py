"""A savepoint into a directory that cannot be written is refused while the job runs on.

``trigger_savepoint``, ``stop_with_savepoint`` and ``undertow stop --savepoint-path`` into a
path with a file in the way, or on a file system that denies writes, fail naming the path and
the OS error before anything is taken: the job is still RUNNING afterwards (it did not stop
its sources, nor fail over), and a savepoint into a good directory still works.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import pytest
from tests import read_only_fs

from undertow.cli.main import main
from undertow.datastream import JobStatus
from undertow.storage import CheckpointStorageError
from undertow.testing.oracle import OracleResult, OracleSource, build_pipeline

from .conftest import EnvFactory

KEYS, RECORDS_PER_KEY = 4, 4000
THROTTLED = 2_000.0
TIMEOUT_S = 60.0


def _running(make_env: EnvFactory, tmp_path: Path, name: str) -> Any:
    env = make_env(parallelism=2, config={
        "execution.checkpointing.interval": "100 ms",
        "execution.checkpointing.dir": str(tmp_path / "checkpoints"),
        "rest.port": "0",
    })  # fmt: skip
    build_pipeline(env, OracleSource(KEYS, RECORDS_PER_KEY, records_per_second=THROTTLED))
    client = env.execute_async(name)
    deadline = time.monotonic() + TIMEOUT_S
    while client.get_job_status().result() is not JobStatus.RUNNING:
        assert time.monotonic() < deadline, "the job did not reach RUNNING"
        time.sleep(0.01)
    return client


def _still_running(client: Any) -> None:
    time.sleep(0.3)  # a stop that went ahead would have ended (or failed over) the job by now
    status = client.get_job_status().result()
    assert status is JobStatus.RUNNING, f"a refused savepoint left the job {status.value}"


@pytest.mark.parametrize("target", ["local-threads"])
def test_savepoints_into_unwritable_directories_are_refused_and_the_job_runs_on(
    make_env: EnvFactory, tmp_path: Path
) -> None:
    blocker = tmp_path / "blocker"
    blocker.write_bytes(b"a file, not a directory")
    denied = f"{read_only_fs.PROTOCOL}://savepoints"
    client = _running(make_env, tmp_path, "refused savepoints")

    cases: list[tuple[str, str]] = [
        (str(blocker), "FileExistsError"),
        (str(blocker / "sp"), "NotADirectoryError"),
        (denied, "PermissionError: [Errno 13] Permission denied"),
    ]
    for path, os_error in cases:
        for stop in (True, False):
            request = client.stop_with_savepoint(path) if stop else client.trigger_savepoint(path)
            with pytest.raises(CheckpointStorageError) as caught:
                request.result(timeout=TIMEOUT_S)
            message = str(caught.value)
            assert f"savepoint directory {path}: cannot" in message, message
            assert os_error in message and "the job goes on" in message, message
            _still_running(client)
    assert blocker.read_bytes() == b"a file, not a directory"

    savepoint = client.stop_with_savepoint(str(tmp_path / "sp")).result(timeout=TIMEOUT_S)
    result = client.get_job_execution_result(timeout=TIMEOUT_S)
    assert Path(savepoint, "_metadata").is_file()
    oracle = OracleResult.from_job_result(result, KEYS, RECORDS_PER_KEY)
    assert oracle.restarts == 0, "a refused savepoint failed the job over"
    assert client.get_job_status().result() is JobStatus.FINISHED


@pytest.mark.parametrize("target", ["local-threads"])
def test_undertow_stop_into_an_unwritable_directory_exits_1_and_the_job_runs_on(
    make_env: EnvFactory, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    blocker = tmp_path / "blocker"
    blocker.write_bytes(b"")
    client = _running(make_env, tmp_path, "refused stop from the CLI")
    url = client.get_rest_address()
    assert url is not None
    capsys.readouterr()

    code = main(["stop", url, "--savepoint-path", str(blocker / "sp")])

    err = capsys.readouterr().err
    assert code == 1, err
    assert f"savepoint directory {blocker / 'sp'}: cannot create it" in err, err
    assert "NotADirectoryError" in err and "Traceback" not in err, err
    _still_running(client)
    assert main(["stop", url, "--savepoint-path", str(tmp_path / "sp")]) == 0
    client.get_job_execution_result(timeout=TIMEOUT_S)
    assert client.get_job_status().result() is JobStatus.FINISHED
