"""The periodic trigger: the interval timer, the queue of trigger requests and the wake-up.

Every ``execution.checkpointing.interval`` a periodic request is queued and the pure
:func:`~.trigger_decider.decide` is asked what to do now (min pause, max concurrent): trigger,
or wake up at a given time and ask again. What the coordinator shell contributes is a
:class:`TriggerShell`: whether periodic checkpoints are on, the facts of the moment (or none
while a savepoint waits or runs), and the trigger itself.

Threading: the JobMaster's loop (timers run there, through the :class:`CoordinatorClock`).
"""

from __future__ import annotations

import itertools
import random
from typing import Protocol

from undertow.runtime.checkpoint.clock import CoordinatorClock, Timer
from undertow.runtime.checkpoint.settings import CheckpointSettings
from undertow.runtime.checkpoint.trigger_decider import (
    CheckpointTriggerRequest,
    TriggerNow,
    TriggerState,
    WaitUntil,
    decide,
    enqueue,
    remove,
)


class TriggerShell(Protocol):
    """What the periodic trigger asks of the coordinator shell (loop thread only)."""

    @property
    def periodic(self) -> bool:
        """Periodic checkpoints are on (an attempt runs, no stop with savepoint)."""

    def trigger_facts(self) -> tuple[int, int | None] | None:
        """(pending checkpoints, last completion in epoch ms or None), or None while no
        periodic checkpoint may start (a savepoint waits or runs)."""

    def trigger_checkpoint(self, now_ms: int) -> object:
        """Start a periodic checkpoint now."""


class PeriodicTrigger:
    """Queues a periodic request every interval and triggers when the decider says so."""

    def __init__(
        self, clock: CoordinatorClock, settings: CheckpointSettings, shell: TriggerShell
    ) -> None:
        self.clock = clock
        self.interval_ms = settings.interval_ms
        self.min_pause_ms = settings.min_pause_ms
        self.max_concurrent = settings.max_concurrent
        self.shell = shell
        self.queue: tuple[CheckpointTriggerRequest, ...] = ()
        self._request_ids = itertools.count()
        self._timer: Timer | None = None
        self._wake: Timer | None = None

    def start(self) -> None:
        """The first period ends after a random delay (between the min pause, if shorter,
        and the interval), so that jobs started together do not checkpoint together."""
        low = min(self.min_pause_ms, self.interval_ms)
        self._schedule(random.uniform(low, self.interval_ms) / 1000.0)

    def stop(self) -> None:
        """No more periodic requests: the queue is dropped, the timers cancelled."""
        self.queue = ()
        for handle in (self._timer, self._wake):
            if handle is not None:
                handle.cancel()
        self._timer = self._wake = None

    def _schedule(self, delay_s: float) -> None:
        if self.shell.periodic:
            self._timer = self.clock.call_later(delay_s, self._on_period)

    def _on_period(self) -> None:
        self._timer = None
        if not self.shell.periodic:
            return
        request = CheckpointTriggerRequest.periodic(next(self._request_ids), self.clock.now_ms())
        self.queue = enqueue(self.queue, request).queue
        self.decide()
        self._schedule(self.interval_ms / 1000.0)

    def request_now(self) -> None:
        """Queue a checkpoint that is not periodic (no minimum pause; the concurrency limit
        holds), e.g. the final one once every task reached the end of its data, and decide."""
        if not self.shell.periodic:
            return
        request = CheckpointTriggerRequest.manual(next(self._request_ids), self.clock.now_ms())
        self.queue = enqueue(self.queue, request).queue
        self.decide()

    def decide(self) -> None:
        """Ask the trigger decider what to do now, and do it (after every period, completion
        and abort)."""
        if self._wake is not None:
            self._wake.cancel()
            self._wake = None
        facts = self.shell.trigger_facts()
        if facts is None:
            return
        num_pending, last_completion_ms = facts
        now = self.clock.now_ms()
        state = TriggerState(
            min_pause_ms=self.min_pause_ms,
            max_concurrent=self.max_concurrent,
            num_pending=num_pending,
            last_completion_ms=last_completion_ms,
            is_triggering=False,
            queue=self.queue,
        )
        decision = decide(now, state)
        if isinstance(decision, TriggerNow):
            self.queue = remove(self.queue, decision.request)
            self.shell.trigger_checkpoint(now)
        elif isinstance(decision, WaitUntil):
            delay = max(0, decision.time_ms - now) / 1000.0
            self._wake = self.clock.call_later(delay, self.decide)
