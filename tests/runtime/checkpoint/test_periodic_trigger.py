"""The periodic trigger on the testing kit's manual clock with a recording shell: a request
every interval, the min pause honoured through a wake-up, nothing while the shell says no,
and nothing at all once stopped."""

from __future__ import annotations

from dataclasses import dataclass, field

from undertow.common import Configuration
from undertow.runtime.checkpoint.periodic_trigger import PeriodicTrigger
from undertow.runtime.checkpoint.settings import CheckpointSettings
from undertow.testing.coordinator import ManualClock


@dataclass
class Shell:
    """A coordinator as the trigger sees it: its checkpoints complete at once, at the time
    they were triggered (so the min pause counts from there)."""

    periodic: bool = True
    blocked: bool = False
    pending: int = 0
    last_completion_ms: int | None = None
    triggered: list[int] = field(default_factory=list)

    def trigger_facts(self) -> tuple[int, int | None] | None:
        return None if self.blocked else (self.pending, self.last_completion_ms)

    def trigger_checkpoint(self, now_ms: int) -> object:
        self.triggered.append(now_ms)
        self.last_completion_ms = now_ms
        return len(self.triggered)


def trigger(options: dict[str, str]) -> tuple[PeriodicTrigger, Shell, ManualClock]:
    clock, shell = ManualClock(start_ms=0), Shell()
    settings = CheckpointSettings.of(Configuration(options))
    return PeriodicTrigger(clock, settings, shell), shell, clock


def test_one_checkpoint_per_interval_after_a_random_first_delay() -> None:
    """The first trigger comes a random delay in [0, interval] after the start, as Flink's;
    the manual clock counts whole milliseconds, so a draw under 0.5 ms fires at 0 and the
    second trigger at 100 is within the first interval too (1 run in 200 drew one)."""
    periodic, shell, clock = trigger({"execution.checkpointing.interval": "100 ms"})
    periodic.start()
    clock.advance(99)
    assert len(shell.triggered) <= 1 and all(0 <= t <= 99 for t in shell.triggered)
    clock.advance(301)
    first = shell.triggered[0]
    assert 0 <= first <= 100
    assert shell.triggered == [first + 100 * i for i in range(len(shell.triggered))]
    assert len(shell.triggered) == 4 + (first == 0)


def test_the_min_pause_delays_a_request_until_the_wake_up() -> None:
    periodic, shell, clock = trigger({"execution.checkpointing.interval": "100 ms",
                                      "execution.checkpointing.min-pause": "250 ms"})  # fmt: skip
    periodic.start()
    clock.advance(100)
    first = shell.triggered[0]
    clock.advance(400)
    assert shell.triggered[1] == first + 250  # woken up at the end of the pause
    assert all(b - a >= 250 for a, b in zip(shell.triggered, shell.triggered[1:]))
    assert len(periodic.queue) == 1  # the next request waits out its pause


def test_nothing_triggers_while_the_shell_refuses_or_after_stop() -> None:
    periodic, shell, clock = trigger({"execution.checkpointing.interval": "100 ms"})
    shell.blocked = True  # e.g. a savepoint waits: requests queue up
    periodic.start()
    clock.advance(250)
    assert shell.triggered == [] and len(periodic.queue) == 1  # periodic requests coalesce
    shell.blocked = False
    periodic.decide()  # the savepoint's completion decides again
    assert shell.triggered == [clock.now_ms()]
    periodic.stop()
    clock.advance(1_000)
    assert len(shell.triggered) == 1 and periodic.queue == () and clock.pending_timers == 0


def test_the_period_ends_when_periodic_checkpoints_are_off() -> None:
    periodic, shell, clock = trigger({"execution.checkpointing.interval": "100 ms"})
    periodic.start()
    shell.periodic = False  # a stop with savepoint
    clock.advance(1_000)
    assert shell.triggered == [] and clock.pending_timers == 0
