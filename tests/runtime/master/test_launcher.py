"""How many workers an attempt starts when the job does not say (``undertow.workers``)."""

from __future__ import annotations

import os

from undertow.runtime.master.launcher import default_num_workers


def test_a_configured_number_is_taken_as_it_is() -> None:
    assert default_num_workers(3, slots=1) == 3
    assert default_num_workers(64, slots=2) == 64


def test_unset_one_worker_per_slot_up_to_the_cpus_and_at_least_one() -> None:
    cpus = os.cpu_count() or 1
    assert default_num_workers(0, slots=1) == 1
    assert default_num_workers(0, slots=1000) == cpus
    assert default_num_workers(0, slots=0) == 1
