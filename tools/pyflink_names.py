"""Generate docs/pyflink-compatibility.md: every public name of PyFlink's DataStream API.

The names are the ``__all__`` of ``pyflink.common``, ``pyflink.datastream`` and their
submodules (connectors and formats included), read from an installed apache-flink 2.3.0 (in a
venv of its own, never a dependency of undertow) and kept as facts in
``docs/pyflink-2.3-names.json``. Each name is looked up at the same path in undertow
(``pyflink.x.y`` -> ``undertow.x.y``). Its status:

* *different* or *not applicable*: ``ANNOTATIONS`` (below, written by hand) says how or why;
* *supported*: undertow has it, and ``BEHAVIOUR_TESTS`` (``pyflink_behaviour_tests.py``) names
  the test that proves its behaviour;
* *untested*: undertow has it, but no behaviour test is named;
* *missing*: undertow does not have it.

Names undertow exports from those modules that PyFlink does not have are listed at the end.

Usage (from the repository root, with undertow importable)::

    python tools/pyflink_names.py --write-facts [--pyflink-python /work/pyflink-venv/bin/python]
    python tools/pyflink_names.py        # renders the document from the facts file

``--list-pyflink`` is the half that runs inside PyFlink's venv: it prints the names as JSON.
"""

from __future__ import annotations

import argparse
import importlib
import json
import pkgutil
import subprocess
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from pyflink_behaviour_tests import BEHAVIOUR_TESTS

DOCS = Path(__file__).resolve().parents[1] / "docs"
DOC = DOCS / "pyflink-compatibility.md"
FACTS = DOCS / "pyflink-2.3-names.json"
ROOTS = ("pyflink.common", "pyflink.datastream")
PYFLINK_VERSION = "2.3.0"
STATUSES = ("supported", "untested", "different", "not applicable", "missing")

_JVM_CONNECTOR = "not applicable: a Java connector (runs in Flink's JVM); undertow has none"
_JAVA = "not applicable: wraps a Java class"
_ASYNC = (
    "not applicable: PyFlink's internal carrier of an AsyncFunction's settings from the Java "
    "operator to the Python worker; undertow's AsyncDataStream hands them to its "
    "AsyncWaitOperator directly, and user code never builds one"
)

#: Hand annotations: a name (or ``module:`` for every name of a module) -> status and note.
#: Start with "different:" or "not applicable:"; "supported:" / "missing:" add a note to a name
#: found / not found in undertow.
ANNOTATIONS: dict[str, str] = {
    "module:pyflink.datastream.connectors.cassandra": _JVM_CONNECTOR,
    "module:pyflink.datastream.connectors.dynamic_kafka": _JVM_CONNECTOR,
    "module:pyflink.datastream.connectors.elasticsearch": _JVM_CONNECTOR,
    "module:pyflink.datastream.connectors.jdbc": _JVM_CONNECTOR,
    "KafkaSink": (
        "supported: EXACTLY_ONCE keeps each checkpoint's output in the sink's state and "
        "commits it with a progress marker (docs/kafka.md)"
    ),
    "module:pyflink.datastream.connectors.kinesis": _JVM_CONNECTOR,
    "module:pyflink.datastream.connectors.pulsar": _JVM_CONNECTOR,
    "module:pyflink.datastream.connectors.rabbitmq": _JVM_CONNECTOR,
    "CsvSchemaBuilder": (
        "supported: every PyFlink 2.3 method (types from DataTypes or Types); "
        "set_any_property_name(), disable_array_element_separator() and "
        "remove_array_element_separator() raise NotImplementedError naming themselves"
    ),
    "module:pyflink.datastream.formats.avro": "not applicable: Avro formats are Java classes",
    "AvroRowSerializationSchema": (
        "supported: avro_schema_string (fastavro's binary encoding, as Flink's); record_class, "
        "a Java class, raises TypeError"
    ),
    "AvroRowDeserializationSchema": (
        "supported: avro_schema_string, the row type derived from the Avro schema as Flink "
        "derives it; record_class, a Java class, raises TypeError"
    ),
    "module:pyflink.datastream.formats.orc": "not applicable: the ORC writer is a Java class",
    "EmbeddedRocksDBStateBackend": (
        "different: RocksDB through rocksdict, one DB per keyed subtask; incremental "
        "checkpoints upload only new SST files, savepoints CANONICAL or NATIVE; "
        "PyFlink's RocksDB tuning methods (options factories, predefined options) are absent"
    ),
    "PredefinedOptions": "not applicable: tuning presets of the Java RocksDB backend",
    "CustomStateBackend": "not applicable: wraps a Java state backend class",
    "module:pyflink.datastream.checkpoint_storage": (
        "different: checkpoint storage is chosen with execution.checkpointing.dir "
        "(local paths or fsspec URLs), not with storage classes"
    ),
    "Row": "supported: Row(**kwargs) keeps the names in the order given, as PyFlink 2.x",
    "CheckpointingMode": "supported",
    "CheckpointConfig": (
        "supported: every PyFlink 2.3 method; the interval reads -1 and the mode AT_LEAST_ONCE "
        "while checkpointing is off, as in PyFlink 2.3"
    ),
    "StreamExecutionEnvironment": (
        "different: add_jars/add_classpaths are taken and logged as not loaded (no JVM; the "
        "connectors are Python), add_source (a Java SourceFunction) is absent; python.* "
        "dependencies ship to local and Spark workers; enable_changelog_state_backend is "
        "recorded but undertow has no changelog backend"
    ),
    "JobClient": (
        "different: at undertow.datastream (not undertow.common); get_job_status(), "
        "get_job_execution_result(), cancel() and get_accumulators() return futures as in "
        "PyFlink; savepoint methods take Flink's format type and an unaligned flag"
    ),
    "ExecutionConfig": (
        "different: parallelism, max parallelism, auto-watermark interval and global job "
        "parameters; Java-only knobs (Kryo, Avro, closure cleaner, object reuse) are absent"
    ),
    "SlotSharingGroup": (
        "different: names and resource profiles are kept; undertow's workers run all subtasks "
        "in one pool of slots, so profiles size nothing"
    ),
    "MemorySize": "supported",
    "WatermarkStrategy": (
        "supported: `with_idleness()` keeps a timestamp assigner set before it, as Flink's "
        "Java API does; PyFlink 2.3's `with_idleness()` drops it (it rebuilds the strategy "
        "from the Java one), so there `with_timestamp_assigner(a).with_idleness(d)` stamps no "
        "record and event-time windows open at Long.MIN_VALUE (seen on a session-window job, "
        "2026-12-03)"
    ),
    "StateTtlConfig": (
        "different: cleanup strategies are recorded and answered as PyFlink does; the heap "
        "backend runs the incremental cleanup (PyFlink's default, or `cleanup_incrementally`); "
        "RocksDB has no compaction filter: in its place the backend walks a TTL state's DB "
        "entries (PyFlink's default, or `cleanup_in_rocksdb_compact_filter`, whose "
        "query_time_after_num_entries caps the entries of one walk; periodic_compaction_time is "
        "recorded only); both backends clean on access and leave expired entries out of full "
        "snapshots"
    ),
    "JsonRowSerializationSchema": "supported",
    "JsonRowDeserializationSchema": "supported",
    "CsvRowSerializationSchema": "supported",
    "CsvRowDeserializationSchema": "supported",
    "BulkWriterFactory": _JAVA,
    "RowDataBulkWriterFactory": _JAVA,
    "TypeSerializer": "not applicable: Flink's Java serializers; undertow pickles records",
    "InputDependencyConstraint": "not applicable: removed from Flink's scheduler",
    "RestartStrategies": (
        "supported: no_restart, fixed_delay_restart, failure_rate_restart and "
        "fall_back_restart write Flink's restart-strategy.* keys through "
        "env.set_restart_strategy or ExecutionConfig.set_restart_strategy, PyFlink 1.x's "
        "setters (the apache-flink 2.3.0 wheel keeps RestartStrategies but has neither "
        "setter, checked 2026-12-02: 2.3 jobs set the restart-strategy.* keys)"
    ),
    "RestartStrategyConfiguration": (
        "supported: equal when they set the same restart-strategy.* keys; get_restart_strategy "
        "reads them back"
    ),
    "ConfigOption": "different: typed options live in undertow.core.config (Options)",
    "ConfigOptions": "different: typed options live in undertow.core.config (Options)",
    "JobID": "different: job ids are 32-hex-digit strings",
    "FlinkKafkaConsumer": (
        "not applicable: wraps a Java class removed in flink-connector-kafka 4.0; use KafkaSource"
    ),
    "FlinkKafkaProducer": (
        "not applicable: wraps a Java class removed in flink-connector-kafka 4.0; use KafkaSink"
    ),
    "Semantic": "not applicable: FlinkKafkaProducer's; KafkaSink takes a DeliveryGuarantee",
    "KafkaSource": (
        "different: on confluent-kafka (librdkafka properties); adds "
        "set_bad_record_side_output; topic patterns are Python regular expressions"
    ),
    "SourceFunction": "not applicable: wraps a Java SourceFunction; use from_source",
    "SinkFunction": "supported: Python sink functions (add_sink); Java ones are absent",
    "AssignerWithPeriodicWatermarksWrapper": _JAVA,
    "InputFormat": "not applicable: Java InputFormats (create_input); use from_source",
    "CompletableFuture": (
        "supported: Python's concurrent.futures.Future under PyFlink's name (JobClient's futures)"
    ),
    "StreamingFileSink": "not applicable: Flink's legacy SinkFunction file sink; use FileSink",
    "AvroParquetReaders": "not applicable: Avro records are Java classes",
    "AvroParquetWriters": "not applicable: Avro records are Java classes",
    "CountWindowSerializer": "not applicable: undertow pickles windows (no serializers)",
    "GlobalWindowSerializer": "not applicable: undertow pickles windows (no serializers)",
    "TimeWindowSerializer": "not applicable: undertow pickles windows (no serializers)",
    "AsyncFunctionDescriptor": _ASYNC,
    "DeliveryGuarantee": (
        "supported: KafkaSink takes all three; FileSink and DeltaSink take none (as in "
        "PyFlink) and are EXACTLY_ONCE with checkpointing on"
    ),
    "FileEnumeratorProvider": (
        "different: both factories give undertow's enumerator (recursive, hidden files "
        "skipped, one split per file): no format here can start mid-file, so "
        "default_splittable_file_enumerator() splits nothing"
    ),
    "FileSplitAssignerProvider": (
        "different: locality_aware_split_assigner() hands splits out in path order; fsspec "
        "reports no block hosts to prefer"
    ),
    "FileCompactStrategy": (
        "different: each checkpoint's part files are merged per bucket before commit, in "
        "groups up to set_size_threshold(); enable_compaction_on_checkpoint(N > 1) is refused "
        "(no holding files back over checkpoints); compaction runs on the sink's task thread"
    ),
    "FileSink": (
        "different: part files go into the base path by default (Flink: hourly "
        "'yyyy-MM-dd--HH' directories, a DateTimeBucketAssigner), so spark.read.parquet(base) "
        "reads them; with_bucket_assigner(BucketAssigner.date_time_bucket_assigner()) gives "
        "Flink's layout. Part files are named <prefix>-<uuid hex>-<subtask>-<counter><suffix> "
        "(Flink: <prefix>-<uuid>-<counter><suffix>): the subtask index says which subtask "
        "owns a leftover in-progress file"
    ),
    "FileCompactor": (
        "different: concat_file_compactor(delimiter) for row formats (refused for bulk "
        "formats) and identical_file_compactor(); no Java record-wise compactors"
    ),
    "OperatorStateStore": (
        "supported: get_broadcast_state(); undertow's per-operator OperatorStateBackend is one"
    ),
    "HybridSource": (
        "supported: sources read in order, switching once every reader ended the current one; "
        "checkpoints hold the current source and its splits"
    ),
}


def list_pyflink() -> dict[str, list[str]]:
    """``{name: [modules exporting it]}`` from the installed PyFlink (call inside its venv)."""
    found: dict[str, list[str]] = {}
    for root in ROOTS:
        package = importlib.import_module(root)
        modules = [root] + [
            m.name for m in pkgutil.walk_packages(package.__path__, root + ".")
            if ".tests" not in m.name and not m.name.rsplit(".", 1)[-1].startswith("_")
        ]  # fmt: skip
        for name in modules:
            try:
                module = importlib.import_module(name)
            except Exception:  # optional extras (e.g. connectors needing other packages)
                continue
            for exported in getattr(module, "__all__", []):
                found.setdefault(exported, []).append(name)
    return found


def _undertow_path(module: str) -> str:
    return "undertow" + module.removeprefix("pyflink")


def _has(module: str, name: str) -> bool:
    try:
        return hasattr(importlib.import_module(module), name)
    except ImportError:
        return False


def _status(name: str, modules: list[str]) -> tuple[str, str, str]:
    """(status, undertow paths, note) of one PyFlink name (module doc: the statuses)."""
    have = [_undertow_path(m) for m in modules if _has(_undertow_path(m), name)]
    note = ANNOTATIONS.get(name)
    if note is None:
        note = next((ANNOTATIONS[f"module:{m}"] for m in modules if f"module:{m}" in ANNOTATIONS),
                    None)  # fmt: skip
    status = "supported" if have else "missing"
    text = ""
    if note is not None:
        head, _, text = note.partition(":")
        if head in ("different", "not applicable"):
            status = head
        elif head == "missing" and have:
            raise SystemExit(f"{name} is annotated missing but undertow has it at {have}")
        elif head == "supported" and not have:
            raise SystemExit(f"{name} is annotated supported but undertow has it at none of "
                             f"{[_undertow_path(m) for m in modules]}")  # fmt: skip
    if status == "supported" and name not in BEHAVIOUR_TESTS:
        status = "untested"
    if status in ("supported", "untested"):
        lacking = [_undertow_path(m) for m in modules if _undertow_path(m) not in have]
        if lacking:
            text = (text.strip() + "; " if text.strip() else "") + "not at " + ", ".join(lacking)
    return status, ", ".join(have), text.strip()


def _undertow_only(pyflink: dict[str, list[str]]) -> list[tuple[str, str]]:
    names: list[tuple[str, str]] = []
    for module in sorted({_undertow_path(m) for ms in pyflink.values() for m in ms}):
        try:
            exported = getattr(importlib.import_module(module), "__all__", [])
        except ImportError:
            continue
        names += [(module, n) for n in exported if n not in pyflink]
    return names


def counts(pyflink: dict[str, list[str]]) -> dict[str, int]:
    """How many names have each status."""
    statuses = [_status(name, modules)[0] for name, modules in pyflink.items()]
    return {s: statuses.count(s) for s in STATUSES}


def render(pyflink: dict[str, list[str]]) -> str:
    rows = [(name, *_status(name, modules), modules) for name, modules in pyflink.items()]
    lines = [
        "# PyFlink 2.3 DataStream API in undertow",
        "",
        "Generated by `tools/pyflink_names.py`. The PyFlink names are the `__all__` of an "
        f"installed apache-flink {PYFLINK_VERSION} (`pyflink.common`, `pyflink.datastream` and "
        "their submodules, connectors and formats included), kept in "
        "[pyflink-2.3-names.json](pyflink-2.3-names.json); the behaviour tests are listed in "
        "`tools/pyflink_behaviour_tests.py`, the notes in `tools/pyflink_names.py`. Do not edit "
        "by hand: change those and run `python tools/pyflink_names.py` again.",
        "",
        "A PyFlink name is **supported** when undertow has it at the same path (`pyflink` -> "
        "`undertow`) and the test named beside it runs it and checks its result; **untested** "
        "when undertow has it but no test is named that proves its behaviour; **different** "
        "when undertow has it with the differences noted (with the test of its behaviour as "
        "it is, where one is named); **not applicable** when it has no "
        "meaning without Flink's JVM or was left out for the reason given; **missing** when "
        "undertow does not have it.",
        "",
        "Totals: "
        + ", ".join(f"{n} {s}" for s, n in counts(pyflink).items())
        + f" ({len(rows)} names).",
        "",
        "| PyFlink name | PyFlink modules | status | undertow | behaviour test | notes |",
        "|---|---|---|---|---|---|",
    ]
    for name, status, have, note, modules in sorted(rows, key=lambda r: (r[4][0], r[0])):
        shown = ", ".join(f"`{m}`" for m in modules)
        test = f"`{BEHAVIOUR_TESTS[name]}`" if name in BEHAVIOUR_TESTS else ""
        lines.append(
            f"| `{name}` | {shown} | {status} | {have and f'`{have}`'} | {test} | {note} |"
        )
    lines += ["", "## undertow names that PyFlink does not have", "",
              "| undertow module | name |", "|---|---|"]  # fmt: skip
    lines += [f"| `{m}` | `{n}` |" for m, n in _undertow_only(pyflink)]
    return "\n".join(lines) + "\n"


def read_facts() -> dict[str, list[str]]:
    """PyFlink's names and the modules exporting each, from ``docs/pyflink-2.3-names.json``."""
    facts = json.loads(FACTS.read_text())
    names: dict[str, list[str]] = facts["names"]
    return names


def write_facts(pyflink_python: str) -> None:
    """List the names inside PyFlink's venv and keep them, with their source, as the facts."""
    run = [pyflink_python, __file__, "--list-pyflink"]
    listing = subprocess.run(run, capture_output=True, text=True, check=True)
    version = subprocess.run(
        [pyflink_python, "-c", "import importlib.metadata as m; print(m.version('apache-flink'))"],
        capture_output=True, text=True, check=True,
    ).stdout.strip()  # fmt: skip
    if version != PYFLINK_VERSION:
        raise SystemExit(f"{pyflink_python} has apache-flink {version}, not {PYFLINK_VERSION}")
    facts = {
        "source": f"the __all__ of pyflink.common, pyflink.datastream and their submodules in "
        f"an installed apache-flink {version} (PyPI wheel), listed by "
        f"`python tools/pyflink_names.py --write-facts` (its --list-pyflink half runs in "
        f"PyFlink's venv)",
        "apache-flink": version,
        "names": json.loads(listing.stdout),
    }
    FACTS.write_text(json.dumps(facts, indent=1, sort_keys=False) + "\n")
    print(f"wrote {FACTS} ({len(facts['names'])} names)")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--list-pyflink", action="store_true")
    parser.add_argument("--write-facts", action="store_true")
    parser.add_argument("--pyflink-python", default="/work/pyflink-venv/bin/python")
    args = parser.parse_args()
    if args.list_pyflink:
        json.dump(list_pyflink(), sys.stdout)
        return 0
    if args.write_facts:
        write_facts(args.pyflink_python)
    DOC.write_text(render(read_facts()))
    print(f"wrote {DOC}: " + ", ".join(f"{n} {s}" for s, n in counts(read_facts()).items()))
    return 0


if __name__ == "__main__":
    sys.exit(main())
