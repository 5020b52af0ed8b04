"""A Kafka cluster in the test process whose brokers answer with the errors a test asks for.

librdkafka (the C library under confluent-kafka) ships a mock cluster: brokers on loopback
ports, in threads of this process, speaking the Kafka protocol well enough for producers,
consumers and idempotent producers. Unlike a real broker it can be told to fail the next
requests of an API with given error codes, and to answer slowly, which is how a test makes
a fault happen on demand instead of hoping for it under load (a broker that answers a produce
request with ``NOT_LEADER_OR_FOLLOWER`` right after a topic was created, for instance). Its
C functions are reached with :mod:`ctypes` in the librdkafka that confluent-kafka loads.

Lifecycle: :class:`MockKafkaCluster` starts with the cluster (a context manager); its
``bootstrap_servers`` work for any confluent-kafka client until :meth:`close`. Threading:
call it from one thread; the mock brokers run in librdkafka's own threads.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import glob
import os
from types import TracebackType
from typing import Any

#: Kafka protocol API keys (the request kinds errors can be injected for).
PRODUCE_API = 0
FETCH_API = 1

#: Kafka protocol error codes (a few that clients retry).
NOT_LEADER_OR_FOLLOWER = 6
REQUEST_TIMED_OUT = 7
NOT_ENOUGH_REPLICAS = 19

_RD_KAFKA_PRODUCER = 0


def _librdkafka() -> ctypes.CDLL:
    """The librdkafka confluent-kafka uses: the copy its wheel bundles, else the system's."""
    import confluent_kafka

    package = os.path.dirname(os.path.abspath(confluent_kafka.__file__))
    bundled = sorted(glob.glob(os.path.join(package, os.pardir, "confluent_kafka.libs",
                                            "librdkafka*.so*")))  # fmt: skip
    path = bundled[0] if bundled else ctypes.util.find_library("rdkafka")
    if path is None:
        raise RuntimeError(
            "the Kafka mock cluster needs librdkafka: neither confluent-kafka's wheel "
            f"({package}) nor the system has it"
        )
    lib = ctypes.CDLL(path)
    pointer, text, size = ctypes.c_void_p, ctypes.c_char_p, ctypes.c_size_t
    lib.rd_kafka_conf_new.restype = pointer
    lib.rd_kafka_conf_new.argtypes = []
    lib.rd_kafka_conf_set.restype = ctypes.c_int
    lib.rd_kafka_conf_set.argtypes = [pointer, text, text, text, size]
    lib.rd_kafka_new.restype = pointer
    lib.rd_kafka_new.argtypes = [ctypes.c_int, pointer, text, size]
    lib.rd_kafka_destroy.argtypes = [pointer]
    lib.rd_kafka_mock_cluster_new.restype = pointer
    lib.rd_kafka_mock_cluster_new.argtypes = [pointer, ctypes.c_int]
    lib.rd_kafka_mock_cluster_destroy.argtypes = [pointer]
    lib.rd_kafka_mock_cluster_bootstraps.restype = text
    lib.rd_kafka_mock_cluster_bootstraps.argtypes = [pointer]
    lib.rd_kafka_mock_topic_create.restype = ctypes.c_int
    lib.rd_kafka_mock_topic_create.argtypes = [pointer, text, ctypes.c_int, ctypes.c_int]
    lib.rd_kafka_mock_broker_set_rtt.restype = ctypes.c_int
    lib.rd_kafka_mock_broker_set_rtt.argtypes = [pointer, ctypes.c_int32, ctypes.c_int]
    lib.rd_kafka_mock_push_request_errors_array.restype = None
    lib.rd_kafka_mock_push_request_errors_array.argtypes = [
        pointer,
        ctypes.c_int16,
        size,
        ctypes.POINTER(ctypes.c_int),
    ]
    return lib


class MockKafkaCluster:
    """librdkafka's mock cluster with ``brokers`` brokers (see the module docstring)."""

    def __init__(self, brokers: int = 1) -> None:
        self._lib = _librdkafka()
        errors = ctypes.create_string_buffer(512)
        # the cluster belongs to a client handle that only hosts it (and logs errors only:
        # it has no bootstrap servers, which librdkafka would warn about)
        conf = self._lib.rd_kafka_conf_new()
        self._lib.rd_kafka_conf_set(conf, b"log_level", b"3", errors, len(errors))
        self._handle = self._lib.rd_kafka_new(_RD_KAFKA_PRODUCER, conf, errors, len(errors))
        if not self._handle:
            raise RuntimeError(f"librdkafka: cannot create a client handle: {errors.value!r}")
        self._cluster = self._lib.rd_kafka_mock_cluster_new(self._handle, brokers)
        if not self._cluster:
            self._lib.rd_kafka_destroy(self._handle)
            raise RuntimeError(f"librdkafka: cannot start a mock cluster of {brokers} brokers")
        self.bootstrap_servers: str = self._lib.rd_kafka_mock_cluster_bootstraps(
            self._cluster
        ).decode()

    def create_topic(self, name: str, partitions: int) -> None:
        code = self._lib.rd_kafka_mock_topic_create(self._cluster, name.encode(), partitions, 1)
        if code != 0:
            raise RuntimeError(f"mock cluster: cannot create topic {name!r} (error {code})")

    def fail_next_requests(self, api_key: int, *errors: int) -> None:
        """The next ``len(errors)`` requests of ``api_key`` (any broker) fail, in order,
        with these Kafka error codes."""
        codes = (ctypes.c_int * len(errors))(*errors)
        self._lib.rd_kafka_mock_push_request_errors_array(
            self._cluster, api_key, len(errors), codes
        )

    def set_round_trip(self, broker_id: int, rtt_ms: int) -> None:
        """Broker ``broker_id`` (from 1) answers every request ``rtt_ms`` late, so a client
        has several requests in flight at once."""
        code = self._lib.rd_kafka_mock_broker_set_rtt(self._cluster, broker_id, rtt_ms)
        if code != 0:
            raise RuntimeError(f"mock cluster: no broker {broker_id} (error {code})")

    def close(self) -> None:
        if self._cluster:
            self._lib.rd_kafka_mock_cluster_destroy(self._cluster)
            self._cluster = None
        if self._handle:
            self._lib.rd_kafka_destroy(self._handle)
            self._handle = None

    def __enter__(self) -> MockKafkaCluster:
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        value: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    def __del__(self) -> Any:
        self.close()
