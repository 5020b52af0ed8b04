"""benchmarks/kafka.py's job on Spark Structured Streaming, run as a subprocess.

Kafka ``in`` -> parse ``"<key>,<ts>"`` -> groupBy(key).count() -> ``"<key>,<count>"`` -> Kafka
``out``, output mode ``update``, ``--master local[2]`` with 2 shuffle partitions (p=2), the
spark-sql-kafka-0-10 jars given by ``--jars``. ``--mode micro-batch`` triggers batches back to
back (``processingTime="0 seconds"``); ``--mode real-time`` uses Spark 4.1+'s real-time mode
(``trigger(realTime=...)``), where the query allows it: its source and shuffle stages run
at once as one pipelined group, so p=2 needs ``local[4]`` (4 task slots).

Protocol with the parent: prints ``READY`` once the query started, ``FAILED <reason>`` (one
line) if it could not start or died; stops the query and exits when its stdin closes or
reads a line.
"""

from __future__ import annotations

import argparse
import sys
import threading
import traceback


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--bootstrap", required=True)
    parser.add_argument("--source-topic", required=True)
    parser.add_argument("--sink-topic", required=True)
    parser.add_argument("--mode", choices=["micro-batch", "real-time"], required=True)
    parser.add_argument("--jars", required=True, help="comma-separated connector jars")
    parser.add_argument("--checkpoint", required=True, help="the query's checkpoint folder")
    parser.add_argument("--master", default="local[2]")
    parser.add_argument("--real-time-batch", default="5 seconds",
                        help="real-time mode's batch (checkpoint) duration")  # fmt: skip
    args = parser.parse_args()

    from pyspark.sql import SparkSession
    from pyspark.sql import functions as F

    builder = (
        SparkSession.builder.master(args.master)
        .appName("undertow kafka benchmark")
        .config("spark.jars", args.jars)
        .config("spark.sql.shuffle.partitions", "2")
        .config("spark.ui.enabled", "false")
        .config("spark.sql.adaptive.enabled", "false")
    )
    if args.mode == "real-time":
        builder = builder.config(
            "spark.sql.streaming.stateStore.providerClass",
            "org.apache.spark.sql.execution.streaming.state.RocksDBStateStoreProvider",
        ).config("spark.sql.streaming.checkpoint.fileChecksum.enabled", "false")
    spark = builder.getOrCreate()
    spark.sparkContext.setLogLevel("ERROR")
    try:
        lines = (
            spark.readStream.format("kafka")
            .option("kafka.bootstrap.servers", args.bootstrap)
            .option("subscribe", args.source_topic)
            .option("startingOffsets", "earliest")
            .load()
        )
        parts = F.split(F.col("value").cast("string"), ",")
        counts = lines.select(parts.getItem(0).alias("key")).groupBy("key").count()
        out = counts.select(
            F.col("key").alias("key"),
            F.concat_ws(",", F.col("key"), F.col("count").cast("string")).alias("value"),
        )
        writer = (
            out.writeStream.format("kafka")
            .option("kafka.bootstrap.servers", args.bootstrap)
            .option("topic", args.sink_topic)
            .option("checkpointLocation", args.checkpoint)
            .outputMode("update")
        )
        if args.mode == "real-time":
            writer = writer.trigger(realTime=args.real_time_batch)
        else:
            writer = writer.trigger(processingTime="0 seconds")
        query = writer.start()
    except Exception as err:  # the reason goes to the parent, which prints it
        reason = " ".join(str(err).split())[:600]
        print(f"FAILED {type(err).__name__}: {reason}", flush=True)
        traceback.print_exc(file=sys.stderr)
        spark.stop()
        return 1
    print("READY", flush=True)

    def watch() -> None:
        """Report a query that dies while the parent measures (it waits for output)."""
        try:
            query.awaitTermination()
        except Exception as err:
            print(f"FAILED {type(err).__name__}: {' '.join(str(err).split())[:600]}", flush=True)

    threading.Thread(target=watch, daemon=True).start()
    sys.stdin.readline()
    query.stop()
    spark.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
