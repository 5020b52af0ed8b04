"""The peers' Kafka connector jars for benchmarks/kafka.py, fetched once from Maven Central.

``tools/kafka_peers/pom.xml`` names them: Spark's ``spark-sql-kafka-0-10`` (profile ``spark``)
and Flink's shaded ``flink-sql-connector-kafka`` (profile ``flink``). :func:`fetch` runs
``mvn dependency:copy-dependencies`` for one profile into ``.cache/kafka-peers/<profile>-<version>``
(a ``.complete`` marker written last, so an interrupted fetch starts over) and returns the jars.

Only what Spark does not bring itself is kept for Spark: the connector, its token provider,
kafka-clients and commons-pool2 (as ``--packages`` would add; Spark's own jars already hold
Scala, Hadoop, lz4, snappy and SLF4J). Versions: Maven Central has no spark-sql-kafka-0-10
for Spark 4.3 yet, so the newest (4.2.0) is used with pyspark 4.3 and the benchmark says so;
the newest Flink connector is built for Flink 2.2 (5.0.0-2.2), used with PyFlink 2.3.
"""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
POM = ROOT / "tools" / "kafka_peers" / "pom.xml"
CACHE = ROOT / ".cache" / "kafka-peers"
SPARK_ARTIFACTS = ("spark-sql-kafka-0-10", "spark-token-provider-kafka-0-10", "kafka-clients",
                   "commons-pool2")  # fmt: skip


def pom_property(name: str) -> str:
    match = re.search(rf"<{re.escape(name)}>([^<]+)</{re.escape(name)}>", POM.read_text())
    if match is None:
        raise RuntimeError(f"{POM}: no <{name}> property")
    return match.group(1)


def fetch(profile: str) -> list[Path]:
    """The jars of ``profile`` (``spark`` or ``flink``), fetched on first use. Raises
    RuntimeError naming the Maven command when they cannot be fetched."""
    version = pom_property("spark.version" if profile == "spark" else "flink.kafka.version")
    target = CACHE / f"{profile}-{version}"
    if not (target / ".complete").exists():
        if shutil.which("mvn") is None:
            raise RuntimeError("fetching the peers' Kafka connectors needs Maven (`mvn`)")
        staging = target.with_name(target.name + ".partial")
        shutil.rmtree(staging, ignore_errors=True)
        command = ["mvn", "-B", "-q", "-f", str(POM), "-P", profile,
                   "dependency:copy-dependencies", f"-DoutputDirectory={staging}",
                   "-DincludeScope=runtime"]  # fmt: skip
        done = subprocess.run(command, capture_output=True, text=True)
        if done.returncode != 0:
            raise RuntimeError(
                f"could not fetch the {profile} Kafka connector (exit {done.returncode}): "
                f"{' '.join(command)}\n{(done.stdout + done.stderr)[-2000:]}"
            )
        if profile == "spark":
            for jar in staging.glob("*.jar"):
                if not jar.name.startswith(SPARK_ARTIFACTS):
                    jar.unlink()
        (staging / ".complete").write_text(version + "\n")
        shutil.rmtree(target, ignore_errors=True)
        staging.rename(target)
    jars = sorted(target.glob("*.jar"))
    if not jars:
        raise RuntimeError(f"{target}: no jars (delete the folder to fetch again)")
    return jars
