"""Job, worker, operator and subtask in every log line a worker writes.

A worker's log lines end up in a Spark executor's log (or a local worker's stderr), mixed with
other jobs' and other subtasks' lines; each line therefore says where it comes from:
``2026-11-22 14:03:07,123 WARNING [job 3f2a9c1e worker 1 Map (2/4)] undertow...: message``.

The context lives in a :class:`~contextvars.ContextVar`. asyncio copies the current context
into every task when the task is created, so the worker sets the job and worker once, and each
subtask's coroutine adds its operator and subtask; every line logged while that coroutine runs
(by the runtime, operators or user functions using :mod:`logging`) carries them. Threads of the
worker's I/O pool do not inherit it: their lines show the job and worker only.

:func:`worker_log_handler` installs a handler with that format on the root logger for the
lifetime of a worker and removes it afterwards (Spark reuses Python worker processes for later
tasks, which must not inherit the handler).
"""

from __future__ import annotations

import contextlib
import logging
import sys
from collections.abc import Iterator
from contextvars import ContextVar
from typing import TextIO

#: The format of worker log lines; ``%(undertow)s`` is the context.
WORKER_LOG_FORMAT = "%(asctime)s %(levelname)s [%(undertow)s] %(name)s: %(message)s"

_context: ContextVar[str] = ContextVar("undertow_log_context", default="")


def set_log_context(text: str) -> None:
    """Replace the context of the current thread or asyncio task (and of tasks it creates)."""
    _context.set(text)


def add_log_context(text: str) -> None:
    """Append ``text`` to the current context."""
    current = _context.get()
    _context.set(f"{current} {text}" if current else text)


def log_context() -> str:
    return _context.get()


class ContextFilter(logging.Filter):
    """Puts the current context into ``record.undertow`` (``-`` when there is none)."""

    def filter(self, record: logging.LogRecord) -> bool:
        record.undertow = _context.get() or "-"
        return True


@contextlib.contextmanager
def worker_log_handler(
    stream: TextIO | None = None, level: int = logging.WARNING
) -> Iterator[logging.Handler]:
    """Log to ``stream`` (stderr) in :data:`WORKER_LOG_FORMAT` while the block runs."""
    handler = logging.StreamHandler(stream or sys.stderr)
    handler.setFormatter(logging.Formatter(WORKER_LOG_FORMAT))
    handler.addFilter(ContextFilter())
    handler.setLevel(level)
    root = logging.getLogger()
    old_level = root.level
    root.addHandler(handler)
    if root.level == logging.NOTSET or root.level > level:
        root.setLevel(level)
    try:
        yield handler
    finally:
        root.removeHandler(handler)
        root.setLevel(old_level)
        handler.close()
