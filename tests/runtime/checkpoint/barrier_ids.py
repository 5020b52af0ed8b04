"""Checkpoint ids for the barriers a model upstream sends, shared by the barrier handlers'
Hypothesis state machines (tests/runtime/checkpoint/test_barrier_handler.py and
test_alternating_handler.py). Ids strictly increase per channel; across channels they may
lag, repeat the newest one or skip ahead, as barriers from different upstreams do."""

from __future__ import annotations


def next_checkpoint_id(last: int, newest: int, how: str) -> int:
    """The id of a channel's next barrier, after its own ``last`` with ``newest`` the highest
    any channel sent: ``"current"`` the newest one (if the channel has not sent it, else one
    past its own), ``"next"`` one past both, ``"skip"`` two past both, otherwise
    (``"lagging"``) one past its own, which may be older than the newest."""
    if how == "current":
        return newest if newest > last else last + 1
    if how == "next":
        return max(newest, last) + 1
    if how == "skip":
        return max(newest, last) + 2
    return last + 1
