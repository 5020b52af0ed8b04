"""Two checkpoints in flight at once, for certain: a checkpoint's acknowledgement held back
until the next checkpoint has been triggered.

Concurrent checkpoints overlap only when one takes longer than the interval, which a quiet
machine may never do. :class:`OverlapHold`'s map blocks its last subtask in the pre-barrier
hook of checkpoint ``m`` until the test reports ``m + 1`` triggered (``triggered``, from the
REST API): ``m``'s last acknowledgement then comes after ``m + 1``'s trigger.
A hold blocks the subtask's whole worker, so that subtask must be alone on its worker and
nothing may wait for its output, or ``m`` is subsumed where barriers wait (docs/design.md,
"Module notes"): ``build_pipeline(overlap_hold=...)`` gives it one input channel, a slot of
its own (parallelism ``2p + 1``) and nothing downstream; give the job a worker per slot.

Threading: the map runs on its task's thread; what the test and the subtasks share is in
files, so it works across processes.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

from undertow.api.functions import MapFunction, RuntimeContext

#: Seconds a hold waits at most for the next checkpoint's trigger (then it counts as failed).
HOLD_MAX_S = 5.0
#: How often a hold looks for the trigger.
POLL_S = 0.002


class OverlapHold:
    """The files shared by the test and the last subtask of :meth:`function`'s operator.
    Pickled with the job."""

    def __init__(self, directory: Path | str, max_holds: int = 20,
                 hold_max_s: float = HOLD_MAX_S) -> None:  # fmt: skip
        if max_holds < 1 or hold_max_s <= 0:
            raise ValueError(f"OverlapHold: max_holds >= 1 and hold_max_s > 0, got {max_holds},"
                             f" {hold_max_s}")  # fmt: skip
        self.directory = str(directory)
        Path(self.directory).mkdir(parents=True, exist_ok=True)
        self.max_holds = max_holds
        self.hold_max_s = hold_max_s

    def function(self) -> OverlapHoldMap:
        return OverlapHoldMap(self)

    # -- the test's side ---------------------------------------------------------------------
    def triggered(self, checkpoint_id: int) -> None:
        """Checkpoint ``checkpoint_id`` was triggered (the test saw it in the REST API)."""
        self._file(f"triggered-{checkpoint_id}").touch()

    def completed(self, checkpoint_id: int, in_flight_bytes: int) -> None:
        """Checkpoint ``checkpoint_id`` completed with ``in_flight_bytes`` of channel state
        (the REST API's ``persisted_data``): holds start after one that had some."""
        if in_flight_bytes > 0:
            self._file(f"data-{checkpoint_id}").touch()

    def overlapped(self) -> tuple[int, int] | None:
        """``(m, m + 1)``: both completed and ``m`` was held until ``m + 1`` was triggered
        (None: no hold got that far)."""
        path = self._file("overlapped")
        if not path.exists():
            return None
        held = int(path.read_text())
        return held, held + 1

    def holds(self) -> list[str]:
        """How each hold went, in order: ``"<m> until <m + 1> triggered"`` or ``"<m> timed
        out"``, then what became of the two checkpoints (``": overlapped"``, ``": <m> aborted"``
        ...), if the held subtask was told."""
        found = sorted(Path(self.directory).glob("hold-*"), key=lambda p: int(p.name[5:]))
        held = [path.read_text() for path in found]
        return [f"{text}: {self._outcome(text)}" if self._outcome(text) else text
                for text in held]  # fmt: skip

    def _outcome(self, hold: str) -> str:
        path = self._file(f"outcome-{hold.split()[0]}")
        return path.read_text() if path.exists() else ""

    def record_outcome(self, checkpoint_id: int, outcome: str) -> None:
        """What became of held ``checkpoint_id`` and its successor (for :meth:`holds`)."""
        self._file(f"outcome-{checkpoint_id}").write_text(outcome)

    # -- the held subtask's side -------------------------------------------------------------
    def is_triggered(self, checkpoint_id: int) -> bool:
        return self._file(f"triggered-{checkpoint_id}").exists()

    def data_flowed(self) -> bool:
        """Whether a checkpoint completed with in-flight data (so records flow)."""
        return any(True for _ in Path(self.directory).glob("data-*"))

    def hold(self, checkpoint_id: int) -> bool:
        """Block until ``checkpoint_id + 1`` was triggered, at most ``hold_max_s``; record how
        the hold ended and return whether the trigger came."""
        deadline = time.monotonic() + self.hold_max_s
        while not self.is_triggered(checkpoint_id + 1) and time.monotonic() < deadline:
            time.sleep(POLL_S)
        came = self.is_triggered(checkpoint_id + 1)
        ended = f"{checkpoint_id} until {checkpoint_id + 1} triggered" if came else (
            f"{checkpoint_id} timed out")  # fmt: skip
        self._file(f"hold-{len(self.holds())}").write_text(ended)
        return came

    def may_hold(self) -> bool:
        return self.overlapped() is None and len(self.holds()) < self.max_holds

    def record_overlap(self, checkpoint_id: int) -> None:
        self.record_outcome(checkpoint_id, "overlapped")
        partial = self._file(f"overlapped.{checkpoint_id}")
        partial.write_text(str(checkpoint_id))
        partial.replace(self._file("overlapped"))  # a reader never sees it half written

    def _file(self, name: str) -> Path:
        return Path(self.directory) / name


class OverlapHoldMap(MapFunction):
    """Identity; on its operator's last subtask, holds a checkpoint as :class:`OverlapHold`
    says.

    A hold starts at the barrier of ``m`` once ``m - 1`` was told completed or aborted (with two
    in flight ``m + 1`` would not be triggered) and the test reported an earlier checkpoint
    with in-flight data (records flow, under backpressure). It succeeds when ``m`` and then
    ``m + 1`` are told completed; an abort of either, or a later completion first, lets it hold
    again."""

    def __init__(self, hold: OverlapHold) -> None:
        self.hold = hold
        self._holds = False
        self._latest_resolved = 0
        self._data_flows = False
        #: The checkpoint held last, while its outcome and its successor's are open.
        self._watching: int | None = None
        self._held_completed = False

    def open(self, runtime_context: RuntimeContext) -> None:
        last = runtime_context.get_number_of_parallel_subtasks() - 1
        self._holds = runtime_context.get_index_of_this_subtask() == last
        self._latest_resolved = 0
        self._watching = None

    def map(self, value: Any) -> Any:
        return value

    def prepare_snapshot_pre_barrier(self, checkpoint_id: int) -> None:
        if not self._holds or self._watching is not None:
            return
        if self._latest_resolved != checkpoint_id - 1 or not self.hold.may_hold():
            return
        self._data_flows = self._data_flows or self.hold.data_flowed()
        if not self._data_flows:
            return
        if self.hold.hold(checkpoint_id):
            self._watching, self._held_completed = checkpoint_id, False

    def notify_checkpoint_complete(self, checkpoint_id: int) -> None:
        self._latest_resolved = max(self._latest_resolved, checkpoint_id)
        held = self._watching
        if held is None:
            return
        if checkpoint_id == held:
            self._held_completed = True
        elif checkpoint_id == held + 1 and self._held_completed:
            self.hold.record_overlap(held)
            self._watching = None
        elif checkpoint_id > held:  # one of the two did not complete: hold again
            self._give_up(held, f"told {checkpoint_id} completed first")

    def notify_checkpoint_aborted(self, checkpoint_id: int) -> None:
        self._latest_resolved = max(self._latest_resolved, checkpoint_id)
        held = self._watching
        if held is not None and checkpoint_id in (held, held + 1):
            self._give_up(held, f"{checkpoint_id} aborted")

    def _give_up(self, held: int, why: str) -> None:
        self.hold.record_outcome(held, why)
        self._watching = None
