"""The harness of sections 2-4 of benchmarks/kafka.py: the producer and measuring-consumer
processes around one engine's job run, and the coordinator that commands its phases.

Per engine one job run: a trickle until the first output is visible, then ``rounds`` times a
burst (its draining rate), a search of the maximum sustainable throughput (paced phases
bisecting between 0 and the burst's rate, judged from the lag sampled every 20 ms, and the
rate found run again to confirm it, benchmarks/kafka_sustainable.py) and a paced phase at
half of the rate found (or at a rate given), then the rate found once more, so that a round
counts only if its paced phase lay between two phases that sustained it (else the round is
measured again from a lower start, kafka_sustainable.Attempt): which phase comes next is
kafka_sustainable.RoundPlan's decision, the harness only runs it. Afterwards the producer's
send log and the consumer's output log are joined (benchmarks/kafka_load.py) into each
round's figures (benchmarks/kafka_rounds.py), with the CPU per record of the job, the broker
and the harness (benchmarks/process_cpu.py) and, for an instrumented job, where the latency
went hop by hop (benchmarks/kafka_hops.py).

Threading: the benchmark's main thread owns a :class:`Harness`; the producer and the consumer
are processes of their own that talk to it through a pipe and shared values.
"""

from __future__ import annotations

import multiprocessing
import os
import time
import uuid
from dataclasses import dataclass

import kafka_engines
import kafka_hops
import kafka_load as load
import kafka_sustainable as sustain
import process_cpu
from kafka_rounds import JobFigures, Probe, Round, job_figures, loadavg
from percentiles import percentile

SPAWN = multiprocessing.get_context("spawn")
#: The width of a paced phase's timeline bins (``--hops``, kafka_hops.hop_timeline).
TIMELINE_BIN_MS = 250.0


@dataclass(frozen=True, slots=True)
class Sizes:
    source_records: int
    source_runs: int
    burst_records: int
    #: bursts and paced phases per job run, alternating (section 2's figures are medians)
    rounds: int
    #: each paced phase whose latency a row reports
    seconds: float
    #: each round's search of the sustainable rate: its phases, and each one's length
    search_steps: int
    probe_seconds: float
    shopee_seconds: float
    drain_s: float


QUICK = Sizes(source_records=200_000, source_runs=3, burst_records=20_000, rounds=3,
              seconds=4.0, search_steps=4, probe_seconds=4.0, shopee_seconds=4.0,
              drain_s=30.0)  # fmt: skip
FULL = Sizes(source_records=1_000_000, source_runs=3, burst_records=50_000, rounds=3,
             seconds=10.0, search_steps=4, probe_seconds=6.0, shopee_seconds=10.0,
             drain_s=240.0)  # fmt: skip


@dataclass(frozen=True, slots=True)
class _Planned:
    """What the coordinator did in one attempt at a round: the producer's phase index of the
    burst, of each search phase (with its verdict) and of the measured paced phase, the
    closing phase's verdict, and the CPU readings around the burst and the paced phase."""

    burst: int
    probes: tuple[tuple[int, sustain.Verdict], ...]
    sustainable: float | None
    paced: int
    rate: float
    load: str
    paced_verdict: sustain.Verdict
    #: the round (1-based) and this attempt at it (1-based)
    number: int
    attempt: int
    #: None when it counts; else why another attempt replaced it, or why none counted
    problem: str | None
    #: whether this is the last attempt at its round (the one the row's medians take)
    last: bool
    closing: sustain.Verdict | None
    cpu_marks: tuple[dict[str, float], ...]


class Harness:
    """The producer and measuring-consumer processes around one engine's job run."""

    def __init__(self, bootstrap: str, sizes: Sizes, broker_pid: int | None = None) -> None:
        self.bootstrap = bootstrap
        self.sizes = sizes
        #: the broker's process when this run started it (its CPU is then shown apart)
        self.broker_pid = broker_pid

    def run(self, engine: kafka_engines.Engine, rate: float | None) -> JobFigures:
        """One job run: warm-up, then ``sizes.rounds`` times a burst (its draining rate), and
        then, when ``rate`` is None, a search of the sustainable rate (``sizes.search_steps``
        paced phases of ``sizes.probe_seconds``, bisecting between 0 and the burst's rate,
        the first at half of it) and a paced phase at half of the sustainable rate found,
        then that rate once more (the closing phase); else a paced phase at ``rate``. Each
        round's paced phase follows the search of the same round, so a machine whose load
        moves cannot overload one round with another's rate; an attempt whose rate was not
        sustained on both sides of its paced phase is followed by another, whose search
        starts lower, up to ``kafka_sustainable.ATTEMPTS`` (kafka_sustainable.Attempt)."""
        suffix = uuid.uuid4().hex[:8]
        source_topic, sink_topic = f"bench-in-{suffix}", f"bench-out-{suffix}"
        # both topics stamp records with the broker's append time (kafka_hops: the input's)
        load.create_topics(self.bootstrap, source_topic, sink_topic,
                           config=load.OUTPUT_TOPIC_CONFIG)  # fmt: skip
        sent, covered = SPAWN.Value("q", 0), SPAWN.Value("q", 0)
        first, stop = SPAWN.Event(), SPAWN.Event()
        commands, producer_end = SPAWN.Pipe()
        observed, observer_end = SPAWN.Pipe()
        producer = SPAWN.Process(
            target=load.produce, args=(self.bootstrap, source_topic, producer_end, sent)
        )
        observer = SPAWN.Process(
            target=load.observe,
            args=(self.bootstrap, sink_topic, load.PARTITIONS, engine.isolation, covered, first,
                  stop, observer_end),
        )  # fmt: skip
        producer.start()
        observer.start()
        # the job: this process's tree (undertow's driver and workers, a peer's subprocess)
        # without the broker and the harness's own processes
        groups = {"job": [os.getpid()], "broker": [self.broker_pid] if self.broker_pid else [],
                  "harness": [producer.pid or 0, observer.pid or 0]}  # fmt: skip
        cpu = process_cpu.CpuGroups({k: groups[k] for k in ("broker", "harness", "job")})
        note = ""
        planned: list[_Planned] = []
        phase = 0  # the producer's index of the phase last commanded (0: the trickle)

        def command(kind: str, **fields: float) -> int:
            """Run one producer phase to its end; its index in the send log."""
            nonlocal phase
            commands.send(load.Phase(kind, **fields))  # type: ignore[arg-type]
            phase += 1
            if phase == 1:
                _reply(commands)  # the trickle ended
            return phase

        def paced(at: float, seconds: float) -> tuple[int, list[sustain.LagSample]]:
            """A paced phase at ``at`` records/s, its lag sampled every 20 ms."""
            index = command("paced", rate=at, seconds=seconds)
            began = time.monotonic()
            samples: list[sustain.LagSample] = []
            while not commands.poll(0.02):
                count = sent.value
                samples.append(sustain.LagSample(time.monotonic() - began,
                                                 count - covered.value, count))  # fmt: skip
                if time.monotonic() - began > seconds + 600:
                    raise RuntimeError(f"the producer did not end a {seconds:g} s phase")
            commands.recv()
            return index, samples

        def judged(at: float, seconds: float) -> tuple[int, sustain.Verdict]:
            """A search (or closing) phase at ``at`` records/s after a second's pause, drained,
            and its verdict."""
            time.sleep(1.0)
            index, samples = paced(at, seconds)
            drained("a search phase's records were")
            return index, sustain.judge(samples, at, engine.wait_ms)

        def drained(what: str) -> None:
            if not self._drained(sent, covered, engine):
                raise RuntimeError(
                    f"round {number}: {what} not all visible within "
                    f"{self.sizes.drain_s:.0f} s ({engine.failure() or 'still running'})"
                )

        try:
            engine.start(self.bootstrap, source_topic, sink_topic)
            commands.send(load.Phase("trickle", rate=20))
            if not load.wait_until(lambda: first.is_set() or engine.failure() is not None,
                                   kafka_engines.START_TIMEOUT_S):  # fmt: skip
                raise RuntimeError(f"no output within {kafka_engines.START_TIMEOUT_S:.0f} s")
            if engine.failure() is not None:
                raise RuntimeError(str(engine.failure()))
            number = 0
            for number in range(1, self.sizes.rounds + 1):
                burst_marks = [cpu.read()]
                began = time.monotonic()
                burst = command("burst", count=self.sizes.burst_records)
                _reply(commands)  # the burst is written
                drained("the burst was")
                # this burst's draining rate, roughly (the exact one comes from the logs)
                bound = self.sizes.burst_records / (time.monotonic() - began)
                burst_marks.append(cpu.read())
                plan = sustain.RoundPlan.start(bound, self.sizes.search_steps, rate)
                while True:  # the round's attempts (kafka_sustainable.RoundPlan)
                    probes: list[tuple[int, sustain.Verdict]] = []
                    index, load_text, marks = 0, "", [*burst_marks]
                    while (step := plan.next_phase()) is not None:
                        if step.kind is sustain.PhaseKind.PACED:
                            time.sleep(1.0)
                            load_text = loadavg()
                            marks = [*burst_marks, cpu.read()]
                            index, samples = paced(step.rate, self.sizes.seconds)
                            # the measured phase judged like a search phase: did the job keep
                            # up with half of what the search found? (no: it overestimated)
                            verdict = sustain.judge(samples, step.rate, engine.wait_ms)
                            drained("the paced records were")
                            marks.append(cpu.read())
                        else:  # a search phase, or the closing one: the bracket's second side
                            probe, verdict = judged(step.rate, self.sizes.probe_seconds)
                            if step.kind is sustain.PhaseKind.SEARCH:
                                probes.append((probe, verdict))
                        plan = plan.after(verdict)
                    assert plan.paced is not None
                    planned.append(_Planned(
                        burst, tuple(probes), plan.sustainable, index, plan.paced_rate,
                        load_text, plan.paced, number, plan.number, plan.problem(), plan.last,
                        plan.closing, tuple(marks)))  # fmt: skip
                    if plan.last:
                        break
                    plan = plan.retry()
        except (RuntimeError, ValueError) as err:
            note = f"could not run: {err}" if not planned else str(err)
        finally:
            engine.stop()
            commands.send(load.Phase("stop"))
            log = last_send_log(commands)
            time.sleep(0.5)
            stop.set()
            seen = observed.recv() if observed.poll(60) else []
            producer.join(30)
            observer.join(30)
        rounds: list[Round] = []
        overcounts = 0
        if planned and log is None:
            note = note or (f"the producer's send log did not come within "
                            f"{SEND_LOG_TIMEOUT_S:.0f} s: no figures")  # fmt: skip
        if log is not None and seen:
            latencies, overcounts = load.record_latencies(log.keys, log.sent_ns, seen)
            for plan in planned:
                burst = [i for i, p in enumerate(log.phases) if p == plan.burst]
                figures = load.saturation(log.sent_ns, latencies, burst)
                records = [i for i, p in enumerate(log.phases) if p == plan.paced]
                latency, consumer = self._phase_latency(log, latencies, seen, plan.paced)
                warm = log.sent_ns[records[0]] + 1_000_000_000 if records else 0
                hops = kafka_hops.summarize_hops(kafka_hops.hop_times(
                    log.keys, log.sent_ns, seen,
                    {i for i in records if log.sent_ns[i] >= warm}))  # fmt: skip
                timeline = kafka_hops.hop_timeline(log.keys, log.sent_ns, seen, records,
                                                   TIMELINE_BIN_MS)  # fmt: skip
                probes = tuple(Probe(v, self._phase_latency(log, latencies, seen, i)[0])
                               for i, v in plan.probes)  # fmt: skip
                marks = plan.cpu_marks
                cpu_burst = process_cpu.per_record_us(marks[0], marks[1], len(burst))
                cpu_paced = process_cpu.per_record_us(marks[2], marks[3], len(records))
                rounds.append(Round(
                    None if figures is None else figures[0],
                    None if figures is None else figures[1],
                    plan.rate, latency, consumer, plan.load, cpu_burst, cpu_paced,
                    plan.sustainable, probes, hops, plan.paced_verdict,
                    tuple(timeline), plan.number, plan.attempt, plan.last, plan.closing,
                    plan.problem))  # fmt: skip
                if plan.last and plan.problem is not None:
                    lowest = ("; paced at half of the lowest rate that fell behind"
                              if plan.sustainable is None else "")  # fmt: skip
                    note = note or (f"round {plan.number}: none of {plan.attempt} attempts "
                                    f"counted; the last: {plan.problem}{lowest}")  # fmt: skip
        return job_figures(engine.name, rounds, overcounts, note)

    @staticmethod
    def _phase_latency(log: load.SendLog, latencies: list[int | None],
                       seen: list[tuple[int, int, int, int, tuple[int, ...]]],
                       phase: int) -> tuple[load.Latency | None, float | None]:  # fmt: skip
        """p50/p99 of phase ``phase``'s records after its first second, and the measuring
        consumer's share over it (None if the phase sent nothing)."""
        records = [i for i, p in enumerate(log.phases) if p == phase]
        if not records:
            return None, None
        warm = log.sent_ns[records[0]] + 1_000_000_000
        latency = load.summarize([latencies[i] for i in records if log.sent_ns[i] >= warm])
        after = next((i for i in range(records[-1] + 1, len(log.phases))
                      if log.phases[i] != phase), None)  # fmt: skip
        until = log.sent_ns[after] if after is not None else 2**63
        shares = load.append_to_visible(seen, warm, until)
        return latency, percentile(shares, 0.5, "nearest-rank") if shares else None

    def _drained(self, sent: object, covered: object, engine: kafka_engines.Engine) -> bool:
        return (
            load.wait_until(
                lambda: covered.value >= sent.value or engine.failure() is not None,  # type: ignore[attr-defined]
                self.sizes.drain_s,
            )
            and engine.failure() is None
        )


#: How long the harness waits for the producer's send log after ``stop``.
SEND_LOG_TIMEOUT_S = 60.0


def last_send_log(commands: object, timeout_s: float = SEND_LOG_TIMEOUT_S) -> load.SendLog | None:
    """The producer's send log, which it sends after ``stop`` once its client flushed
    (replies before it are skipped); None if it did not come within ``timeout_s``. A flush on
    a loaded machine takes seconds: waiting only while a message came within the last second
    lost the log of a whole run (2026-11-30 21:35 UTC, load 48: no rounds, no reason, and the
    producer's late send met a closed pipe)."""
    deadline = time.monotonic() + timeout_s
    while (left := deadline - time.monotonic()) > 0:
        if commands.poll(min(1.0, left)):  # type: ignore[attr-defined]
            message = commands.recv()  # type: ignore[attr-defined]
            if isinstance(message, load.SendLog):
                return message
    return None


def _reply(commands: object, timeout: float = 600.0) -> object:
    """The producer's next reply; RuntimeError if it gives none in ``timeout`` seconds."""
    if not commands.poll(timeout):  # type: ignore[attr-defined]
        raise RuntimeError(f"the producer did not answer within {timeout:.0f} s")
    return commands.recv()  # type: ignore[attr-defined]
