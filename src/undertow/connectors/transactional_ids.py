"""Transactional ids a sink claims on an external system, and the check that no two sinks of
one job claim the same ones.

An ``EXACTLY_ONCE`` Kafka sink's subtask ``i`` uses the transactional id ``<prefix>-<i>``. Two
such sinks with one prefix on one cluster share ids: each writer's ``init_transactions`` fences
the other's producer, whose commit then fails; the restart fences the other again, forever.
A sink says which ids it will use through the capability :class:`ClaimsTransactionalIds`;
the stream graph (:mod:`undertow.graph.stream_graph`) asks every sink operator before the job
runs and refuses a job in which :func:`conflicts` finds two claims on the same ids.

Pure: no I/O; clusters are compared by their bootstrap servers as written (two claims are on
one cluster when they name a common ``host:port``, compared case-insensitively).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol, runtime_checkable


@dataclass(frozen=True, slots=True)
class TransactionalIdClaim:
    """Every transactional id starting with ``prefix`` on the ``system`` cluster reached at
    ``bootstrap_servers`` (comma-separated ``host:port``s); ``topics`` are those the sink writes
    to (empty: chosen per record), for the error message."""

    system: str
    prefix: str
    bootstrap_servers: str
    topics: tuple[str, ...]

    @property
    def servers(self) -> frozenset[str]:
        """The bootstrap servers, each ``host:port`` stripped and lower-cased."""
        parts = (s.strip().lower() for s in self.bootstrap_servers.split(","))
        return frozenset(p for p in parts if p)

    def overlaps(self, other: TransactionalIdClaim) -> bool:
        """Whether both claim the same ids: one system, one prefix, a common server."""
        return (
            self.system == other.system
            and self.prefix == other.prefix
            and bool(self.servers & other.servers)
        )


@runtime_checkable
class ClaimsTransactionalIds(Protocol):
    """A capability of a sink (and of the operator that runs one): the transactional ids its
    writers will use. Called on the client thread while the job graph is built, before any
    writer exists; it must not do I/O."""

    def transactional_id_claim(self) -> TransactionalIdClaim | None:
        """The ids this sink claims, or ``None`` when it uses none (not ``EXACTLY_ONCE``)."""
        ...


@dataclass(frozen=True, slots=True)
class ClaimedBy:
    """A claim and the operator that makes it: its name and uid, as the job graph has them."""

    operator: str
    uid: str
    claim: TransactionalIdClaim

    def describe(self) -> str:
        topics = (
            "topics chosen per record"
            if not self.claim.topics
            else "topic" + ("s " if len(self.claim.topics) > 1 else " ")
            + ", ".join(repr(t) for t in self.claim.topics)
        )  # fmt: skip
        return f"operator '{self.operator}' (uid {self.uid!r}, writing to {topics})"


def conflicts(claims: Sequence[ClaimedBy]) -> list[str]:
    """One message per pair of operators whose claims overlap, in the order given."""
    found = []
    for i, first in enumerate(claims):
        for second in claims[i + 1 :]:
            if not first.claim.overlaps(second.claim):
                continue
            claim = first.claim
            found.append(
                f"two EXACTLY_ONCE {claim.system} sinks use the transactional-id prefix "
                f"{claim.prefix!r} on the cluster at {claim.bootstrap_servers!r}"
                + (
                    ""
                    if second.claim.bootstrap_servers == claim.bootstrap_servers
                    else f" (and {second.claim.bootstrap_servers!r})"
                )
                + f": {first.describe()} and {second.describe()}; their writers would "
                "fence each other's transactions at every commit; give each sink its own "
                "prefix (set_transactional_id_prefix)"
            )
    return found
