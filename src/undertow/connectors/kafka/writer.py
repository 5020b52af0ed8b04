"""The Kafka sink's writers: :class:`KafkaWriter` (``NONE``, ``AT_LEAST_ONCE``) and
:class:`ExactlyOnceKafkaWriter` (the write-ahead protocol of :mod:`.sink_protocol`).

A ``pyarrow.RecordBatch`` record (a batch stream's) is written as one Kafka record per row.
``NONE`` never waits; ``AT_LEAST_ONCE`` flushes before each barrier and fails on any delivery
error; ``EXACTLY_ONCE`` buffers, files a batch per checkpoint in its state and commits due
batches with their marker when a checkpoint completed, after restoring what a restore brought.

Threading: every method runs on the sink subtask's task thread and blocks on the broker.
Lifecycle: built in the sink operator's ``open``; ``close`` neither commits nor aborts (the
next attempt's ``init_transactions`` aborts what a crash left open). At start every
``EXACTLY_ONCE`` subtask records on the progress topic that it uses its transactional id, and
subtask 0 fences the ids that earlier runs recorded at or above this run's parallelism: no
subtask of this run would abort what their crashed commits left open.
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import Sequence
from typing import Any, Protocol

import pyarrow as pa
from confluent_kafka import KafkaError, KafkaException, Producer

from undertow.common.row import Row
from undertow.connectors.kafka import producer_io as io
from undertow.connectors.kafka.commit_errors import commit_failure
from undertow.connectors.kafka.metadata import propagation_s
from undertow.connectors.kafka.record_serializer import KafkaRecordSerializationSchema
from undertow.connectors.kafka.sink_protocol import (
    END_OF_INPUT,
    IdUseKey,
    KafkaSinkError,
    KafkaWriterState,
    MarkerKey,
    PendingBatch,
    ProducedRecord,
    changed_progress_topic,
    commit_decision,
    ids_of_other_prefixes,
    ids_to_fence,
    lingering_ids,
    restore_decision,
    transaction_timeout_problem,
    transactional_id,
)
from undertow.connectors.sink import SinkWriter, SinkWriterContext, WriteAheadSinkWriter
from undertow.core.config import Options

log = logging.getLogger(__name__)

#: Named points of the exactly-once protocol where tests inject crashes.
BEFORE_PRE_COMMIT = "before-pre-commit"
AFTER_PRE_COMMIT = "after-pre-commit"
AFTER_CHECKPOINT_COMPLETE = "after-checkpoint-complete"
DURING_COMMIT = "during-commit"
AFTER_COMMIT = "after-commit"
CRASH_POINTS = (
    BEFORE_PRE_COMMIT,
    AFTER_PRE_COMMIT,
    AFTER_CHECKPOINT_COMPLETE,
    DURING_COMMIT,
    AFTER_COMMIT,
)


#: The default ``transaction.timeout.ms``: the broker's default ``transaction.max.timeout.ms``
#: (Flink's one hour exceeds it), above the default checkpoint timeout (10 minutes).
DEFAULT_TRANSACTION_TIMEOUT_MS = 900_000


class CrashInjector(Protocol):
    """Test-only: called at each named point; may raise or end the process."""

    def reached(self, point: str, checkpoint_id: int, attempt: int, subtask: int) -> None: ...


class SinkSettings(Protocol):
    """What a writer reads of its sink (``KafkaSink`` has these attributes)."""

    bootstrap_servers: str
    transactional_id_prefix: str
    record_serializer: KafkaRecordSerializationSchema
    properties: dict[str, str]


class _Base(SinkWriter):
    def __init__(self, sink: SinkSettings, context: SinkWriterContext, transactional: bool) -> None:
        self.sink = sink
        self.subtask = context.subtask_index()
        self.parallelism = context.parallelism()
        self.attempt = context.attempt_number()
        operator = context.operator_name()
        named = f"{sink!r}" if operator is None else f"operator {operator!r} ({sink!r})"
        self.where = f"{named} subtask {self.subtask}"
        self.config = io.client_config(sink.bootstrap_servers, sink.properties)
        self.timeout_s = (
            int(sink.properties.get(io.STARTUP_TIMEOUT, io.DEFAULT_STARTUP_TIMEOUT_MS)) / 1000
        )
        self.max_bytes = int(sink.properties.get("message.max.bytes", io.DEFAULT_MESSAGE_MAX_BYTES))
        self.errors = io.DeliveryErrors(self.where)
        self.serializer: KafkaRecordSerializationSchema = sink.record_serializer
        self.known_topics: set[str] = set()
        if transactional:
            self.config.setdefault("transaction.timeout.ms", DEFAULT_TRANSACTION_TIMEOUT_MS)
            self.config["transactional.id"] = transactional_id(
                sink.transactional_id_prefix, self.subtask
            )
        else:
            io.keep_partition_order(self.config)
            io.report_failures_only(self.config)
        self.producer = Producer(self.config)
        fixed = [self.serializer.topic] if self.serializer.topic is not None else []
        self.propagation_s = propagation_s(self.config)
        io.check_topics(self.producer, fixed, self.where, sink.bootstrap_servers,
                        self.timeout_s, self.propagation_s)  # fmt: skip
        self.known_topics.update(fixed)

    def _records(self, element: Any, timestamp: int | None) -> list[ProducedRecord]:
        """The Kafka records of one stream record: a ``pyarrow.RecordBatch`` (a batch
        stream's record) gives one per row, each row a ``Row`` of the batch's column names
        (as ``to_records()`` makes them) with the batch's timestamp."""
        if not isinstance(element, pa.RecordBatch):
            return [self._record(element, timestamp)]
        names = element.schema.names
        columns = [c.to_pylist() for c in element.columns]
        return [self._record(Row(**dict(zip(names, r))), timestamp) for r in zip(*columns)]

    def _record(self, element: Any, timestamp: int | None) -> ProducedRecord:
        try:
            record = self.serializer.to_record(element, timestamp)
        except Exception as err:
            raise KafkaSinkError(
                f"{self.where}: cannot serialize record {element!r}: {err}"
            ) from err
        if record.topic not in self.known_topics:
            io.check_topics(
                self.producer,
                [record.topic],
                self.where,
                self.sink.bootstrap_servers,
                self.timeout_s,
                self.propagation_s,
            )
            self.known_topics.add(record.topic)
        io.check_size(record, self.max_bytes, self.where)
        return record

    def _produce(self, record: ProducedRecord) -> None:
        io.produce(self.producer, record, self.errors, self.timeout_s,
                   self.sink.bootstrap_servers)  # fmt: skip

    def close(self) -> None:
        io.serve_reports(self.producer)


class KafkaWriter(_Base):
    """``NONE`` and ``AT_LEAST_ONCE`` (module doc)."""

    def __init__(self, sink: SinkSettings, context: SinkWriterContext, wait_for_acks: bool) -> None:
        super().__init__(sink, context, transactional=False)
        self.wait_for_acks = wait_for_acks

    def write(self, element: Any, timestamp: int | None) -> None:
        self.write_batch([element], None if timestamp is None else [timestamp])

    def write_batch(self, elements: list[Any], timestamps: list[Any] | None) -> None:
        """Hand the batch's records to the producer, then serve its callbacks once: a
        ``poll`` per record cost a call into librdkafka each, and the delivery reports it
        serves are only failures (:func:`.producer_io.report_failures_only`)."""
        stamps = timestamps if timestamps is not None else [None] * len(elements)
        try:
            for element, timestamp in zip(elements, stamps):
                for record in self._records(element, timestamp):
                    self._produce(record)
        except io.ProduceError as err:
            fatal = io.fatal_error(self.producer)
            if fatal is None or err.error.code() != KafkaError._FATAL:
                raise
            raise self._broken(fatal) from err
        self._raise_if_failed(io.fatal_error(self.producer))

    def flush(self, end_of_input: bool) -> None:
        if not (self.wait_for_acks or end_of_input):
            return
        try:
            left = self.producer.flush(self.timeout_s)
        except KafkaException as err:
            self.errors.raise_if_any()
            raise self._broken(io.reason(err)) from err
        self._raise_if_failed(io.fatal_error(self.producer))
        if left:
            raise KafkaSinkError(
                f"{self.where}: {left} records were not acknowledged by the "
                f"brokers at {self.sink.bootstrap_servers} within "
                f"{self.timeout_s:g} s"
            )

    def _raise_if_failed(self, fatal: KafkaError | None) -> None:
        """Raise the first rejected record, else the producer's fatal error (an idempotent
        producer's broken sequence), which confluent-kafka raises from every ``poll``."""
        self.errors.raise_if_any()
        if fatal is not None:
            raise self._broken(fatal)

    def _broken(self, fatal: KafkaError) -> KafkaSinkError:
        return KafkaSinkError(
            f"{self.where}: the producer failed for good (a restart starts a new one): "
            f"{fatal.str()}"
        )


class ExactlyOnceKafkaWriter(_Base, WriteAheadSinkWriter):
    """``EXACTLY_ONCE`` (module doc; decisions in :mod:`.sink_protocol`)."""

    def __init__(
        self,
        sink: SinkSettings,
        context: SinkWriterContext,
        restored: Sequence[KafkaWriterState],
        crash: CrashInjector | None,
    ) -> None:
        super().__init__(sink, context, transactional=True)
        self.prefix = sink.transactional_id_prefix
        self.progress_topic = sink.properties.get(io.PROGRESS_TOPIC, io.DEFAULT_PROGRESS_TOPIC)
        self.crash = crash
        self.key = MarkerKey(self.prefix, uuid.uuid4().hex[:16], self.subtask)
        self.buffer: list[ProducedRecord] = []
        self.prepared: list[ProducedRecord] = []
        self.pending: dict[int, PendingBatch] = {}
        self.restored_checkpoint = context.restored_checkpoint_id()
        self.dead: tuple[MarkerKey, ...] = ()
        self._check_transaction_timeout(context)
        self._check_progress_topic(restored)
        io.ensure_progress_topic(self.config, self.progress_topic, self.where, self.timeout_s)
        self._record_id_use(IdUseKey(self.prefix, self.subtask), self.parallelism)
        if self.subtask == 0:  # the one reader of the id-use records (lingering_ids)
            self._fence_lingering()
        for other in ids_to_fence(restored, self.subtask, self.parallelism):
            if other != self.subtask:
                self._fence(transactional_id(self.prefix, other))
        for other_id in ids_of_other_prefixes(restored, self.prefix):
            self._fence(other_id)
        self._init_transactions()
        if restored:
            self._recover(restored)

    # -- start -----------------------------------------------------------------------------------
    def _check_transaction_timeout(self, context: SinkWriterContext) -> None:
        config = context.configuration()
        checkpoint_timeout = 0 if config is None else config.get(Options.CHECKPOINT_TIMEOUT)
        timeout = int(self.config["transaction.timeout.ms"])
        broker_max = io.broker_transaction_max_timeout(self.config, self.producer, self.timeout_s)
        problem = transaction_timeout_problem(timeout, broker_max, checkpoint_timeout)
        if problem is not None:
            raise KafkaSinkError(f"{self.where}: {problem}")

    def _check_progress_topic(self, restored: Sequence[KafkaWriterState]) -> None:
        """Refuse a restore whose markers are on another progress topic than the one the sink
        is configured with: none would be found there, and every restored batch written
        again."""
        old = changed_progress_topic(restored, self.progress_topic)
        if old is not None:
            raise KafkaSinkError(
                f"{self.where}: the state restored from checkpoint {self.restored_checkpoint} "
                f"has its progress markers on topic {old!r}, but {io.PROGRESS_TOPIC} is now "
                f"{self.progress_topic!r}; set it back to {old!r} to restore this checkpoint "
                "(a new progress topic needs a start without it)"
            )

    def _record_id_use(self, key: IdUseKey, parallelism: int | None) -> None:
        io.record_id_use(
            self.config, self.progress_topic, key, parallelism, self.where, self.timeout_s
        )

    def _fence_lingering(self) -> None:
        """Subtask 0: fence the ids that earlier runs used and this run does not
        (:func:`.sink_protocol.lingering_ids`), aborting what their crashed commits left
        open, then delete their id-use records: a later run need not fence them again."""
        uses = io.read_id_uses(self.config, self.progress_topic, self.prefix, self.where,
                               self.timeout_s)  # fmt: skip
        for other in lingering_ids(uses, self.subtask, self.parallelism):
            log.info("%s: fencing transactional id %r, used by an earlier run of "
                     "parallelism %d", self.where, transactional_id(self.prefix, other),
                     uses[other])  # fmt: skip
            self._fence(transactional_id(self.prefix, other))
            self._record_id_use(IdUseKey(self.prefix, other), None)

    def _fence(self, other_id: str) -> None:
        """Initialize (fence, abort) an id this subtask took over from an old subtask."""
        config = {**self.config, "transactional.id": other_id}
        try:
            Producer(config).init_transactions(self.timeout_s)
        except KafkaException as err:
            raise KafkaSinkError(
                f"{self.where}: cannot fence transactional id "
                f"{config['transactional.id']!r}: {err.args[0]}"
            ) from err

    def _init_transactions(self) -> None:
        try:
            self.producer.init_transactions(self.timeout_s)
        except KafkaException as err:
            raise KafkaSinkError(
                f"{self.where}: init_transactions of "
                f"{self.config['transactional.id']!r} at "
                f"{self.sink.bootstrap_servers} failed within "
                f"{self.timeout_s:g} s: {err.args[0]}"
            ) from err

    def _recover(self, restored: Sequence[KafkaWriterState]) -> None:
        keys = {s.key(self.prefix) for s in restored}
        markers = io.read_markers(
            self.config, self.progress_topic, keys, self.where, self.timeout_s
        )
        decision = restore_decision(self.prefix, restored, markers)
        log.info(
            "%s: restored %d batches, %d already committed, writing %d",
            self.where,
            decision.skipped + len(decision.write),
            decision.skipped,
            len(decision.write),
        )
        if decision.write:
            newest = max(b.checkpoint_id for _, b in decision.write)
            self._transaction([b for _, b in decision.write], list(decision.markers), newest)
        self.dead = decision.dead

    # -- records and checkpoints -----------------------------------------------------------------
    def write(self, element: Any, timestamp: int | None) -> None:
        self.buffer.extend(self._records(element, timestamp))

    def prepare_commit(self) -> list[Any]:
        self._crash(BEFORE_PRE_COMMIT, -1)
        self.prepared.extend(self.buffer)
        self.buffer = []
        return []

    def snapshot_state(self, checkpoint_id: int) -> list[Any]:
        if self.prepared:
            self.pending[checkpoint_id] = PendingBatch(checkpoint_id, tuple(self.prepared))
            self.prepared = []
        self._crash(AFTER_PRE_COMMIT, checkpoint_id)
        batches = tuple(self.pending[c] for c in sorted(self.pending))
        return [KafkaWriterState(self.subtask, self.parallelism, self.key.token, batches,
                                 self.prefix, self.progress_topic)]  # fmt: skip

    def notify_checkpoint_complete(self, checkpoint_id: int) -> None:
        decision = commit_decision(
            self.key, self.pending, checkpoint_id, self.dead, self.restored_checkpoint
        )
        if decision.is_empty:
            return
        self._crash(AFTER_CHECKPOINT_COMPLETE, checkpoint_id)
        markers: list[tuple[MarkerKey, int | None]] = [(k, None) for k in decision.tombstones]
        if decision.marker is not None:
            markers.append((decision.key, decision.marker))
        self._transaction(list(decision.batches), markers, checkpoint_id)
        for batch in decision.batches:
            del self.pending[batch.checkpoint_id]
        if decision.tombstones:
            self.dead = ()

    def commit_at_end_of_input(self) -> None:
        """No final checkpoint will come: write what is left now."""
        self.snapshot_state(END_OF_INPUT)
        self.notify_checkpoint_complete(END_OF_INPUT)

    def _transaction(
        self,
        batches: list[PendingBatch],
        markers: Sequence[tuple[MarkerKey, int | None]],
        checkpoint_id: int,
    ) -> None:
        """One transaction: ``batches`` in order, then the markers (``None``: a tombstone)."""
        what = f"{self.where}, commit of checkpoint {checkpoint_id}"
        self.errors.where = what
        try:
            self.producer.begin_transaction()
            for batch in batches:
                for record in batch.records:
                    self._produce(record)
            for key, value in markers:
                marker = ProducedRecord(
                    self.progress_topic,
                    key.encode(),
                    None if value is None else str(value).encode(),
                    None,
                )
                self._produce(marker)
            self._crash(DURING_COMMIT, checkpoint_id)
            self.producer.commit_transaction(self.timeout_s)
        except KafkaException as err:
            raise self._commit_failed(checkpoint_id, io.reason(err)) from err
        except io.ProduceError as err:
            raise self._commit_failed(checkpoint_id, err.error) from err
        self.errors.raise_if_any()
        self._crash(AFTER_COMMIT, checkpoint_id)

    def _commit_failed(self, checkpoint_id: int, error: KafkaError) -> KafkaSinkError:
        """The error of a failed transaction (:mod:`.commit_errors`): the delivery reports are
        served first, so that a record the broker rejected is named rather than the purges
        that follow; ``_FATAL`` (from ``produce``) is replaced by the fatal error itself (a
        fencing); an abortable transaction is aborted before the error is raised."""
        fatal = io.fatal_error(self.producer)
        if fatal is not None and error.code() == KafkaError._FATAL:
            error = fatal
        tid = str(self.config["transactional.id"])
        failure = commit_failure(
            self.where,
            checkpoint_id,
            tid,
            self.prefix,
            error,
            self.errors.take_rejection(),
            int(self.config["transaction.timeout.ms"]),
            self.sink.bootstrap_servers,
        )
        message = failure.message
        if failure.abort:
            try:
                self.producer.abort_transaction(self.timeout_s)
            except KafkaException as abort_err:
                message += f"; aborting the transaction failed too: {abort_err.args[0]}"
            io.serve_reports(self.producer)
            self.errors.take()  # the records the abort purged: follow-on failures
        return KafkaSinkError(message)

    def _crash(self, point: str, checkpoint_id: int) -> None:
        if self.crash is not None:
            self.crash.reached(point, checkpoint_id, self.attempt, self.subtask)
