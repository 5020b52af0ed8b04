"""A collect sink's credit on its worker: the bytes it may still send the driver.

The driver grants credit (``GrantCollectCredit``, decided by
:class:`~undertow.runtime.master.collect_window.CollectWindow`); the worker's control router
adds it to the sink's :class:`CollectCredit`, and the sink spends it on each batch it sends.
While the credit is not above 0 the gate is unavailable: the task's mailbox loop counts it
with its outputs (an :class:`AvailabilityProvider`), so the task takes no input and is
backpressured, while its mails, priority events (unaligned barriers) and source checkpoint
triggers go on. The sink never blocks its thread. A sink may overrun its credit by the batch
it is sending (credit below 0); the driver's next grant pays for it.

Threading: the worker's loop thread (the router's grants and the tasks run there).
Lifecycle: one :class:`CollectCredits` per worker (one attempt); a sink's gate is made by
whichever comes first, the sink's set-up or the driver's first grant.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Protocol, runtime_checkable


class AvailabilityProvider(Protocol):
    """Something a task emits to that may be unable to take more (a result partition without
    buffers, a collect sink without credit). Loop thread only."""

    def is_available(self) -> bool: ...

    def notify_when_available(self, listener: Callable[[], None]) -> None:
        """Call ``listener`` once, the next time this may have become available."""
        ...


@runtime_checkable
class GatedOperator(Protocol):
    """An operator whose output may be unavailable apart from its task's partitions: the task
    adds :meth:`output_gate` to the outputs its mailbox loop waits for (after ``setup``)."""

    def output_gate(self) -> AvailabilityProvider: ...


class CollectCredit:
    """One collect sink's credit (bytes; see the module docstring). Implements
    :class:`AvailabilityProvider`: available while the credit is above 0."""

    def __init__(self, sink_id: str) -> None:
        self.sink_id = sink_id
        self.credit = 0
        #: Bytes granted and spent in all (statistics, tests).
        self.granted = 0
        self.spent = 0
        self._listener: Callable[[], None] | None = None

    def is_available(self) -> bool:
        return self.credit > 0

    def notify_when_available(self, listener: Callable[[], None]) -> None:
        self._listener = listener

    def grant(self, credit: int) -> None:
        """The driver granted ``credit`` more bytes; wakes a waiting task."""
        self.credit += credit
        self.granted += credit
        if self.credit > 0:
            listener, self._listener = self._listener, None
            if listener is not None:
                listener()

    def spend(self, size: int) -> None:
        """The sink sent a batch of ``size`` bytes (the credit may go below 0 once)."""
        self.credit -= size
        self.spent += size


class CollectCredits:
    """The credit of every collect sink of a worker, by sink id."""

    def __init__(self) -> None:
        self._gates: dict[str, CollectCredit] = {}

    def gate(self, sink_id: str) -> CollectCredit:
        gate = self._gates.get(sink_id)
        if gate is None:
            gate = self._gates[sink_id] = CollectCredit(sink_id)
        return gate

    def grant(self, sink_id: str, credit: int) -> None:
        self.gate(sink_id).grant(credit)
