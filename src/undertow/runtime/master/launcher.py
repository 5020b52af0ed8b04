"""How the JobMaster starts an attempt's workers: the :class:`WorkerLauncher` contract.

Implementations live in :mod:`undertow.deploy` (worker threads, worker processes, a Spark
barrier stage); the JobMaster knows only this protocol. A launcher starts ``num_workers``
workers that connect back to the JobMaster's control address with the job's secret and
register for the given attempt; it can wait for them, kill them, and say how one ended.

Threading: ``launch``, ``exited`` and ``kill`` are called on the JobMaster's loop and must not
block; ``wait`` and ``describe_exit`` may block and are called on its executor.
"""

from __future__ import annotations

import os
from typing import Protocol

from undertow.core.types import AttemptNumber


class WorkerLauncher(Protocol):
    """Starts the workers of one attempt (implemented in :mod:`undertow.deploy`)."""

    def launch(
        self, num_workers: int, master: tuple[str, int], secret: bytes, attempt: AttemptNumber,
        config: dict[str, str],
    ) -> None: ...  # fmt: skip

    def wait(self, timeout: float) -> bool:
        """Wait for all workers to exit; True if they did."""

    def kill(self) -> None: ...

    def describe_exit(self, worker_index: int) -> str:
        """How a worker ended ("exit code 1", "still running"), for error messages. May wait
        briefly for the worker to be reaped: call it off the event loop."""

    def exited(self) -> list[int]:
        """Workers of the current attempt that have already ended (does not wait)."""


def default_num_workers(configured: int, slots: int) -> int:
    """``configured`` (``undertow.workers``) if set (> 0), else one worker per slot up to the
    number of CPUs."""
    return configured if configured > 0 else max(1, min(slots, os.cpu_count() or 1))
