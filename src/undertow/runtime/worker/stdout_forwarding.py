"""A worker's ``print()``: user functions' lines reach the driver's stdout, in order with the
print sink's lines and never cut.

A worker process's own stdout is not the user's (a Spark worker's goes to the executor's log, a
local one's is block-buffered into the driver's, cut mid-line); PyFlink prints user functions'
output on the client's stdout, where the print sink's records are. :class:`LineForwarder` makes
whole lines of what one thread writes and hands them to ``emit``, which sends them to the
JobMaster as the print sink's lines go. A worker process replaces ``sys.stdout``
(:func:`forward_stdout`); worker threads share the driver's, so each routes only its own
thread's writes (:func:`forward_thread_stdout`, through :class:`ThreadRoutedStdout`).

Threading: ``write`` may be called from any thread; ``emit`` is called on the writing thread
with whole lines and must be thread-safe. Lifecycle: either context manager installs its
forwarding for the duration of a worker and emits unterminated text as lines at its end.
"""

from __future__ import annotations

import contextlib
import io
import sys
import threading
from collections.abc import Callable, Iterator
from typing import TextIO

__all__ = ["LineForwarder", "ThreadRoutedStdout", "forward_stdout", "forward_thread_stdout"]


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


class ThreadRoutedStdout(io.TextIOBase):
    """``sys.stdout`` of a process with worker threads: what a routed thread writes goes to its
    :class:`LineForwarder`, what any other thread writes (the driver's script, the JobMaster
    writing the lines workers sent) to the stream it replaced (``fallback``).

    Threading: ``route``/``unroute`` and ``write`` may be called from any thread."""

    def __init__(self, fallback: TextIO) -> None:
        super().__init__()
        self.fallback = fallback
        self._routes: dict[int, LineForwarder] = {}

    def writable(self) -> bool:
        return True

    @property
    def encoding(self) -> str:  # type: ignore[override]
        return self.fallback.encoding

    def isatty(self) -> bool:
        return self.fallback.isatty()

    def fileno(self) -> int:
        """The replaced stream's (what is written there directly bypasses the routing)."""
        return self.fallback.fileno()

    def write(self, text: str) -> int:
        forwarder = self._routes.get(threading.get_ident())
        if forwarder is None:
            return self.fallback.write(text)
        return forwarder.write(text)

    def flush(self) -> None:
        if threading.get_ident() not in self._routes:
            self.fallback.flush()

    def route(self, thread: int, forwarder: LineForwarder) -> None:
        self._routes[thread] = forwarder

    def unroute(self, thread: int) -> bool:
        """Stop routing ``thread``; whether no thread is routed any more."""
        self._routes.pop(thread, None)
        return not self._routes


_install_lock = threading.Lock()


@contextlib.contextmanager
def forward_thread_stdout(emit: Callable[[list[str]], None]) -> Iterator[LineForwarder]:
    """What this thread writes to ``sys.stdout`` goes to a :class:`LineForwarder` to ``emit``
    while the block runs; other threads' writes are untouched. The first routed thread
    installs a :class:`ThreadRoutedStdout`, the last one out puts the replaced stream back (if
    nothing replaced ``sys.stdout`` meanwhile)."""
    forwarder = LineForwarder(emit)
    thread = threading.get_ident()
    with _install_lock:
        current = sys.stdout
        router = current if isinstance(current, ThreadRoutedStdout) else ThreadRoutedStdout(current)
        sys.stdout = router
        router.route(thread, forwarder)
    try:
        yield forwarder
    finally:
        with _install_lock:
            if router.unroute(thread) and sys.stdout is router:
                sys.stdout = router.fallback
        forwarder.emit_unterminated()
