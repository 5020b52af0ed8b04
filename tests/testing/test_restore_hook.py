"""The restore console line and the restore hook with the no-restore control (runtime/master:
restore_report, restore_hook; undertow.testing.oracle.no_restore)."""

from __future__ import annotations

from undertow.core.units import human_bytes
from undertow.runtime.checkpoint.metadata import CheckpointMetadata
from undertow.runtime.master.restore_hook import plan_to_apply, set_restore_filter
from undertow.runtime.master.restore_report import restore_line
from undertow.testing.oracle import no_restore


def _meta(unaligned: bool, savepoint: bool = False) -> CheckpointMetadata:
    return CheckpointMetadata("job", 7, 1, 2, savepoint, (),
                              properties={"unaligned": str(unaligned).lower()})  # fmt: skip


def test_restore_line() -> None:
    assert restore_line(_meta(True), 40) == (
        "restored from checkpoint 7 (unaligned, 0 B in-flight) in 40 ms"
    )
    assert restore_line(_meta(False, savepoint=True), 3) == (
        "restored from savepoint 7 (aligned, 0 B in-flight) in 3 ms"
    )
    assert human_bytes(int(1.2 * 1024 * 1024)) == "1.2 MiB" and human_bytes(512) == "512 B"


def test_the_hook_passes_plans_through_unless_the_control_is_on() -> None:
    class Plan:
        metadata = _meta(True)

    plan = Plan()
    assert plan_to_apply(plan) is plan and plan_to_apply(None) is None
    with no_restore() as ignored:
        assert plan_to_apply(plan) is None
    assert ignored == [7]
    assert plan_to_apply(plan) is plan
    set_restore_filter(None)
