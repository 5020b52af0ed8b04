"""Local deployments: workers as threads of this process, or as child processes.

* ``local-threads``: every worker runs its own asyncio loop on a thread of the driver process.
  Fast to start; used by most tests. Workers still talk over real TCP on loopback.
* ``local``: every worker is a child process (``python -m undertow.deploy.worker_process``)
  that receives its arguments, the job secret included, on stdin (never on the command line).
  The child's ``sys.path`` is the driver's, so modules the job imports are importable there.
  It runs ``python.executable`` if the job set one, else the driver's interpreter.

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

from undertow.common import python_dependencies
from undertow.runtime.worker.worker import run_worker

log = logging.getLogger(__name__)


class ThreadLauncher:
    def __init__(self) -> None:
        self.threads: list[threading.Thread] = []
        self.errors: dict[int, BaseException] = {}

    def launch(
        self, num_workers: int, master: tuple[str, int], secret: bytes, attempt: int,
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

    def _run(self, index: int, attempt: int, master: tuple[str, int], secret: bytes,
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
    def __init__(self) -> None:
        self.processes: list[subprocess.Popen[bytes]] = []

    def launch(
        self, num_workers: int, master: tuple[str, int], secret: bytes, attempt: int,
        config: dict[str, str],
    ) -> None:  # fmt: skip
        env = dict(os.environ)
        env["PYTHONPATH"] = os.pathsep.join(p for p in sys.path if p)
        self.processes = []
        python = python_dependencies.read(config).executable or sys.executable
        for index in range(num_workers):
            proc = subprocess.Popen(
                [python, "-m", "undertow.deploy.worker_process"],
                stdin=subprocess.PIPE, env=env, cwd=os.getcwd(),
            )  # fmt: skip
            assert proc.stdin is not None
            proc.stdin.write(pickle.dumps((index, attempt, master, secret, config)))
            proc.stdin.close()
            self.processes.append(proc)

    def wait(self, timeout: float) -> bool:
        deadline = time.monotonic() + timeout
        for proc in self.processes:
            try:
                proc.wait(max(0.0, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                return False
        return True

    def kill(self) -> None:
        for proc in self.processes:
            if proc.poll() is None:
                proc.kill()
        for proc in self.processes:
            proc.wait()

    def describe_exit(self, worker_index: int) -> str:
        if worker_index >= len(self.processes):
            return "not started"
        proc = self.processes[worker_index]
        try:  # a dead process is reaped a moment after its sockets close
            code = proc.wait(0.5)
        except subprocess.TimeoutExpired:
            return f"process {proc.pid} still running"
        if code < 0:
            return f"process {proc.pid} killed by signal {-code}"
        return f"process {proc.pid} exit code {code}"

    def exited(self) -> list[int]:
        """Workers whose process has ended."""
        return [i for i, proc in enumerate(self.processes) if proc.poll() is not None]
