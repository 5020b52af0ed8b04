"""The ``KafkaSource`` enumerator: discovers partitions, makes splits, hands each to its owner.

Runs in the JobMaster, on its loop thread. :class:`SplitAssignment` is pure bookkeeping
(partitions ever discovered; splits not yet handed to their owner, ``split_owner``) and its
snapshot is the enumerator's checkpoint; :class:`KafkaSourceEnumerator` is the I/O shell: it
discovers at start and, with ``partition.discovery.interval.ms`` > 0, again when a reader asks
after the interval passed, every time off the loop (``call_async``). Splits of the first
discovery start at the starting offsets and go out in answer to a reader's request (one that
asked before they were known gets them when they are); later ones start at their earliest
offset and go out when found. Bounded sources then tell the reader there are no more. A first
discovery that fails, fails the job; a later one only when the error is not the broker's (a
broker's is logged, and the next interval tries again).

The longer story: docs/design.md, "Module notes", under this module's name.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

from undertow.connectors.kafka.admin import KafkaAdmin, KafkaSourceError, Subscription
from undertow.connectors.kafka.assignment import split_owner
from undertow.connectors.kafka.offsets import (
    KafkaOffsetsInitializer,
    KafkaTopicPartition,
    OffsetLookup,
    OffsetResolutionError,
    resolve,
)
from undertow.connectors.kafka.split import KafkaPartitionSplit
from undertow.connectors.source import (
    FirstDiscovery,
    SplitEnumerator,
    SplitEnumeratorContext,
    restore_discovery_state,
)

log = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class KafkaEnumeratorState:
    """The enumerator's checkpoint (format ``version`` 2; :func:`restore_state` reads 1)."""

    version: int
    discovered: frozenset[KafkaTopicPartition]
    pending: tuple[KafkaPartitionSplit, ...]
    #: The first discovery ended (a checkpoint taken while it ran redoes it on restore).
    initial_discovery_done: bool


class SplitAssignment:
    """Pure bookkeeping of discovered partitions and undelivered splits (module doc)."""

    def __init__(self, parallelism: int, state: KafkaEnumeratorState | None = None) -> None:
        self.parallelism = parallelism
        self.discovered: set[KafkaTopicPartition] = set(state.discovered) if state else set()
        self._pending: dict[int, list[KafkaPartitionSplit]] = {}
        for split in state.pending if state else ():
            self._keep(split)

    def _keep(self, split: KafkaPartitionSplit) -> None:
        owner = split_owner(split.topic_partition, self.parallelism)
        self._pending.setdefault(owner, []).append(split)

    def unknown(self, partitions: Iterable[KafkaTopicPartition]) -> list[KafkaTopicPartition]:
        """The partitions in ``partitions`` not discovered before, sorted."""
        return sorted(set(partitions) - self.discovered)

    def add(self, splits: Iterable[KafkaPartitionSplit]) -> None:
        """New splits (of partitions not discovered before) to hand to their owners."""
        for split in splits:
            tp = split.topic_partition
            if tp in self.discovered:
                raise ValueError(f"partition {tp} was discovered before")
            self.discovered.add(tp)
            self._keep(split)

    def take(self, subtask: int) -> list[KafkaPartitionSplit]:
        """The pending splits ``subtask`` owns, now delivered (sorted by partition)."""
        return sorted(self._pending.pop(subtask, []), key=lambda s: s.topic_partition)

    def snapshot(self, initial_discovery_done: bool = True) -> KafkaEnumeratorState:
        pending = tuple(
            sorted(
                (s for ss in self._pending.values() for s in ss), key=lambda s: s.topic_partition
            )
        )
        return KafkaEnumeratorState(2, frozenset(self.discovered), pending, initial_discovery_done)


@dataclass(frozen=True, slots=True)
class EnumeratorSettings:
    """What the enumerator needs from the source's configuration."""

    subscription: Subscription
    starting: KafkaOffsetsInitializer
    stopping: KafkaOffsetsInitializer | None
    bounded: bool
    #: ``partition.discovery.interval.ms``; <= 0: discover once
    discovery_interval_ms: int


class KafkaSourceEnumerator(SplitEnumerator[KafkaPartitionSplit]):
    """The I/O shell around :class:`SplitAssignment` (module doc). JobMaster loop only."""

    def __init__(
        self,
        context: SplitEnumeratorContext[KafkaPartitionSplit],
        settings: EnumeratorSettings,
        admin_factory: Callable[[], KafkaAdmin],
        offsets_factory: Callable[[KafkaAdmin], OffsetLookup],
        state: KafkaEnumeratorState | None = None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.context = context
        self.settings = settings
        self._admin_factory = admin_factory
        self._offsets_factory = offsets_factory
        self._admin: KafkaAdmin | None = None
        self.clock = clock
        self.assignment = SplitAssignment(context.current_parallelism(), state)
        #: Ended (or restored as ended); the readers that ask before it ends wait for it.
        self._first = FirstDiscovery(state is not None and state.initial_discovery_done)
        self._last_discovery: float | None = None
        #: A discovery is running (:meth:`start`, :meth:`_discover_later`); its handler clears it.
        self._discovering = False
        self._closed = False

    @property
    def periodic(self) -> bool:
        return not self.settings.bounded and self.settings.discovery_interval_ms > 0

    def _lookup(self) -> tuple[KafkaAdmin, OffsetLookup]:
        if self._admin is None:
            self._admin = self._admin_factory()
        return self._admin, self._offsets_factory(self._admin)

    def start(self) -> None:
        """The first discovery (unless a restored checkpoint says it ended), off the loop like
        every later one (Flink's ``start``): the broker round trips wait up to
        ``default.api.timeout.ms`` for a broker that is slow or gone, and the JobMaster's loop
        must serve REST, checkpoint triggers and a cancel meanwhile. Readers that ask before
        it ended wait for its splits (:meth:`handle_split_request`)."""
        if self._first.done:
            return
        self._last_discovery = self.clock()
        self._discovering = True
        known = frozenset(self.assignment.discovered)
        self.context.call_async(lambda: self._new_splits(known, initial=True), self._first_found)

    def _first_found(
        self, splits: list[KafkaPartitionSplit] | None, error: BaseException | None
    ) -> None:
        """The first discovery's handler: a failure (broker down, topic missing) is raised,
        which fails the job (the JobMaster's context; Flink's handler throws too); else the
        readers that asked meanwhile get their splits, in the order they asked."""
        self._discovering = False
        if self._closed:
            return
        if error is not None:  # the broker's error names its servers; any other, its kind
            what = str(error) if isinstance(error, KafkaSourceError) else repr(error)
            raise KafkaSourceError(
                f"KafkaSource ({self.settings.subscription.describe()}): the first partition "
                f"discovery failed: {what}"
            ) from error
        self.assignment.add(splits or [])
        for subtask in self._first.end():
            self._hand_out(subtask)

    def _new_splits(
        self, known: frozenset[KafkaTopicPartition], initial: bool
    ) -> list[KafkaPartitionSplit]:
        """Splits of the partitions not in ``known``; any thread (touches no assignment)."""
        admin, lookup = self._lookup()
        new = sorted(set(admin.partitions(self.settings.subscription)) - known)
        if not new:
            return []
        start_at = self.settings.starting if initial else KafkaOffsetsInitializer.earliest()
        try:
            starts = resolve(start_at, new, lookup)
            stops = resolve(self.settings.stopping, new, lookup) if self.settings.stopping else {}
        except OffsetResolutionError as err:
            raise KafkaSourceError(
                f"KafkaSource ({self.settings.subscription.describe()}): {err}"
            ) from err
        return [KafkaPartitionSplit(tp, starts[tp], stops.get(tp)) for tp in new]

    def _discover_later(self) -> None:
        """A periodic discovery, its broker calls off the enumerator's thread (Flink's
        ``callAsync``): a broker that went away holds them up to ``default.api.timeout.ms``,
        and the JobMaster's loop, which hosts this enumerator, must go on with heartbeats,
        checkpoints and cancels meanwhile. One at a time; the new splits go to their readers
        as soon as they are known."""
        self._last_discovery = self.clock()
        self._discovering = True
        known = frozenset(self.assignment.discovered)
        self.context.call_async(lambda: self._new_splits(known, initial=False), self._discovered)

    def _discovered(
        self, splits: list[KafkaPartitionSplit] | None, error: BaseException | None
    ) -> None:
        self._discovering = False
        if self._closed:
            return
        if isinstance(error, KafkaSourceError):  # the broker may be back at the next interval
            log.warning("KafkaSource: partition discovery failed, retrying later: %s", error)
            return
        if error is not None:  # not the broker's (a bug): raised, which fails the job at once
            raise KafkaSourceError(
                f"KafkaSource ({self.settings.subscription.describe()}): partition discovery "
                f"failed: {error!r}"
            ) from error
        if splits:
            self.assignment.add(splits)
            log.info("KafkaSource: discovered %d new partitions: %s", len(splits),
                     [s.topic_partition for s in splits[:10]])  # fmt: skip
            for subtask in self.context.registered_readers():
                for split in self.assignment.take(subtask):
                    self.context.assign_split(split, subtask)

    def _discovery_due(self) -> bool:
        if not self.periodic:
            return False
        if self._last_discovery is None:
            return True
        return (self.clock() - self._last_discovery) * 1000 >= self.settings.discovery_interval_ms

    def handle_split_request(self, subtask_id: int, requester_hostname: str | None) -> None:
        if self._first.defer(subtask_id):  # the first discovery runs: answered when it ends
            return
        if self._discovery_due() and not self._discovering:
            self._discover_later()
        self._hand_out(subtask_id)

    def _hand_out(self, subtask_id: int) -> None:
        for split in self.assignment.take(subtask_id):
            self.context.assign_split(split, subtask_id)
        if not self.periodic:
            self.context.signal_no_more_splits(subtask_id)

    def add_splits_back(self, splits: list[KafkaPartitionSplit], subtask_id: int) -> None:
        for split in splits:
            self.assignment._keep(split)

    def snapshot_state(self, checkpoint_id: int) -> KafkaEnumeratorState:
        return self.assignment.snapshot(self._first.done)

    def close(self) -> None:
        self._closed = True
        self._admin = None


def restore_state(checkpoint: Any, what: str) -> KafkaEnumeratorState:
    """The state of a checkpoint of format 2, or of format 1 (no ``initial_discovery_done``:
    the first discovery then ended before the job ran, so before any checkpoint)."""
    return restore_discovery_state(checkpoint, KafkaEnumeratorState, what, "Kafka source")
