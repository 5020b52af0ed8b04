"""The maximum sustainable throughput of a job, for benchmarks/kafka.py (issue 28).

**Definition.** Following Karimov et al. ("Benchmarking Distributed Stream Data Processing
Systems", ICDE 2018), a job sustains an offered rate when it keeps up with it over a phase:
its lag (records the load generator has sent that are not yet visible at the output) stays
bounded instead of growing for as long as the rate lasts. The *maximum sustainable
throughput* is the highest rate it sustains, measured with the load generator producing live
on the same machine. The Yahoo streaming benchmark and its successors report latency at
fractions of it. It is lower than the rate at which a job drains a backlog written before (a
"burst"): a live producer, and records that travel in small batches, cost CPU that a drained
backlog does not.

**Measurement.** The coordinator samples the lag every few milliseconds during a paced phase
at rate ``r`` (:class:`LagSample`). :func:`judge` converts it to time (``lag / r``: how far
behind the output is) and compares the median of the phase's last third with that of its
first third, after a warm-up second: a job that keeps up shows the same lag in both (its
latency, give or take the noise of a shared machine); one that does not falls further behind
at ``1 - capacity / r`` seconds per second, so its last third lies above its first by that
times the time between them (:data:`SLACK_MS` is the bound). A phase whose producer did not
send ``r`` records per second (it shares the machine) did not offer ``r``, so it did not
show that ``r`` is sustained (:data:`OFFERED_SHARE`). Nor does a phase whose lag stays level
but large (:data:`STANDING_MS`): a queue that does not drain shows a job with no capacity to
spare, running at the rate it can just take, not one that keeps up with a latency of a few
milliseconds.
:class:`Search` bisects the rate between 0 and the burst's draining rate over a few such
phases, then **confirms** the highest rate judged kept up by running it again: on a shared
machine one phase may keep up by luck (2026-11-30, a quiet machine: one run's rounds found
5,311, 12,035 and 9,152 records/s, and the paced phase at half of the last fell behind). A
rate that falls behind at its confirmation is lowered by :data:`CONFIRM_RATIO` and confirmed
again, up to :data:`CONFIRM_STEPS` times; the sustainable rate is a rate kept up twice.
After the paced phase at half of it the rate runs once more (:class:`Attempt`): a round counts
only if the job still sustained it then, so its paced phase was at half of a rate sustained
on both sides of it; otherwise the round is measured again from a lower start, at most
:data:`ATTEMPTS` times. :class:`RoundPlan` says which phase a round runs next.

Pure: no I/O, no clock; the coordinator feeds samples and verdicts. Tested in
tests/benchmarks/test_kafka_sustainable.py.
"""

from __future__ import annotations

import enum
import statistics
from collections.abc import Sequence
from dataclasses import dataclass, replace

#: A phase's first second is its warm-up: not judged (the job wakes from the drain before).
WARM_S = 1.0
#: Kept up: the last third's median lag is at most SLACK_MS above the first third's. Over the
#: ~2 s between the thirds of a 4 s phase that catches a rate 5% above what the job sustains
#: (3% in a 6 s phase); the medians leave out the short stalls of a shared machine.
SLACK_MS = 100.0


#: Kept up also needs the last third's lag to be at most this far behind (ms). A job with
#: capacity to spare drains a queue that a stall left (the paced phases of 2026-11-30 that
#: began hundreds of ms behind caught up within 2 s); one whose lag stays level hundreds of
#: ms behind is running at its capacity, and was judged kept up until 2026-11-30 (a flat
#: lag of 555 -> 583 ms at 18,823 records/s made that the round's sustainable rate). A
#: healthy round's lag is 10 to 15 ms. A job whose output waits by design (an exactly-once
#: sink's commit after the checkpoint) is allowed that wait on top (``judge``'s ``wait_ms``).
STANDING_MS = 100.0


#: Kept up also needs the load generator to have offered the rate: over the judged part of a
#: phase it sent at least this share of ``rate`` records per second. On a busy machine the
#: producer itself falls behind its schedule; its lag then measures a lower rate than the
#: one the verdict names (2026-11-30: phases "kept up" at 34,000 and 40,000 records/s whose
#: half, 20,000 records/s, queued hundreds of milliseconds at the source).
OFFERED_SHARE = 0.95


#: A confirmation that fell behind lowers the candidate to this share of it (a ratio step: the
#: same relative step at any rate, where a bisection's steps are a share of the burst's rate).
CONFIRM_RATIO = 0.75
#: Confirmation phases at most per search (each one that falls behind steps down once).
CONFIRM_STEPS = 2


@dataclass(frozen=True, slots=True)
class LagSample:
    """Seconds since the paced phase began, records sent but not yet visible then, and the
    producer's count of records sent (only differences count; None: the offered rate is not
    judged)."""

    at_s: float
    lag: int
    sent: int | None = None


@dataclass(frozen=True, slots=True)
class Verdict:
    """Whether a paced phase at ``rate`` kept up, with the lag (as ms behind) of its first and
    last thirds after the warm-up, which the decision compared."""

    rate: float
    kept_up: bool
    early_ms: float
    late_ms: float
    #: records/s the load generator sent over the judged part (None: not known)
    offered: float | None = None
    #: the most the last third may be behind (ms) before its lag is a standing queue
    standing_ms: float = STANDING_MS

    @property
    def standing(self) -> bool:
        """The last third's lag was more than ``standing_ms`` behind: a standing queue."""
        return self.late_ms > self.standing_ms

    @property
    def under_offered(self) -> bool:
        """The producer sent less than :data:`OFFERED_SHARE` of the rate."""
        return self.offered is not None and self.offered < OFFERED_SHARE * self.rate

    def describe(self) -> str:
        word = "kept up" if self.kept_up else "fell behind"
        text = f"{self.rate:,.0f}/s {word} (lag {self.early_ms:,.0f} -> {self.late_ms:,.0f} ms"
        if self.under_offered:
            text += f"; the producer sent only {self.offered:,.0f}/s"
        if self.standing:
            text += f"; a standing queue, more than {self.standing_ms:,.0f} ms behind"
        return text + ")"


def judge(samples: Sequence[LagSample], rate: float, wait_ms: float = 0.0) -> Verdict:
    """Did the job keep up with ``rate`` over the phase ``samples`` were taken in? (module
    doc). ``wait_ms``: how long the job's output waits by design before the measuring
    consumer may see it (an exactly-once sink: up to a checkpoint interval), allowed on top of
    :data:`STANDING_MS`. Fewer than 3 samples after the warm-up cannot show a trend:
    ValueError."""
    if rate <= 0:
        raise ValueError(f"a paced phase needs a positive rate, not {rate!r}")
    judged = sorted((s for s in samples if s.at_s >= WARM_S), key=lambda s: s.at_s)
    if len(judged) < 3:
        raise ValueError(
            f"{len(judged)} lag samples after the {WARM_S:g} s warm-up of a phase at "
            f"{rate:,.0f} records/s: too few to judge whether the job kept up"
        )
    start, end = judged[0].at_s, judged[-1].at_s
    third = (end - start) / 3
    first = [s.lag for s in judged if s.at_s <= start + third] or [judged[0].lag]
    last = [s.lag for s in judged if s.at_s >= end - third] or [judged[-1].lag]
    early = 1000.0 * statistics.median(first) / rate
    late = 1000.0 * statistics.median(last) / rate
    offered = None
    head, tail = judged[0].sent, judged[-1].sent
    if head is not None and tail is not None and end > start:
        offered = (tail - head) / (end - start)
    bound = STANDING_MS + wait_ms
    verdict = Verdict(rate, late - early <= SLACK_MS, early, late, offered, bound)
    if verdict.under_offered or verdict.standing:
        return Verdict(rate, False, early, late, offered, bound)
    return verdict


@dataclass(frozen=True, slots=True)
class Search:
    """A bisection of the sustainable rate and its confirmation (module doc). ``low`` is the
    highest rate kept up so far (0: none yet), ``high`` the lowest that fell behind (at the
    start, the burst's draining rate), ``steps`` the bisection phases still to run,
    ``confirms`` the confirmation phases still allowed, ``confirmed`` whether ``low`` kept up
    a second time. Immutable: :meth:`after` gives the next."""

    low: float
    high: float
    steps: int
    confirms: int = CONFIRM_STEPS
    confirmed: bool = False

    @classmethod
    def start(cls, burst_rate: float, steps: int, confirms: int = CONFIRM_STEPS) -> Search:
        """A search from ``burst_rate`` with ``steps`` bisection phases and up to ``confirms``
        confirmation phases (0: none, the highest rate kept up once is the result)."""
        if burst_rate <= 0 or steps < 1:
            raise ValueError(
                f"a search needs a positive burst rate and steps, not {burst_rate!r}, {steps!r}"
            )
        # no confirmation asked for: the bisection's result stands as it is
        return cls(0.0, burst_rate, steps, confirms, confirmed=confirms <= 0)

    def next_rate(self) -> float | None:
        """The rate of the next phase: the middle of the bracket while bisecting, then the
        candidate ``low`` again until it is confirmed; None when done."""
        if self.steps > 0:
            return (self.low + self.high) / 2
        if self.confirmed or self.low <= 0 or self.confirms <= 0:
            return None
        return self.low

    def after(self, verdict: Verdict) -> Search:
        if self.steps > 0:
            low, high = self.low, self.high
            if verdict.kept_up:
                low = max(low, verdict.rate)
            else:
                high = min(high, verdict.rate)
            return Search(low, high, self.steps - 1, self.confirms, self.confirmed)
        if verdict.kept_up:
            return Search(self.low, self.high, 0, self.confirms - 1, confirmed=True)
        # the candidate did not hold: it is now the lowest rate that fell behind
        return Search(self.low * CONFIRM_RATIO, self.low, 0, self.confirms - 1)

    @property
    def sustainable(self) -> float | None:
        """The highest rate kept up twice (None if none was: the bisection found none below
        ``high`` / 2**steps, or no candidate held at its confirmation)."""
        return self.low if self.low > 0 and self.confirmed else None


#: Attempts at one round at most (kafka_harness): an attempt whose search found no rate kept
#: up twice, or whose rate fell behind when run again after the paced phase, is followed by
#: another whose search starts from a lower bound (:meth:`Attempt.retry_bound`).
ATTEMPTS = 2


@dataclass(frozen=True, slots=True)
class Attempt:
    """One attempt at a round: the search that ran (done: ``next_rate()`` is None) and the
    **closing** phase, the sustainable rate run once more after the paced phase at half of it
    (None: not run, the search found no rate).

    The paced phase is at half of saturation only if the job sustained that saturation while
    it ran. The search's confirmation shows it just before; the closing phase shows it just
    after. An attempt is **bracketed** when the rate was kept up in both: three phases in all,
    two before the paced one and one after. On a shared machine whose capacity falls within a
    round (2026-11-30: one rate kept up, then every lower rate tried fell behind by seconds,
    at load 100 falling to 9), an unbracketed attempt measured its paced phase at more than
    half of what the job sustained then; its figures are printed but another attempt replaces
    it. Immutable."""

    search: Search
    closing: Verdict | None

    def __post_init__(self) -> None:
        if self.search.next_rate() is not None:
            raise ValueError("an attempt is judged after its search is done")
        found = self.search.sustainable
        if self.closing is not None and self.closing.rate != found:
            raise ValueError(
                f"the closing phase runs the sustainable rate {found!r} again, "
                f"not {self.closing.rate!r}"
            )

    @property
    def bracketed(self) -> bool:
        """The sustainable rate was kept up before the paced phase (twice) and after it."""
        return self.closing is not None and self.closing.kept_up

    def retry_bound(self) -> float:
        """The upper bound of the next attempt's search: the rate the closing phase found the
        job no longer sustained, else the lowest rate the search saw fall behind."""
        if self.closing is not None and not self.closing.kept_up:
            return self.closing.rate
        return self.search.high

    def problem(self) -> str | None:
        """Why this attempt does not count (None: it does)."""
        if self.search.sustainable is None:
            return "no rate kept up twice (a search phase and its confirmation)"
        if self.closing is None:
            return "its sustainable rate was not run again after the paced phase"
        if not self.closing.kept_up:
            return (
                f"its sustainable rate fell behind after the paced phase "
                f"({self.closing.describe()}): the job's capacity fell during the round"
            )
        return None


class PhaseKind(enum.Enum):
    """A phase of a round's attempt (:class:`RoundPlan`)."""

    SEARCH = "search"
    PACED = "paced"
    CLOSING = "closing"


@dataclass(frozen=True, slots=True)
class Phase:
    """What the harness runs next: a phase of ``kind`` at ``rate`` records/s."""

    kind: PhaseKind
    rate: float


@dataclass(frozen=True, slots=True)
class RoundPlan:
    """One attempt at a round, as the harness runs it: the search from ``bound`` (none with a
    ``fixed`` rate), a paced phase at half of the rate found (at half of the lowest rate that
    fell behind if none was found; at ``fixed`` if given), then the rate found once more (the
    closing phase). The harness asks :meth:`next_phase`, runs it, and feeds its verdict to
    :meth:`after` until there is none; then the attempt counts or :meth:`retry` gives the
    next one, from a lower bound (:meth:`Attempt.retry_bound`), up to :data:`ATTEMPTS`.
    Pure and immutable: no clock, no I/O."""

    steps: int
    fixed: float | None
    #: this attempt at its round (1-based)
    number: int
    search: Search | None
    #: the paced phase's verdict once it ran
    paced: Verdict | None = None
    #: the closing phase's verdict once it ran
    closing: Verdict | None = None

    @classmethod
    def start(cls, bound: float, steps: int, fixed: float | None = None,
              number: int = 1) -> RoundPlan:  # fmt: skip
        """The attempt ``number`` searching below ``bound`` (or paced at ``fixed``)."""
        search = None if fixed is not None else Search.start(bound, steps)
        return cls(steps, fixed, number, search)

    @property
    def paced_rate(self) -> float:
        """The paced phase's rate (the search must be done)."""
        if self.fixed is not None:
            return self.fixed
        assert self.search is not None
        found = self.search.sustainable
        return 0.5 * (self.search.high if found is None else found)

    @property
    def sustainable(self) -> float | None:
        return None if self.search is None else self.search.sustainable

    def next_phase(self) -> Phase | None:
        """The next phase to run; None when this attempt is over."""
        if self.search is not None and (rate := self.search.next_rate()) is not None:
            return Phase(PhaseKind.SEARCH, rate)
        if self.paced is None:
            return Phase(PhaseKind.PACED, self.paced_rate)
        found = self.sustainable
        if found is not None and self.closing is None:
            return Phase(PhaseKind.CLOSING, found)
        return None

    def after(self, verdict: Verdict) -> RoundPlan:
        """This attempt once the phase :meth:`next_phase` named gave ``verdict``."""
        phase = self.next_phase()
        if phase is None:
            raise ValueError(f"attempt {self.number} is over: no phase to judge")
        if phase.kind is PhaseKind.SEARCH:
            assert self.search is not None
            return replace(self, search=self.search.after(verdict))
        if phase.kind is PhaseKind.PACED:
            return replace(self, paced=verdict)
        return replace(self, closing=verdict)

    def problem(self) -> str | None:
        """Why this (finished) attempt does not count; None: it does (a fixed rate always)."""
        if self.search is None:
            return None
        return Attempt(self.search, self.closing).problem()

    @property
    def last(self) -> bool:
        """Whether the round ends with this attempt: it counts, or it was the last allowed."""
        return self.problem() is None or self.number >= ATTEMPTS

    def retry(self) -> RoundPlan:
        """The next attempt at the round, searching below what this one saw fall behind."""
        if self.last or self.search is None:
            raise ValueError(f"attempt {self.number} ends its round: no retry")
        bound = Attempt(self.search, self.closing).retry_bound()
        return RoundPlan.start(bound, self.steps, None, self.number + 1)
