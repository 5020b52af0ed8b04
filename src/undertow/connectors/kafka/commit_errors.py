"""Why a Kafka sink's commit or flush failed, in words: pure functions over confluent-kafka's
``KafkaError``, called by :mod:`.writer` when the producer reports a failure.

A commit fails in one of three ways (librdkafka's transactional API): *fenced*, another
producer initialized the same ``transactional.id`` (a fatal error: another job with the same
prefix, or a zombie of an earlier attempt; one job cannot have two sinks on one prefix and
cluster, :mod:`undertow.connectors.transactional_ids`); *abortable*
(``txn_requires_abort()``), the broker rejected a record (too large, not authorized, an
unknown topic) and the transaction must be aborted; or anything else (a time-out).

An abort reports the records it purged as ``Purged in queue``: a *follow-on* failure
(:data:`FOLLOW_ON`) that names no cause. A broker's rejection of a record is reported in its
place, and a commit's own error is never hidden behind one.
"""

from __future__ import annotations

from dataclasses import dataclass

from confluent_kafka import KafkaError

from undertow.connectors.kafka.sink_protocol import END_OF_INPUT

#: The codes of a producer fenced by a newer one with the same transactional id.
FENCED = frozenset(
    {KafkaError._FENCED, KafkaError.PRODUCER_FENCED, KafkaError.INVALID_PRODUCER_EPOCH}
)
#: Delivery failures that follow from another failure: an abort or purge of queued and
#: in-flight records, a record offered after the producer hit a fatal error.
FOLLOW_ON = frozenset({KafkaError._PURGE_QUEUE, KafkaError._PURGE_INFLIGHT, KafkaError._FATAL})


#: The codes of a request the brokers did not answer: a time-out, a lost connection.
UNANSWERED = frozenset(
    {KafkaError._TIMED_OUT, KafkaError._TRANSPORT, KafkaError._ALL_BROKERS_DOWN,
     KafkaError._MSG_TIMED_OUT, KafkaError.REQUEST_TIMED_OUT}
)  # fmt: skip


def is_fenced(error: KafkaError) -> bool:
    """Whether ``error`` says another producer with the same transactional id took over."""
    return error.code() in FENCED


def is_follow_on(error: KafkaError) -> bool:
    """Whether a delivery failure only follows from another one (module doc)."""
    return error.code() in FOLLOW_ON


@dataclass(frozen=True, slots=True)
class CommitFailure:
    """What a writer does about a failed transaction: abort it first when ``abort``, then
    raise :class:`.KafkaSinkError` with ``message``."""

    abort: bool
    message: str


def _checkpoint(checkpoint_id: int) -> str:
    if checkpoint_id == END_OF_INPUT:
        return "the commit at the end of input"
    return f"the commit of checkpoint {checkpoint_id}"


def commit_failure(
    where: str,
    checkpoint_id: int,
    transactional_id: str,
    prefix: str,
    error: KafkaError,
    rejected: str | None,
    transaction_timeout_ms: int,
    servers: str = "",
) -> CommitFailure:
    """The decision and the message for a transaction of ``checkpoint_id`` that failed with
    ``error`` (raised by ``begin_transaction``, ``produce`` or ``commit_transaction``).

    ``where`` names the operator, sink and subtask; ``rejected`` is the first record the
    broker rejected (a delivery report that is not a follow-on failure), if any. A fenced
    producer cannot abort (its error is fatal); an abortable error is aborted. The broker
    also fences a producer whose transaction outlived ``transaction_timeout_ms`` (its abort
    bumps the producer's epoch, KAFKA-6119), which the message names as the other cause. A
    time-out or lost connection names ``servers``, the brokers that did not answer."""
    what = f"{where}: {_checkpoint(checkpoint_id)} (transactional id {transactional_id!r})"
    if is_fenced(error):
        return CommitFailure(
            abort=False,
            message=(
                f"{what} failed: this producer was fenced: another writer with the "
                f"transactional id {transactional_id!r} initialized it after this one, "
                "such as another job (or a sink of another job) with the same "
                f"transactional-id prefix {prefix!r} on the same Kafka cluster, or an "
                "attempt of this job that outlived its restart; give every EXACTLY_ONCE "
                "KafkaSink writing to a cluster its own prefix. Or the transaction stayed "
                f"open longer than transaction.timeout.ms = {transaction_timeout_ms} and the "
                f"broker aborted it ({error.str()})"
            ),
        )
    cause = error.str() if rejected is None else f"{rejected} ({error.str()})"
    if error.txn_requires_abort():
        return CommitFailure(abort=True, message=f"{what} failed and was aborted: {cause}")
    if error.code() in UNANSWERED and servers:
        cause += f"; the brokers at {servers} did not answer in time (gone away, or overloaded?)"
    return CommitFailure(abort=False, message=f"{what} failed: {cause}")
