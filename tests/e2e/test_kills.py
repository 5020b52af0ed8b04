"""The kill tests' first-attempt hold (tests/e2e/kills.py), without a job: attempt 0 is paced
until armed, then blocked until released; later attempts pass at once."""

from __future__ import annotations

import threading
import time
from pathlib import Path
from types import SimpleNamespace

from .kills import FirstAttemptHold


def _opened(hold: FirstAttemptHold, attempt: int) -> FirstAttemptHold:
    hold.open(SimpleNamespace(get_attempt_number=lambda: attempt))
    return hold


def test_the_first_attempt_is_held_from_arming_to_release(tmp_path: Path) -> None:
    hold = _opened(FirstAttemptHold(tmp_path / "hold", pace_s=0.01), attempt=0)
    started = time.monotonic()
    assert hold.map("a") == "a"
    assert time.monotonic() - started >= 0.01  # paced while not armed
    hold.arm()
    passed = threading.Event()
    held = threading.Thread(target=lambda: (hold.map("b"), passed.set()), daemon=True)
    held.start()
    assert not passed.wait(0.3), "an armed first attempt went on before the release"
    hold.release()
    assert passed.wait(5)
    held.join(5)
    assert hold.map("c") == "c"  # released: no pace any more


def test_later_attempts_are_never_held(tmp_path: Path) -> None:
    hold = FirstAttemptHold(tmp_path / "hold", pace_s=10.0)
    hold.arm()  # armed and not released: attempt 0 would block
    later = _opened(hold, attempt=1)
    started = time.monotonic()
    batch = SimpleNamespace(num_rows=1000)
    assert later.map("x") == "x" and later.map_batches(batch) is batch
    assert time.monotonic() - started < 1.0
