"""A worker process's ``sys.stdout``: ``print()`` in user functions reaches the driver's stdout.

A worker process's own stdout is not the user's: a Spark Python worker's goes to the executor's
stderr log, a local worker's straight into the driver's file descriptor, block-buffered and so
cut mid-line among other workers' output. PyFlink prints user functions' output on the client's
stdout, where the ``print()`` sink's records are. :class:`LineForwarder` collects what is
written into whole lines (per writing thread, so two threads never mix inside a line) and hands
them to ``emit``, which sends them to the JobMaster as the print sink's lines go: in order with
the records this worker printed, written whole by the driver.

Threading: ``write`` may be called from any thread; ``emit`` is called on the writing thread
with whole lines and must be thread-safe. Lifecycle: :func:`forward_stdout` installs the
forwarder for the duration of a worker and emits unterminated text as lines at its end.
"""

from __future__ import annotations

import contextlib
import io
import sys
import threading
from collections.abc import Callable, Iterator

__all__ = ["LineForwarder", "forward_stdout"]


class LineForwarder(io.TextIOBase):
    """A text stream that emits whole lines (without their ``\\n``)."""

    def __init__(self, emit: Callable[[list[str]], None]) -> None:
        super().__init__()
        self._emit = emit
        self._lock = threading.Lock()
        self._partial: dict[int, str] = {}  # writing thread -> its unterminated text

    def writable(self) -> bool:
        return True

    def write(self, text: str) -> int:
        if not isinstance(text, str):
            raise TypeError(f"write() argument must be str, not {type(text).__name__}")
        thread = threading.get_ident()
        with self._lock:
            *lines, rest = (self._partial.pop(thread, "") + text).split("\n")
            if rest:
                self._partial[thread] = rest
        if lines:
            self._emit(lines)
        return len(text)

    def flush(self) -> None:
        """Nothing: a line leaves when it is complete (or when the worker ends)."""

    def emit_unterminated(self) -> None:
        """Emit every thread's unterminated text, one line each."""
        with self._lock:
            rest = list(self._partial.values())
            self._partial.clear()
        if rest:
            self._emit(rest)


@contextlib.contextmanager
def forward_stdout(emit: Callable[[list[str]], None]) -> Iterator[LineForwarder]:
    """``sys.stdout`` is a :class:`LineForwarder` to ``emit`` while the block runs."""
    forwarder = LineForwarder(emit)
    previous = sys.stdout
    sys.stdout = forwarder
    try:
        yield forwarder
    finally:
        sys.stdout = previous
        forwarder.emit_unterminated()
