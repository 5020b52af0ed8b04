"""Heartbeats between workers and the JobMaster (Flink's ``heartbeat.interval`` / ``.timeout``).

A dead worker process is noticed at once: its control connection closes. A *hung* worker is not:
a stopped process (SIGSTOP, a swapped-out VM), a host that vanished without a TCP reset, or a
loop blocked for good keeps its connections open and says nothing. So every worker sends a
:class:`~undertow.runtime.control.messages.Heartbeat` every ``heartbeat.interval``, any message
from it counts as a sign of life, and the JobMaster fails the attempt when a registered worker
has been silent for longer than ``heartbeat.timeout`` (then the restart strategy decides).

:class:`HeartbeatMonitor` is the pure part: facts (who spoke when) and a clock value in, the
overdue workers out. Threading: used on the JobMaster's loop only.

Heartbeats are sent from the worker's event loop, so a user function that blocks that loop for
longer than the timeout (50 s by default) is reported as a hung worker, which it is.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class Overdue:
    """A worker silent for ``silent_ms`` (> the timeout)."""

    worker: int
    silent_ms: int


class HeartbeatMonitor:
    """Last sign of life per worker of one attempt. Invariant: a worker is overdue at ``now``
    iff it was ever seen and ``now - last_seen > timeout_ms``."""

    def __init__(self, timeout_ms: int) -> None:
        if timeout_ms <= 0:
            raise ValueError(f"heartbeat timeout must be positive, got {timeout_ms} ms")
        self.timeout_ms = timeout_ms
        self._last_seen: dict[int, int] = {}

    def seen(self, worker: int, now_ms: int) -> None:
        """``worker`` sent something at ``now_ms`` (clock values never go back per worker)."""
        self._last_seen[worker] = max(now_ms, self._last_seen.get(worker, now_ms))

    def last_seen(self, worker: int) -> int | None:
        """When ``worker`` last sent something (epoch ms); None if never."""
        return self._last_seen.get(worker)

    def forget(self, worker: int) -> None:
        """``worker`` left on purpose (it finished); stop watching it."""
        self._last_seen.pop(worker, None)

    def overdue(self, now_ms: int) -> list[Overdue]:
        """Workers silent for longer than the timeout, longest silence first."""
        late = [
            Overdue(worker, now_ms - seen)
            for worker, seen in self._last_seen.items()
            if now_ms - seen > self.timeout_ms
        ]
        return sorted(late, key=lambda o: (-o.silent_ms, o.worker))
