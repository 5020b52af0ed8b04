"""The name a process carries while it hosts a worker (``/proc/PID/comm``, what ``ps`` and
``top`` show): ``undertow-worker``, for a Spark Python worker while its barrier task runs and
for a worker forked by the ``local`` target's fork server. The testing kit finds workers to
``kill -9`` by this name."""

from __future__ import annotations

import ctypes
import ctypes.util
import sys

#: Name of a process while it hosts a worker (at most 15 bytes: the kernel's limit).
WORKER_PROCESS_NAME = b"undertow-worker"
_PR_SET_NAME = 15
_PR_GET_NAME = 16


def set_process_name(name: bytes) -> bytes | None:
    """Set this process's name (Linux ``prctl``); returns the old one, or None elsewhere."""
    if not sys.platform.startswith("linux"):
        return None
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6", use_errno=True)
        old = ctypes.create_string_buffer(16)
        libc.prctl(_PR_GET_NAME, old, 0, 0, 0)
        libc.prctl(_PR_SET_NAME, ctypes.c_char_p(name[:15]), 0, 0, 0)
        return old.value
    except OSError:
        return None
