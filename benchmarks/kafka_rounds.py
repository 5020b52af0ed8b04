"""The figures of section 2-4 of benchmarks/kafka.py (end-to-end latency and saturation):
one engine's job run as rounds, a row of medians over them, and the table that prints both.

A job run (benchmarks/kafka_harness.py) is ``rounds`` times: a burst (its draining rate), a
search of the maximum sustainable throughput (benchmarks/kafka_sustainable.py) and a paced
phase at half of it. :class:`Round` holds one round's figures, :func:`job_figures` makes the
row: the medians over the rounds, the latency that of the round with the median p50 (a whole
latency record, not a mix of rounds). :func:`print_jobs` prints rows with their rounds and
search phases under them, :func:`latency_target` a row's target line. Pure apart from
printing; tested in tests/benchmarks/test_kafka_rounds.py.
"""

from __future__ import annotations

import contextlib
import os
import statistics
from collections.abc import Iterator
from dataclasses import dataclass

import kafka_hops
import kafka_load as load
import kafka_sustainable as sustain


def loadavg() -> str:
    """The machine's load averages (1, 5, 15 minutes), as printed beside every figure."""
    return " ".join(f"{v:.2f}" for v in os.getloadavg())


@contextlib.contextmanager
def section(title: str) -> Iterator[None]:
    """Prints a section's title with the load average, and the load average at its end."""
    print(f"\n== {title} (load average {loadavg()})", flush=True)
    try:
        yield
    finally:
        print(f"   (load average at the end: {loadavg()})", flush=True)


@dataclass(frozen=True, slots=True)
class Probe:
    """One paced phase of a sustainable-rate search: its verdict and its records' latency."""

    verdict: sustain.Verdict
    latency: load.Latency | None


@dataclass(frozen=True, slots=True)
class Round:
    """One burst, the search of the sustainable rate after it (when the run searches), and the
    paced phase whose latency the row reports, within one job run."""

    #: records/s through the job over the burst (None if part of it never became visible)
    saturation: float | None
    #: the producer's own rate over the burst
    producer_rate: float | None
    #: the paced phase's rate: half of this round's sustainable rate (or the rate given)
    rate: float
    latency: load.Latency | None
    #: p50 of broker append -> seen by the measuring consumer over the paced phase (ms)
    consumer_ms: float | None
    #: the machine's load average when the paced phase began
    load: str
    #: CPU microseconds per record over the burst and over the paced phase, per process
    #: group (job, broker, harness: the benchmark's producer and measuring consumer)
    cpu_burst: dict[str, float] | None = None
    cpu_paced: dict[str, float] | None = None
    #: the highest rate a search phase kept up with (None: none did, or no search)
    sustainable: float | None = None
    #: the search's phases in order; the first is at half of the burst's rate
    probes: tuple[Probe, ...] = ()
    #: where the paced phase's latency went, hop by hop (an instrumented job only, --hops)
    hops: kafka_hops.HopFigures | None = None
    #: the paced phase judged as a search phase is: whether the job kept up with it
    paced_verdict: sustain.Verdict | None = None
    #: the paced phase's hops over its course, by send time (an instrumented job only)
    timeline: tuple[kafka_hops.TimelineBin, ...] = ()
    #: the round (1-based) and the attempt at it (kafka_sustainable.Attempt)
    number: int = 1
    attempt: int = 1
    #: the last attempt at its round: the one the row's medians take (an earlier attempt was
    #: replaced by a later one and is only printed)
    last: bool = True
    #: the sustainable rate run once more after the paced phase (None: not run)
    closing: sustain.Verdict | None = None
    #: why this attempt does not count (None: it does)
    problem: str | None = None

    @property
    def half_burst(self) -> load.Latency | None:
        """The latency at half of the burst's draining rate (the search's first phase): the
        figure the target was judged by before 2026-11-30's second session."""
        return self.probes[0].latency if self.probes else None


@dataclass(frozen=True, slots=True)
class JobFigures:
    """One engine's job run: its rounds, and the medians the tables and targets use (the
    latency is that of the round with the median p50)."""

    name: str
    saturation: float | None
    producer_rate: float | None
    rate: float | None
    latency: load.Latency | None
    consumer_ms: float | None
    overcounts: int
    note: str
    rounds: tuple[Round, ...] = ()
    #: the median of the rounds' sustainable rates (None without a search)
    sustainable: float | None = None
    #: the median of the rounds' p50 at half of the burst's draining rate
    half_burst_p50: float | None = None


def _median(values: list[float | None]) -> float | None:
    known = [v for v in values if v is not None]
    return statistics.median(known) if known else None


def job_figures(name: str, attempts: list[Round], overcounts: int, note: str) -> JobFigures:
    """The medians over the rounds (module doc): of each round its last attempt only (an
    earlier one was replaced, kafka_sustainable.Attempt); the latency row is the median
    round's. ``rounds`` keeps every attempt, for printing."""
    rounds = [r for r in attempts if r.last]
    measured = sorted((r for r in rounds if r.latency is not None and r.latency.measured),
                      key=lambda r: r.latency.p50_ms)  # type: ignore[union-attr]  # fmt: skip
    middle = measured[(len(measured) - 1) // 2] if measured else None
    half_burst = [r.half_burst.p50_ms for r in rounds
                  if r.half_burst is not None and r.half_burst.measured]  # fmt: skip
    return JobFigures(
        name,
        _median([r.saturation for r in rounds]),
        _median([r.producer_rate for r in rounds]),
        _median([r.rate for r in rounds]),
        None if middle is None else middle.latency,
        None if middle is None else middle.consumer_ms,
        overcounts,
        note,
        tuple(attempts),
        _median([r.sustainable for r in rounds]),
        _median(list(half_burst)),
    )


def target(name: str, figure: str, goal: str, met: bool | None) -> str:
    verdict = "not measured" if met is None else ("met" if met else "missed")
    return f"target {name}: {figure} (goal {goal}): {verdict}"


def latency_target(row: JobFigures, goal: str, limit: float, rate: float | None = None) -> str:
    """The target line of ``row``'s p50. A row that searched says at which rate, which
    saturation that rate is half of, and beside it the burst's draining rate and the p50 at
    half of it (the figure judged before the sustainable rate was measured); a row paced at
    ``--rate`` is not judged against a goal at half of saturation."""
    lat = row.latency
    ok = lat is not None and lat.measured > 0 and not row.note
    if not ok:
        return target(f"{row.name} end-to-end p50", "-", goal, None)
    assert lat is not None
    figure = f"{lat.p50_ms:.1f} ms"
    met: bool | None = lat.p50_ms <= limit
    if rate is not None:
        figure += f" at --rate {rate:g} records/s, not at half of saturation"
        met = None
    elif row.sustainable is not None and row.rate is not None:
        # the rate and sustainable rate of the round whose p50 this is, not the rounds' medians
        # (2026-11-30: "91.2 ms at 884 records/s" was measured at 7,725 records/s)
        judged = next(r for r in row.rounds if r.latency is lat)
        index = judged.number
        found = "-" if judged.sustainable is None else f"{judged.sustainable:,.0f}"
        burst = "-" if row.saturation is None else f"{row.saturation:,.0f}"
        half = "-" if row.half_burst_p50 is None else f"{row.half_burst_p50:,.1f} ms"
        figure += (f" at {judged.rate:,.0f} records/s (round {index}), half of the maximum "
                   f"sustainable throughput {found} records/s found in that round (median of "
                   f"the rounds: {row.sustainable:,.0f}; the burst's draining rate: {burst} "
                   f"records/s; p50 at half of it: {half})")  # fmt: skip
    if search_problems(row):
        figure += "; the rate search was noisy (see the rounds)"
    return target(f"{row.name} end-to-end p50", figure, goal, met)


def print_jobs(rows: list[JobFigures], baseline: JobFigures | None, header: bool = True) -> None:
    """One line per job (the medians over its rounds), then one per round, with its search
    phases under it when it searched."""
    if header:
        print(f"{'job':<28}{'burst/s':>10}{'sustained/s':>12}{'producer/s':>11}{'paced/s':>9}"
              f"{'p50 ms':>9}{'p99 ms':>9}{'consumer ms':>13}{'vs undertow ALO p50':>21}"
              f"{'records':>9}")  # fmt: skip
    for row in rows:
        cells = _cells(row.saturation, row.sustainable, row.producer_rate, row.rate,
                       row.latency, row.consumer_ms)  # fmt: skip
        print(f"{row.name:<28}{cells}{_ratio(row, baseline)}", flush=True)
        if row.half_burst_p50 is not None:
            print(f"{'':<28}(p50 at half of the burst's rate, median of the rounds: "
                  f"{row.half_burst_p50:,.1f} ms)")  # fmt: skip
        for one in row.rounds:
            cells = _cells(one.saturation, one.sustainable, one.producer_rate, one.rate,
                           one.latency, one.consumer_ms)  # fmt: skip
            label = f"  round {one.number}" + ("" if one.attempt == 1 and one.last
                                              else f", attempt {one.attempt}")  # fmt: skip
            print(f"{label:<28}{cells}{'':>21}  load {one.load}{_cpu(one)}")
            if not one.last:
                print(f"{'':<32}not counted, measured again: {one.problem}")
            if one.paced_verdict is not None:
                print(f"{'':<32}paced: {one.paced_verdict.describe()}")
            if one.closing is not None:
                print(f"{'':<32}closing: {one.closing.describe()}")
            if one.hops is not None:
                print(f"{'':<32}{one.hops.describe()}")
            if one.timeline:
                print(f"{'':<32}{kafka_hops.describe_timeline(one.timeline)}")
            for probe in one.probes:
                lat = probe.latency
                p50 = f", p50 {lat.p50_ms:,.1f} ms" if lat is not None and lat.measured else ""
                print(f"{'':<32}search: {probe.verdict.describe()}{p50}")
        problems = [row.note] if row.note else []
        problems += search_problems(row)
        missing = sum(r.latency.missing for r in row.rounds if r.latency is not None)
        if missing:
            problems.append(f"{missing} paced records never became visible")
        if row.overcounts:
            problems.append(f"{row.overcounts} outputs counted more records than were sent")
        for problem in problems:
            print(f"    {row.name}: {problem}")


#: Rounds whose sustainable rates spread by more than this factor make a noisy search.
NOISY_SPREAD = 1.5


def search_problems(row: JobFigures) -> list[str]:
    """What makes the row's rate search untrustworthy: a paced phase that fell behind (half
    of the rate the search found was more than the job sustained then) and sustainable rates
    that spread by more than :data:`NOISY_SPREAD` between rounds (the machine's load moved)."""
    counted = [r for r in row.rounds if r.last]
    problems = [
        f"round {r.number}: the paced phase fell behind ({r.paced_verdict.describe()}): "
        + ("the search overestimated the sustainable rate, or the machine's load rose"
           if r.probes else "the job did not sustain the rate given then")
        for r in counted
        if r.paced_verdict is not None and not r.paced_verdict.kept_up
    ]  # fmt: skip
    retried = sum(1 for r in row.rounds if not r.last)
    if retried:
        problems.append(f"{retried} attempt(s) at a round measured again (not counted)")
    found = [r.sustainable for r in counted if r.sustainable is not None]
    if len(found) > 1 and max(found) > NOISY_SPREAD * min(found):
        problems.append(f"the rounds' sustainable rates spread from {min(found):,.0f} to "
                        f"{max(found):,.0f} records/s: the rate search is noisy on this machine "
                        f"now")  # fmt: skip
    return problems


def _cells(saturation: float | None, sustained: float | None, producer: float | None,
           rate: float | None, lat: load.Latency | None,
           consumer: float | None) -> str:  # fmt: skip
    cells = f"{_num(saturation, 10)}{_num(sustained, 12)}{_num(producer, 11)}{_num(rate, 9)}"
    if lat is None or not lat.measured:
        return cells + f"{'-':>9}{'-':>9}{'-':>13}"
    return cells + f"{lat.p50_ms:>9.1f}{lat.p99_ms:>9.1f}" + (
        f"{'-':>13}" if consumer is None else f"{consumer:>13.1f}")  # fmt: skip


def _cpu(one: Round) -> str:
    """CPU us per record, burst -> paced, of the job, the broker (when this run started it)
    and the harness."""
    if one.cpu_burst is None or one.cpu_paced is None:
        return ""
    parts = [f"{name} {one.cpu_burst[name]:.0f}->{one.cpu_paced[name]:.0f}"
             for name in ("job", "broker", "harness") if one.cpu_burst[name] > 0]  # fmt: skip
    return f"; CPU us/record burst->paced: {', '.join(parts)}"


def _ratio(row: JobFigures, baseline: JobFigures | None) -> str:
    lat = row.latency
    if lat is None or not lat.measured or baseline is None or baseline.latency is None \
            or not baseline.latency.measured:  # fmt: skip
        return f"{'-':>21}"
    return f"{lat.p50_ms / baseline.latency.p50_ms:>20.2f}x{lat.measured:>9}"


def _num(value: float | None, width: int) -> str:
    return f"{'-':>{width}}" if value is None else f"{value:>{width},.0f}"
