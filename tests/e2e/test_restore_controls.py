"""The no-restore control (issue 12): every restore scenario, run with restores that ignore
their snapshot (:func:`undertow.testing.oracle.no_restore`), must FAIL.

A bounded deterministic source replayed from its start gives a perfect tally, so a restore
test can pass although nothing was restored. Here each scenario of the restore tests runs
once more, on ``local`` (the fault is in the JobMaster, the same on every target; worker
processes spread these CPU-bound scenarios over the cores, where one GIL serializes them),
with the fault on: the oracle or the restore-evidence assertions must catch it
(``AssertionError``), and the fault must actually have ignored a snapshot. The scenario bodies
are the restore tests' own functions, not copies.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from undertow.testing.oracle import no_restore

from . import (
    test_claim_modes,
    test_claim_reuse,
    test_file_sink_resume,
    test_heap_incremental_checkpoints,
    test_incremental_checkpoints,
    test_oracle,
    test_recovery_path,
    test_rocksdb_timers,
    test_savepoint_formats,
    test_savepoints,
    test_unaligned_checkpoints,
    test_unaligned_savepoints,
)
from .conftest import EnvFactory

Scenario = Callable[[EnvFactory, Path, pytest.CaptureFixture[str]], Any]

SCENARIOS: dict[str, Scenario] = {
    "oracle-scheduled-failures": test_oracle.scenario_scheduled_failures,
    "oracle-map-then-snapshot": test_oracle.scenario_failing_map_then_failing_snapshot,
    "oracle-ordered": test_oracle.scenario_ordered_topology,
    "unaligned-scheduled-failures": test_unaligned_checkpoints.scenario_scheduled_failures,
    "aligned-timeout-scheduled-failures": (
        test_unaligned_checkpoints.scenario_scheduled_failures_aligned_timeout
    ),
    "unaligned-rescaled-channel-state": test_unaligned_checkpoints.scenario_rescale_up,
    "savepoint-stop-then-resume": test_savepoints.scenario_stop_without_drain_then_resume,
    "unaligned-savepoint-stop-then-rescale": (
        test_unaligned_savepoints.scenario_stop_unaligned_then_rescale
    ),
    "no-claim": test_claim_modes.scenario_no_claim,
    "claim": test_claim_modes.scenario_claim,
    "new-job-resumes": test_recovery_path.scenario_new_job_resumes,
    "file-sink-resume": test_file_sink_resume.scenario_scheduled_failures,
    "incremental-rocksdb-scheduled-failures": (
        test_incremental_checkpoints.scenario_incremental_scheduled_failures
    ),
    "incremental-rocksdb-no-claim": test_incremental_checkpoints.scenario_no_claim,
    "incremental-rocksdb-claim": test_incremental_checkpoints.scenario_claim,
    "incremental-rocksdb-claim-reuse": test_claim_reuse.scenario_claim_reuses,
    "incremental-rocksdb-rescale": test_incremental_checkpoints.scenario_rescale,
    "native-savepoint-resume": test_savepoint_formats.scenario_native_resume,
    "native-savepoint-rescale": test_savepoint_formats.scenario_native_rescale,
    "incremental-heap-scheduled-failures": (
        test_heap_incremental_checkpoints.scenario_heap_incremental_scheduled_failures
    ),
    "incremental-heap-rescale": (
        test_heap_incremental_checkpoints.scenario_heap_incremental_rescale
    ),
    "incremental-heap-claim": test_heap_incremental_checkpoints.scenario_heap_incremental_claim,
    "rocksdb-timers-windows": test_rocksdb_timers.scenario_window_timers_scheduled_failures,
    "rocksdb-timers-rescale": test_rocksdb_timers.scenario_window_timers_rescale,
}

#: The kill scenarios need worker processes: run on ``local``.
KILL_SCENARIOS: dict[str, Scenario] = {
    "oracle-random-kill": test_oracle.scenario_random_worker_kill,
    "unaligned-random-kill": test_unaligned_checkpoints.scenario_random_kill,
    "file-sink-kill": test_file_sink_resume.scenario_worker_killed,
    "incremental-rocksdb-kill": test_incremental_checkpoints.scenario_incremental_worker_kill,
    "incremental-heap-kill": (
        test_heap_incremental_checkpoints.scenario_heap_incremental_worker_kill
    ),
}


def _fails_without_restore(
    scenario: Scenario, make_env: EnvFactory, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    with no_restore() as ignored, pytest.raises(AssertionError) as caught:
        scenario(make_env, tmp_path, capsys)
    assert ignored, "the scenario restored nothing, so the control proves nothing"
    print(f"caught without restore (ignored checkpoints {ignored}): {caught.value!s:.300}")


@pytest.mark.parametrize("target", ["local"])
@pytest.mark.parametrize("name", list(SCENARIOS))
def test_restore_scenario_fails_without_restore(
    make_env: EnvFactory, tmp_path: Path, capsys: pytest.CaptureFixture[str], name: str
) -> None:
    _fails_without_restore(SCENARIOS[name], make_env, tmp_path, capsys)


@pytest.mark.parametrize("target", ["local"])
@pytest.mark.parametrize("name", list(KILL_SCENARIOS))
def test_kill_scenario_fails_without_restore(
    make_env: EnvFactory, tmp_path: Path, capsys: pytest.CaptureFixture[str], name: str
) -> None:
    _fails_without_restore(KILL_SCENARIOS[name], make_env, tmp_path, capsys)
