"""``benchmarks/long_run.py --malloc-stats``: glibc's heap in each worker, sampled by itself.

On ``PYTHONPATH`` (with ``UNDERTOW_MALLOC_PROBE`` naming a directory), Python imports this at
start in every process; in the children the ``local`` target's fork server forks (the
workers), a daemon thread appends one line every ``UNDERTOW_MALLOC_PROBE_S`` seconds to
``<dir>/<pid>.txt``: wall time, then glibc's ``mallinfo2`` in bytes: the main heap's size
(``arena``), what is allocated in it (``uordblks``) and what is free in it (``fordblks``). In
use flat while the heap grows is fragmentation, not a leak. Other processes are left alone.
"""

from __future__ import annotations

import ctypes
import os
import sys
import threading
import time

_FIELDS = "arena ordblks smblks hblks hblkhd usmblks fsmblks uordblks fordblks keepcost"


class _MallInfo2(ctypes.Structure):
    _fields_ = [(name, ctypes.c_size_t) for name in _FIELDS.split()]


def _sample_forever(path: str, every_s: float) -> None:
    libc = ctypes.CDLL("libc.so.6")
    libc.mallinfo2.restype = _MallInfo2
    while True:
        info = libc.mallinfo2()
        with open(path, "a") as out:
            out.write(f"{time.time():.3f} {info.arena} {info.uordblks} {info.fordblks}\n")
        time.sleep(every_s)


def _in_forked_worker() -> None:
    if "fork_server" not in " ".join(sys.argv):  # only the fork server's children
        return
    path = os.path.join(os.environ["UNDERTOW_MALLOC_PROBE"], f"{os.getpid()}.txt")
    every_s = float(os.environ.get("UNDERTOW_MALLOC_PROBE_S", "5"))
    threading.Thread(target=_sample_forever, args=(path, every_s), daemon=True).start()


if os.environ.get("UNDERTOW_MALLOC_PROBE"):
    os.register_at_fork(after_in_child=_in_forked_worker)
