"""Entry point of a ``local`` worker process: arguments arrive pickled on stdin."""

from __future__ import annotations

import pickle
import sys

from undertow.common import python_dependencies
from undertow.deploy.python_environment import WorkerEnvironment, same_place
from undertow.runtime.worker.log_context import worker_log_handler
from undertow.runtime.worker.worker import run_worker


def main() -> int:
    index, attempt, master, secret, config = pickle.loads(sys.stdin.buffer.read())
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
