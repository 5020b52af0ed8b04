"""benchmarks/kafka_harness.py: the harness waits for the producer's send log as long as it
allows, however long the producer's flush takes, and skips the replies before it."""

from __future__ import annotations

import multiprocessing
import sys
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))
import kafka_harness
import kafka_load as load


def test_the_send_log_is_waited_for_past_a_silent_second() -> None:
    ours, producer = multiprocessing.Pipe()
    log = load.SendLog([1, 2], [10, 20], [0, 0])

    def flush_then_send() -> None:
        producer.send(("done", 3))  # a phase's reply still in the pipe
        time.sleep(1.5)  # the producer's client flushing on a loaded machine
        producer.send(log)

    sender = threading.Thread(target=flush_then_send)
    sender.start()
    try:
        got = kafka_harness.last_send_log(ours, timeout_s=10.0)
    finally:
        sender.join()
    assert got is not None and got.keys == [1, 2] and got.sent_ns == [10, 20]


def test_no_send_log_within_the_timeout_is_none() -> None:
    ours, _producer = multiprocessing.Pipe()
    began = time.monotonic()
    assert kafka_harness.last_send_log(ours, timeout_s=0.3) is None
    assert 0.3 <= time.monotonic() - began < 2.0
