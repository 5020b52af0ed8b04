"""KafkaSource and KafkaSink against their peers, each side in the same run (issue 28).

One broker (tools/kafka_broker.py, on a free loopback port; or ``UNDERTOW_KAFKA_BOOTSTRAP``),
topics of 2 partitions, p=2 everywhere, on one host. Sections:

1. **Source throughput**: a pre-filled topic read by undertow's KafkaSource (bounded at the
   latest offsets, into a discarding sink, ``local`` target: two worker processes) and by a bare
   confluent-kafka consumer loop in two processes, one partition each (``consume`` in batches,
   values decoded as SimpleStringSchema does). Each side is timed from its first record to its
   end, in its own processes (undertow: a map chained to the source notes the time and the
   worker's CPU time at the first record and at the end of input). "Per core" is records per
   CPU-second: user + system time of the side's reading processes (the broker, and undertow's
   driver, not counted). Three runs of both sides over one topic; the target line takes the
   median ratio (one run moves by about 0.1x on a shared machine).
2. **End-to-end latency at half of saturation**: Kafka -> parse -> key_by -> running count ->
   Kafka (benchmarks/kafka_load.py: how records are written, read and matched). A record's
   latency is its send -> visible to a read_committed consumer for exactly-once sinks,
   read_uncommitted otherwise. **Saturation is the maximum sustainable throughput**
   (benchmarks/kafka_sustainable.py; Karimov et al., ICDE 2018): the highest rate, produced live
   on the same machine, at which the job keeps up over a phase (its lag does not grow). Per
   engine one job run: a trickle until the first output is visible, then ``rounds`` (3) times: a
   burst of N records as fast as the producer can write them (the burst's draining rate: N over
   first send to last visible, the ``burst/s`` column: the saturation this benchmark used until
   2026-11-30, which overstates what the job sustains live); a search of the sustainable rate
   (``search_steps`` paced phases of ``probe_seconds``, bisecting between 0 and the burst's
   rate, each judged kept up or fallen behind from its lag sampled every 20 ms, and kept up only
   if the producer sent at least 95% of the rate, since on shared cores it falls short; the
   first is at half of the burst's rate, so its p50 is the old figure, printed beside the new
   one; then the highest rate kept up runs again, and only a rate kept up twice counts, a
   confirmation that falls behind stepping down by a ratio, 0.75, up to twice); then a paced
   phase of ``--seconds`` at half of the sustainable rate found, whose
   records after its first second give p50/p99, itself judged (a round whose paced phase fell
   behind, or rounds whose sustainable rates spread by more than 1.5x, make the row and its
   target line say the search was noisy). With ``--rate`` there is no search and every paced
   phase runs at that rate. undertow EXACTLY_ONCE searches its own sustainable rate the same way
   (its transactions make it lower) and is paced at half of it; the peers run without a search,
   paced at undertow AT_LEAST_ONCE's median rate: the engines compare at one rate. A row shows
   the medians over its rounds (its latency is the round with the median p50; the target line
   names that round's rate), with one line per round under it (the load average at its paced
   phase, the search's verdicts). ``consumer ms`` is the p50 of broker append -> seen by the
   measuring consumer (the output topic uses ``LogAppendTime``): the consumer's own share, small
   unless it falls behind (for read_committed, with the commit wait). undertow EXACTLY_ONCE and
   AT_LEAST_ONCE, checkpoints every ``--interval-ms``.
3. **Spark Structured Streaming** (the installed pyspark, its Kafka connector from Maven
   Central into .cache/kafka-peers): the same job in micro-batch mode and in real-time mode.
4. **PyFlink 2.3** (``UNDERTOW_PYFLINK_VENV``, Flink's Kafka connector jar): EXACTLY_ONCE and
   AT_LEAST_ONCE, the same checkpoint interval. A peer that cannot run prints why.
5. **Shopee's shape**: a Kafka backlog, a slow keyed operator (spins ``--spin-us`` per record),
   checkpoints every 200 ms, aligned and unaligned: checkpoint p50 and in-flight bytes.
6. **Oracle counts after a kill** (benchmarks/kafka_kill.py): section 2's job on undertow counts
   a filled topic while a worker is killed; lost and duplicated counts per guarantee.

The pieces, one module each: kafka_source.py (section 1), kafka_load.py (the records, the
producer and the measuring consumer), kafka_sustainable.py (the rate search),
kafka_harness.py (one engine's job run), kafka_rounds.py (its figures and table),
kafka_hops.py (``--hops``: undertow's rows carry per-hop stamps, and each round prints where
its latency went: produce, fetch, exchange, sink, observe), kafka_engines.py (undertow and
the peers behind one interface), kafka_shopee.py (section 5), kafka_kill.py (section 6).

Each section prints the load average at its start and end. ``--weighted`` runs the whole
benchmark (the broker, the jobs, the harness) in a cgroup of the highest CPU weight, as
compare_commits.py does, so that the other work on a shared machine takes little from it; the
first line says whether it was used. The last lines are one per target:
``target NAME: FIGURE (goal GOAL): met|missed``. Usage::

    python benchmarks/kafka.py [--quick] [--sections source,latency,spark,pyflink,shopee,kill]
        [--weighted] [--hops] [--at-least-once-only]

``-D key=value`` (repeatable) adds undertow rows run with those options, e.g.
``-D execution.buffer-timeout=5ms``; ``-D sink:KEY=VALUE`` / ``-D source:KEY=VALUE`` go to the
sink's / source's ``set_property`` instead (``-D sink:linger.ms=5``).
``--quick`` is a smoke run of small sizes over sections source, latency and shopee (under ~2
minutes on a quiet machine); add ``--sections ...,spark,pyflink`` for the peers. Set
``UNDERTOW_PYFLINK_VENV`` to an existing PyFlink 2.3 venv, or one is made in .bench/.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path[:0] = [str(HERE), str(HERE / "peers"), str(HERE.parent / "tools")]
import compare_commits  # noqa: E402
import kafka_engines  # noqa: E402
import kafka_jars  # noqa: E402
import kafka_kill  # noqa: E402
import kafka_load as load  # noqa: E402
import pyflink_venv  # noqa: E402
from kafka_broker import JVM_OPTIONS, SERVER_JVM_OPTIONS, KafkaBroker  # noqa: E402
from kafka_harness import FULL, QUICK, Harness  # noqa: E402
from kafka_rounds import (  # noqa: E402
    JobFigures,
    latency_target,
    loadavg,
    print_jobs,
    section,
    target,
)
from kafka_shopee import shopee  # noqa: E402
from kafka_source import source_throughput  # noqa: E402

from undertow.datastream.connectors.kafka import DeliveryGuarantee  # noqa: E402


def peers_engines(args: argparse.Namespace) -> tuple[list[kafka_engines.Engine], list[str]]:
    """The peers' engines that can start here, and why the others cannot."""
    engines: list[kafka_engines.Engine] = []
    reasons: list[str] = []
    sections = args.sections.split(",")
    if "spark" in sections:
        try:
            jars = kafka_jars.fetch("spark")
        except RuntimeError as err:
            reasons.append(f"Spark: {err}")
        else:
            import pyspark

            connector = kafka_jars.pom_property("spark.version")
            print(f"Spark: pyspark {pyspark.__version__}, spark-sql-kafka-0-10 {connector} "
                  f"({', '.join(j.name for j in jars)})")  # fmt: skip
            for mode in ("micro-batch", "real-time"):
                engines.append(kafka_engines.spark_engine(mode, jars))
    if "pyflink" in sections:
        try:
            jar = kafka_jars.fetch("flink")[0]
            python = pyflink_venv.ensure_pyflink()
            env = pyflink_venv.pyflink_environment(python)
        except (RuntimeError, SystemExit, OSError) as err:
            reasons.append(f"PyFlink: {err}")
        else:
            print(f"PyFlink {pyflink_venv.PYFLINK_VERSION} ({python}), {jar.name}")
            for guarantee in ("EXACTLY_ONCE", "AT_LEAST_ONCE"):
                engines.append(kafka_engines.pyflink_engine(guarantee, args.interval_ms, jar,
                                                            python, env))  # fmt: skip
    return engines, reasons


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="a smoke run (under ~2 minutes "
                        "without the peers)")  # fmt: skip
    parser.add_argument("--sections", default=None, help="comma list (default: all; with "
                        "--quick: source,latency,shopee)")  # fmt: skip
    parser.add_argument("--interval-ms", type=int, default=1000, help="checkpoint interval")
    parser.add_argument("--rate", type=float, default=None,
                        help="paced records/s for every engine (default: half of undertow "
                        "AT_LEAST_ONCE's maximum sustainable throughput, searched per "
                        "round)")  # fmt: skip
    parser.add_argument("-D", dest="option", action="append", default=[], metavar="KEY=VALUE",
                        help="also run undertow's latency rows with this option")  # fmt: skip
    parser.add_argument("--at-least-once-only", action="store_true", help="section 2 "
                        "without the EXACTLY_ONCE row (a run in about half the time)")  # fmt: skip
    parser.add_argument("--hops", action="store_true", help="undertow's rows carry per-hop "
                        "stamps; each round prints where its latency went "
                        "(benchmarks/kafka_hops.py)")  # fmt: skip
    parser.add_argument("--broker-jvm", choices=("test", "server"), default="test",
                        help="the started broker's JVM: the tests' quick-start one (C1 only, "
                        "small heap) or Kafka's start scripts' (kafka_broker.py)")  # fmt: skip
    parser.add_argument("--spin-us", type=float, default=500.0, help="Shopee shape's slow step")
    parser.add_argument("--weighted", action="store_true", help="run this process and all it "
                        "starts (broker, workers, peers) in a cgroup of the highest CPU weight "
                        "(as compare_commits.py --weighted: root, cgroup v1)")  # fmt: skip
    args = parser.parse_args()
    if args.weighted:
        if compare_commits.weighted_prefix() is None:
            raise SystemExit("--weighted needs root and the cgroup v1 cpu controller")
        group = compare_commits.CPU_CGROUP / f"undertow-bench-{os.getpid()}"
        # all this process's threads; the processes it starts later inherit the group
        (group / "cgroup.procs").write_text(str(os.getpid()))
    try:
        run(args)
    finally:
        if args.weighted:
            compare_commits.release_weight()


def run(args: argparse.Namespace) -> None:
    weighted = "no" if not args.weighted else "yes (cpu.shares 262144)"
    sizes = QUICK if args.quick else FULL
    if args.sections is None:
        args.sections = (
            "source,latency,shopee,kill" if args.quick
            else "source,latency,spark,pyflink,shopee,kill"
        )  # fmt: skip
    sections = args.sections.split(",")
    print(f"benchmarks/kafka.py {'--quick' if args.quick else '(full)'} on "
          f"{os.cpu_count()} cores, {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}, "
          f"load average {loadavg()}, weighted: {weighted}")  # fmt: skip
    targets: list[str] = []
    with contextlib.ExitStack() as stack:
        bootstrap = os.environ.get("UNDERTOW_KAFKA_BOOTSTRAP")
        broker = None
        if not bootstrap:
            jvm = SERVER_JVM_OPTIONS if args.broker_jvm == "server" else JVM_OPTIONS
            broker = stack.enter_context(KafkaBroker(jvm_options=jvm))
            bootstrap = broker.bootstrap_servers
            print(f"Kafka broker at {bootstrap} (started in {broker.start_seconds:.1f} s; "
                  f"JVM: {args.broker_jvm}, {' '.join(jvm)})")  # fmt: skip
        if "source" in sections:
            with section("1. source throughput: KafkaSource vs a bare confluent-kafka loop"):
                ratio = source_throughput(bootstrap, sizes.source_records, sizes.source_runs)
            targets.append(target("source throughput per core",
                                  f"{ratio:.2f}x the bare loop (median)", ">= 0.8x",
                                  ratio >= 0.8))  # fmt: skip
        rows: list[JobFigures] = []
        if {"latency", "spark", "pyflink"} & set(sections):
            started = broker.process.pid if broker is not None and broker.process else None
            harness = Harness(bootstrap, sizes, started)

            def undertow(guarantee: DeliveryGuarantee) -> kafka_engines.Engine:
                return kafka_engines.UndertowEngine(guarantee, args.interval_ms, hops=args.hops)

            with section("2. end-to-end latency and saturation: undertow"):
                alo = harness.run(undertow(DeliveryGuarantee.AT_LEAST_ONCE), args.rate)
                # EXACTLY_ONCE at half of its own saturation: at AT_LEAST_ONCE's rate it ran
                # near all it sustains (2026-11-30: 8,100 records/s against its 9,823 burst)
                eo = None
                if not args.at_least_once_only:
                    eo = harness.run(undertow(DeliveryGuarantee.EXACTLY_ONCE), args.rate)
                    rows.append(eo)
                rows.append(alo)
                if args.option:  # the same job again with the options given, for each guarantee
                    settings = dict(o.split("=", 1) for o in args.option)
                    label = f" ({', '.join(args.option)})"
                    for guarantee in (
                        DeliveryGuarantee.EXACTLY_ONCE,
                        DeliveryGuarantee.AT_LEAST_ONCE,
                    ):
                        engine = kafka_engines.UndertowEngine(
                            guarantee, args.interval_ms, settings, label, args.hops
                        )
                        rows.append(harness.run(engine, alo.rate))
                pace = (f"{args.rate:g} records/s" if args.rate else
                        f"half of the sustainable rate found by {sizes.search_steps} search "
                        f"phases of {sizes.probe_seconds:g} s after the burst")  # fmt: skip
                print(f"checkpoints every {args.interval_ms} ms; {sizes.rounds} rounds per job "
                      f"of a burst of {sizes.burst_records:,} records and a paced phase of "
                      f"{sizes.seconds:g} s at {pace} (EXACTLY_ONCE: half of its own; the "
                      f"peers: at undertow AT_LEAST_ONCE's median rate); p50/p99 over each "
                      f"paced phase after its first second; a job's row: the medians over its "
                      f"rounds")  # fmt: skip
                print_jobs(rows, alo)
            peers, reasons = peers_engines(args)
            if peers or reasons:
                with section("3-4. the same job on Spark Structured Streaming and PyFlink 2.3"):
                    for reason in reasons:
                        print(f"not run: {reason}")
                    print_jobs([], alo)
                    peer_rows = []
                    for engine in peers:  # each row as soon as it is measured
                        peer_rows.append(harness.run(engine, alo.rate))
                        print_jobs(peer_rows[-1:], alo, header=False)
                rows += peer_rows
            interval = args.interval_ms
            if eo is not None:
                targets.append(latency_target(eo, f"<= {interval + 100} ms", interval + 100))
            targets.append(latency_target(alo, "<= 20 ms at half of saturation, saturation = "
                                          "the maximum sustainable throughput", 20,
                                          args.rate))  # fmt: skip
            spark_mb = next((r for r in rows if r.name.startswith("Spark micro-batch")), None)
            if spark_mb is not None:
                ours, theirs = alo.latency, spark_mb.latency
                ok = ours is not None and theirs is not None and ours.measured and theirs.measured
                targets.append(target(
                    "ahead of Spark micro-batch on latency",
                    f"undertow AT_LEAST_ONCE p50 {ours.p50_ms:.1f} ms vs Spark micro-batch "  # type: ignore[union-attr]
                    f"{theirs.p50_ms:.1f} ms" if ok else "-",  # type: ignore[union-attr]
                    "undertow's p50 below Spark's", (ours.p50_ms < theirs.p50_ms) if ok else None))  # type: ignore[union-attr]  # fmt: skip
        if "shopee" in sections:
            with section("5. Shopee's shape: Kafka backlog, slow keyed operator, checkpoints"):
                shopee(bootstrap, sizes.shopee_seconds, args.spin_us)
        if "kill" in sections:
            with section("6. oracle counts after a kill: undertow, one worker killed"):
                records = 2 * sizes.burst_records  # still flowing when the kill comes

                def filled(source: str, sink: str) -> None:
                    load.create_topics(bootstrap, source, sink)
                    load.fill(bootstrap, source, records)

                seed = int.from_bytes(os.urandom(4), "big")
                print(f"{records} records, {load.KEYS} keys, checkpoints every "
                      f"{args.interval_ms} ms, kill seed {seed}")  # fmt: skip
                kill_rows = kafka_kill.oracle_after_kill(
                    bootstrap, records, args.interval_ms, seed, filled
                )
                kafka_kill.print_kill(kill_rows)
            for row in kill_rows:
                ok = not row.note and row.restarts >= 1
                exact = row.name.startswith("undertow EXACTLY_ONCE")
                goal = "lost = duplicated = 0" if exact else "lost = 0"
                met = row.lost == 0 and (row.duplicated == 0 or not exact)
                targets.append(target(f"{row.name} after a kill",
                                      f"lost {row.lost}, duplicated {row.duplicated}", goal,
                                      met if ok else None))  # fmt: skip
    print(f"\nload average at the end: {loadavg()}")
    for line in targets:
        print(line)


if __name__ == "__main__":
    main()
