"""Entry point of a ``local`` worker process: arguments arrive pickled, on stdin for a fresh
interpreter, from the fork server (:mod:`undertow.deploy.worker_fork`) for a forked one."""

from __future__ import annotations

import pickle
import sys

from undertow.common import python_dependencies
from undertow.deploy.python_environment import WorkerEnvironment, same_place
from undertow.runtime.worker.log_context import worker_log_handler
from undertow.runtime.worker.worker import run_worker


def main() -> int:
    return run(sys.stdin.buffer.read())


def run(arguments: bytes) -> int:
    """Run the worker that ``arguments`` describe; the process's exit code."""
    index, attempt, master, secret, config = pickle.loads(arguments)
    with worker_log_handler():
        try:
            with WorkerEnvironment(python_dependencies.read(config), same_place):
                run_worker(index, attempt, master, secret, config, forward_stdout=True)
        except Exception as err:
            print(f"undertow worker {index}: {err}", file=sys.stderr)
            return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
