"""Local deployments: workers as threads of this process, or as child processes.

* ``local-threads``: every worker runs its own asyncio loop on a thread of the driver process.
  Fast to start; used by most tests. Workers still talk over real TCP on loopback.
* ``local``: every worker is a process of its own, forked from undertow's fork server
  (:mod:`undertow.deploy.fork_server`; ``execution.local.fork-server``) or started as a fresh
  interpreter (``python -m undertow.deploy.worker_process``) that receives its arguments, the
  job secret included, on stdin (never on the command line). Either way the worker's
  ``sys.path``, environment and working directory are the driver's at launch, so modules the
  job imports are importable there. A job that sets ``python.executable`` gets fresh
  interpreters of it, and one with ``python.requirements`` fresh interpreters too (the fork
  server has imported packages its requirements might pin to other versions).

Both run exactly the same worker code (:func:`undertow.runtime.worker.worker.run_worker`).
"""

from __future__ import annotations

import logging
import os
import pickle
import subprocess
import sys
import threading
import time
from typing import Protocol

from undertow.common import python_dependencies
from undertow.core.types import AttemptNumber
from undertow.deploy.fork_server import ForkServer, fork_server
from undertow.runtime.worker.worker import run_worker

log = logging.getLogger(__name__)


class ThreadLauncher:
    def __init__(self) -> None:
        self.threads: list[threading.Thread] = []
        self.errors: dict[int, BaseException] = {}

    def launch(
        self, num_workers: int, master: tuple[str, int], secret: bytes, attempt: AttemptNumber,
        config: dict[str, str],
    ) -> None:  # fmt: skip
        self.threads = []
        for index in range(num_workers):
            thread = threading.Thread(
                target=self._run, args=(index, attempt, master, secret, config),
                name=f"undertow-worker-{index}", daemon=True,
            )  # fmt: skip
            thread.start()
            self.threads.append(thread)

    def _run(self, index: int, attempt: AttemptNumber, master: tuple[str, int], secret: bytes,
             config: dict[str, str]) -> None:  # fmt: skip
        try:
            run_worker(index, attempt, master, secret, config)
        except BaseException as err:
            self.errors[index] = err

    def wait(self, timeout: float) -> bool:
        deadline = time.monotonic() + timeout
        for thread in self.threads:
            thread.join(max(0.0, deadline - time.monotonic()))
        return not any(t.is_alive() for t in self.threads)

    def kill(self) -> None:
        # Threads cannot be killed; they are daemons and stop with their loop's connections.
        pass

    def exited(self) -> list[int]:
        """Workers whose thread has ended."""
        return [i for i, thread in enumerate(self.threads) if not thread.is_alive()]

    def describe_exit(self, worker_index: int) -> str:
        if worker_index in self.errors:
            return f"thread failed: {self.errors[worker_index]!r}"
        if worker_index < len(self.threads) and self.threads[worker_index].is_alive():
            return "still running"
        return "thread ended"


class ProcessLauncher:
    """Worker processes of the ``local`` target: forked from the fork server
    (:mod:`undertow.deploy.fork_server`) unless ``execution.local.fork-server`` is false or the
    job runs its workers on another interpreter (``python.executable``) or installs
    requirements (``python.requirements``: they might pin other versions of modules the
    server has imported), then fresh interpreters.

    Threading: ``launch``, ``exited`` and ``kill`` are called on the JobMaster's loop (a fork
    takes milliseconds once the server runs: :meth:`warm` starts it before the loop does);
    ``wait`` and ``describe_exit`` block and are called on its executor."""

    def __init__(self, fork_server: bool = True) -> None:
        self.fork_server = fork_server
        self.processes: list[WorkerProcess] = []

    def warm(self) -> None:
        """Start the fork server now, off the JobMaster's loop (a no-op without one)."""
        if self.fork_server:
            fork_server()

    def launch(
        self, num_workers: int, master: tuple[str, int], secret: bytes, attempt: AttemptNumber,
        config: dict[str, str],
    ) -> None:  # fmt: skip
        dependencies = python_dependencies.read(config)
        executable = dependencies.executable
        forked = self.fork_server and forkable(dependencies)
        self.processes = []
        for index in range(num_workers):
            arguments = pickle.dumps((index, attempt, master, secret, config))
            if forked:
                server = fork_server()
                self.processes.append(_ForkedProcess(server, *server.fork(arguments)))
            else:
                self.processes.append(_fresh(executable or sys.executable, arguments))

    def wait(self, timeout: float) -> bool:
        deadline = time.monotonic() + timeout
        return all(
            proc.wait(max(0.0, deadline - time.monotonic())) is not None for proc in self.processes
        )

    def kill(self) -> None:
        for proc in self.processes:
            if proc.poll() is None:
                proc.kill()
        for proc in self.processes:
            proc.wait(None)

    def describe_exit(self, worker_index: int) -> str:
        if worker_index >= len(self.processes):
            return "not started"
        proc = self.processes[worker_index]
        code = proc.wait(0.5)  # a dead process is reaped a moment after its sockets close
        if code is None:
            return f"process {proc.pid} still running"
        if code < 0:
            return f"process {proc.pid} killed by signal {-code}"
        return f"process {proc.pid} exit code {code}"

    def exited(self) -> list[int]:
        """Workers whose process has ended."""
        return [i for i, proc in enumerate(self.processes) if proc.poll() is not None]


def forkable(dependencies: python_dependencies.PythonDependencies) -> bool:
    """Whether the fork server's workers fit the job: the driver's interpreter, and no
    requirements that might pin other versions of modules the server has imported."""
    return dependencies.executable is None and dependencies.requirements is None


class WorkerProcess(Protocol):
    """One worker process, forked or fresh, as the launcher sees it."""

    @property
    def pid(self) -> int: ...

    def poll(self) -> int | None:
        """The exit code (negative: the signal that ended it), or None while it runs."""

    def wait(self, timeout: float | None) -> int | None:
        """Wait up to ``timeout`` seconds (None: for ever); the exit code or None."""

    def kill(self) -> None: ...


class _ForkedProcess:
    """A worker forked by the fork server (not our child: the server reaps it)."""

    def __init__(self, server: ForkServer, request: int, pid: int) -> None:
        self.server = server
        self.request = request  # what the server knows it by: a pid may come back
        self.pid = pid

    def poll(self) -> int | None:
        return self.server.exit_code(self.request)

    def wait(self, timeout: float | None) -> int | None:
        return self.server.exit_code(self.request, timeout)

    def kill(self) -> None:
        self.server.kill(self.request)


class _FreshProcess:
    """A worker as a fresh interpreter (``python -m undertow.deploy.worker_process``)."""

    def __init__(self, proc: subprocess.Popen[bytes]) -> None:
        self.proc = proc
        self.pid = proc.pid

    def poll(self) -> int | None:
        return self.proc.poll()

    def wait(self, timeout: float | None) -> int | None:
        try:
            return self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            return None

    def kill(self) -> None:
        self.proc.kill()


def _fresh(python: str, arguments: bytes) -> WorkerProcess:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in sys.path if p)
    proc = subprocess.Popen(
        [python, "-m", "undertow.deploy.worker_process"],
        stdin=subprocess.PIPE, env=env, cwd=os.getcwd(),
    )  # fmt: skip
    assert proc.stdin is not None
    proc.stdin.write(arguments)
    proc.stdin.close()
    return _FreshProcess(proc)
