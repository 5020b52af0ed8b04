"""The order in which ``make test``'s pytest-xdist workers take the test groups: long first.

Under ``--dist loadgroup`` a worker takes one group (tests/conftest.py, ``_xdist_group``) at a
time, and pytest-xdist hands them out with the most tests first. The network namespaces'
group holds a single test of 80-140 s (tests/cluster: the oracle across hosts), so it went
out last and ran alone on one worker after the other had finished everything: the last 2 %
of the tests took about three minutes of a 16-minute run (fresh-clone CI, 2026-12-03).
:class:`LongGroupsFirst` hands out the groups named in :data:`LONG_GROUPS` first, then the
others as pytest-xdist does (most tests first, ties in collection order).

Only the queue of groups is reordered: a worker is sent the positions of its tests in its
own collection, which therefore stays as collected. Runs in the controller process only
(pytest-xdist makes its scheduler there).
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Sequence
from typing import Any

import pytest
from xdist.scheduler import LoadGroupScheduling

#: Groups whose tests take long however few they are: the network namespaces' cluster test
#: and Spark's standalone-cluster test module.
LONG_GROUPS = ("netns", "tests/deploy/test_spark_cluster.py")


def long_groups_first(queue: OrderedDict[str, Any], long_groups: Sequence[str]) -> None:
    """Move the groups of ``long_groups`` that ``queue`` holds to its front, in that order;
    the others keep theirs."""
    for scope in reversed(long_groups):
        if scope in queue:
            queue.move_to_end(scope, last=False)


class LongGroupsFirst(LoadGroupScheduling):
    """pytest-xdist's loadgroup handing out :attr:`long_groups` first."""

    long_groups: Sequence[str] = LONG_GROUPS

    def _assign_work_unit(self, node: Any) -> None:
        long_groups_first(self.workqueue, self.long_groups)
        super()._assign_work_unit(node)


def make_scheduler(config: pytest.Config, log: Any) -> LongGroupsFirst | None:
    """The scheduler for ``--dist loadgroup`` (``None``: pytest-xdist's own for other modes)."""
    if config.getvalue("dist") != "loadgroup":
        return None
    return LongGroupsFirst(config, log)
