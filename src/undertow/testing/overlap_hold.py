"""Two checkpoints in flight at once, for certain: a checkpoint's acknowledgement held back
until the next checkpoint has been triggered.

Concurrent checkpoints overlap only when one takes longer than the interval, which a quiet
machine may never do. :class:`OverlapHold`'s sink (the oracle's, last in its task) blocks its
task in the pre-barrier hook of checkpoint ``m`` until the test reports ``m + 1`` triggered
(:meth:`OverlapHold.triggered`, from the REST API): ``m``'s last acknowledgement then comes
after ``m + 1``'s trigger. ``m`` may still be subsumed by ``m + 1`` at a task that was
waiting for the held worker's barriers; then the sink holds again at a later checkpoint, at
most ``max_holds`` times, until ``m`` and ``m + 1`` both completed (:meth:`OverlapHold.overlapped`).

Threading: the sink runs on its task's thread and blocks the task's whole worker while it
holds; what the test and the subtasks share is in files, so it works across processes. The
longer story: docs/design.md, "Module notes", under this module's name.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

from undertow.api.functions import KeyedProcessFunction, RuntimeContext
from undertow.testing._oracle_functions import VerifyingSink

#: Seconds a hold waits at most for the next checkpoint's trigger (then it counts as failed).
HOLD_MAX_S = 5.0
#: How often a hold looks for the trigger.
POLL_S = 0.002


class OverlapHold:
    """The files shared by the test and the held subtask ``subtask`` of :meth:`sink`'s
    operator. Pickled with the job."""

    def __init__(self, directory: Path | str, subtask: int = 0, max_holds: int = 5,
                 hold_max_s: float = HOLD_MAX_S) -> None:  # fmt: skip
        if subtask < 0 or max_holds < 1 or hold_max_s <= 0:
            raise ValueError(f"OverlapHold: subtask >= 0, max_holds >= 1 and hold_max_s > 0, "
                             f"got {subtask}, {max_holds}, {hold_max_s}")  # fmt: skip
        self.directory = str(directory)
        Path(self.directory).mkdir(parents=True, exist_ok=True)
        self.subtask = subtask
        self.max_holds = max_holds
        self.hold_max_s = hold_max_s

    def sink(self, records_per_key: int, spin_s: float = 0.0, job_tag: int = 0,
             evidence_dir: str | None = None) -> HoldingVerifyingSink:  # fmt: skip
        """The oracle's :class:`VerifyingSink`, holding as this hold says."""
        return HoldingVerifyingSink(self, records_per_key, spin_s=spin_s, job_tag=job_tag,
                                    evidence_dir=evidence_dir)  # fmt: skip

    # -- the test's side ---------------------------------------------------------------------
    def triggered(self, checkpoint_id: int) -> None:
        """Checkpoint ``checkpoint_id`` was triggered (the test saw it in the REST API)."""
        self._file(f"triggered-{checkpoint_id}").touch()

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


class HoldingVerifyingSink(VerifyingSink):
    """The oracle's sink; on the hold's subtask it holds a checkpoint as :class:`OverlapHold`
    says.

    A hold starts at the barrier of ``m`` once records went through and ``m - 1`` was told
    completed or aborted (an older checkpoint still pending could need the held worker to
    finish, and keep ``m + 1`` from being triggered). It succeeds when ``m`` and then ``m + 1``
    are told completed; an abort of either, or a later completion first, lets it hold again."""

    def __init__(self, hold: OverlapHold, records_per_key: int, spin_s: float = 0.0,
                 job_tag: int = 0, evidence_dir: str | None = None) -> None:  # fmt: skip
        super().__init__(records_per_key, spin_s=spin_s, job_tag=job_tag,
                         evidence_dir=evidence_dir)  # fmt: skip
        self.hold = hold
        self._holds = False
        self._saw_record = False
        self._latest_resolved = 0
        #: The checkpoint held last, while its outcome and its successor's are open.
        self._watching: int | None = None
        self._held_completed = False

    def open(self, runtime_context: RuntimeContext) -> None:
        super().open(runtime_context)
        self._holds = runtime_context.get_index_of_this_subtask() == self.hold.subtask
        self._saw_record = False
        self._latest_resolved = 0
        self._watching = None

    def process_element(self, value: Any, ctx: KeyedProcessFunction.Context) -> None:
        super().process_element(value, ctx)
        self._saw_record = True

    def prepare_snapshot_pre_barrier(self, checkpoint_id: int) -> None:
        if not self._holds or self._watching is not None or not self._saw_record:
            return
        if self._latest_resolved != checkpoint_id - 1 or not self.hold.may_hold():
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
