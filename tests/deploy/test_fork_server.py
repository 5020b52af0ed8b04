"""The ``local`` target's fork server (undertow.deploy.fork_server): forked workers take the
driver's state at launch, their exits are reported as a child's would be, and none outlives
the driver."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import textwrap
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from undertow.common import Configuration
from undertow.common.python_dependencies import PythonDependencies
from undertow.datastream import StreamExecutionEnvironment
from undertow.deploy.fork_server import fork_server
from undertow.deploy.local import ProcessLauncher, forkable


def _seen_by_the_workers(marker: str) -> list[tuple[str, str, bool]]:
    env = StreamExecutionEnvironment.get_execution_environment(
        Configuration({"execution.target": "local"})
    )
    env.set_parallelism(2)

    def look(i: int) -> tuple[str, str, bool]:
        os.write(2, f"{marker} from a worker's fd 2\n".encode())
        return os.environ.get("UNDERTOW_FORK_TEST", ""), os.getcwd(), "/fork-test-path" in sys.path

    return list(env.from_collection([0, 1, 2, 3]).map(look).execute_and_collect())


def test_a_forked_worker_takes_the_drivers_environment_directory_path_and_fds_at_launch(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capfd: pytest.CaptureFixture[str]
) -> None:
    _seen_by_the_workers("warm-up")  # the server runs from here on, with the old state
    monkeypatch.setenv("UNDERTOW_FORK_TEST", "set after the server started")
    monkeypatch.chdir(tmp_path)
    monkeypatch.syspath_prepend("/fork-test-path")
    capfd.readouterr()
    seen = _seen_by_the_workers("marker-7c1")
    assert set(seen) == {("set after the server started", str(tmp_path), True)}
    assert "marker-7c1 from a worker's fd 2" in capfd.readouterr().err


def test_workers_start_with_pandas_imported_where_it_is_installed() -> None:
    """pyarrow imports pandas at its first array conversion: the server did it already, so a
    worker's first record batch does not pay for it."""
    pytest.importorskip("pandas")
    env = StreamExecutionEnvironment.get_execution_environment(
        Configuration({"execution.target": "local"})
    )

    def look(i: int) -> bool:
        return "pandas" in sys.modules and "pyarrow.pandas_compat" in sys.modules

    assert set(env.from_collection([0, 1]).map(look).execute_and_collect()) == {True}


@pytest.fixture
def silent_master() -> Iterator[tuple[str, int]]:
    """A control address that accepts connections and never answers: a worker waits there."""
    server = socket.create_server(("127.0.0.1", 0))
    try:
        yield server.getsockname()
    finally:
        server.close()


def test_exits_are_reported_as_a_childs_would_be(silent_master: tuple[str, int]) -> None:
    launcher = ProcessLauncher(fork_server=True)
    closed = socket.create_server(("127.0.0.1", 0))
    refused = closed.getsockname()
    closed.close()
    launcher.launch(1, refused, b"s" * 32, 0, {})
    server = fork_server()  # the driver's one fork server forked it, and stays up
    assert server.alive and fork_server() is server
    assert launcher.wait(30)
    assert launcher.exited() == [0]
    assert launcher.describe_exit(0).endswith("exit code 1")

    launcher.launch(2, silent_master, b"s" * 32, 0, {})
    assert not launcher.wait(0.3) and launcher.exited() == []
    assert launcher.describe_exit(1).endswith("still running")
    os.kill(launcher.processes[1].pid, signal.SIGKILL)
    assert launcher.processes[1].wait(10) == -signal.SIGKILL
    assert launcher.exited() == [1]
    launcher.kill()
    assert launcher.exited() == [0, 1]
    assert launcher.describe_exit(0).endswith("killed by signal 9")


NS_LAST_PID = Path("/proc/sys/kernel/ns_last_pid")


def test_a_recycled_pid_does_not_pass_for_an_exited_worker(silent_master: tuple[str, int]) -> None:
    """A worker of the same pid as one that exited before is running, not exited: the server
    knows its workers by request, not pid (a new worker once looked "exited with code 0 before
    registering" after the machine's pids wrapped). The kernel is asked for the old pid again
    (``ns_last_pid``, root only); another process may take it first, hence the tries."""
    if not os.access(NS_LAST_PID, os.W_OK):
        pytest.skip("needs root: the test hands a worker's pid to the next one")
    closed = socket.create_server(("127.0.0.1", 0))
    refused = closed.getsockname()
    closed.close()
    first = ProcessLauncher(fork_server=True)
    first.launch(1, refused, b"s" * 32, 0, {})
    assert first.wait(30) and first.describe_exit(0).endswith("exit code 1")
    old_pid = first.processes[0].pid
    for _ in range(20):
        second = ProcessLauncher(fork_server=True)
        NS_LAST_PID.write_text(str(old_pid - 1))
        second.launch(1, silent_master, b"s" * 32, 0, {})
        if second.processes[0].pid == old_pid:
            break
        second.kill()
    else:
        pytest.skip(f"other processes took pid {old_pid} twenty times")
    try:
        assert second.exited() == [] and second.processes[0].poll() is None
        assert second.describe_exit(0).endswith("still running")
    finally:
        second.kill()
    assert second.exited() == [0]


def test_no_forked_worker_outlives_its_driver(
    silent_master: tuple[str, int], tmp_path: Path
) -> None:
    pid_file = tmp_path / "pid"
    driver = subprocess.Popen([sys.executable, "-c", textwrap.dedent(f"""
        import time
        from undertow.deploy.local import ProcessLauncher
        launcher = ProcessLauncher(fork_server=True)
        launcher.launch(1, {silent_master!r}, b"s" * 32, 0, {{}})
        open({str(pid_file)!r}, "w").write(str(launcher.processes[0].pid))
        time.sleep(600)
    """)])  # fmt: skip
    deadline = time.monotonic() + 60
    while not pid_file.exists() or not pid_file.read_text():
        assert time.monotonic() < deadline and driver.poll() is None
        time.sleep(0.05)
    worker = int(pid_file.read_text())
    os.kill(worker, signal.SIGSTOP)  # a hung worker: it notices nothing by itself
    try:
        driver.kill()
        driver.wait()
        deadline = time.monotonic() + 30
        while _alive(worker):
            assert time.monotonic() < deadline, f"worker {worker} outlived its driver"
            time.sleep(0.05)
    finally:
        if _alive(worker):
            os.kill(worker, signal.SIGKILL)


def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as stat:
            return stat.read().rsplit(")", 1)[1].split()[0] not in ("Z", "X")
    except OSError:
        return False


def test_without_the_fork_server_workers_are_fresh_interpreters(
    silent_master: tuple[str, int],
) -> None:
    launcher = ProcessLauncher(fork_server=False)
    launcher.launch(1, silent_master, b"s" * 32, 0, {})
    pid = launcher.processes[0].pid
    try:
        deadline = time.monotonic() + 10
        while not _cmdline(pid):  # empty while the new interpreter is being executed
            assert time.monotonic() < deadline
            time.sleep(0.01)
        assert b"undertow.deploy.worker_process" in _cmdline(pid)
        assert _parent(pid) == os.getpid()
    finally:
        launcher.kill()
    assert launcher.describe_exit(0).endswith("killed by signal 9")


def _cmdline(pid: int) -> bytes:
    with open(f"/proc/{pid}/cmdline", "rb") as cmdline:
        return cmdline.read()


def _parent(pid: int) -> int:
    with open(f"/proc/{pid}/stat") as stat:
        return int(stat.read().rsplit(")", 1)[1].split()[1])


def test_jobs_with_their_own_interpreter_or_requirements_get_fresh_interpreters() -> None:
    assert forkable(PythonDependencies(files=("/some/module.py",)))
    assert not forkable(PythonDependencies(executable="/opt/python3.12/bin/python"))
    assert not forkable(PythonDependencies(requirements="/job/requirements.txt"))
