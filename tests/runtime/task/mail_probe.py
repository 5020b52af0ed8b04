"""What the mailbox-slicing tests share (test_slice_bounds.py, test_source_slicing.py): mails
posted to a running task from another thread, as a checkpoint trigger or an RPC arriving on a
socket, and how much work ran between each posting and its mail's running."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable

from undertow.runtime.task.stream_task import StreamTask

#: How long the first mail waits for ``start_after``, and the last for its running.
START_WITHIN_S = 10.0
RUN_WITHIN_S = 30.0


def post_mails_from_another_thread(
    task: StreamTask, mails: int, count: Callable[[], int],
    start_after: Callable[[], bool] = lambda: True,
) -> tuple[list[int], int]:  # fmt: skip
    """Blocks (call it on a thread: ``asyncio.to_thread``). Once ``start_after()`` (or after
    :data:`START_WITHIN_S`), posts ``mails`` mails to ``task``, one every 5 ms, and waits
    until the last one ran (at most :data:`RUN_WITHIN_S`). Returns for each mail that ran how
    many units (``count()``: records, rows, timers) ran between its posting and its running,
    and how many ran from the first posting to the last mail's running (the work went on
    while the mails came)."""
    deadline = time.monotonic() + START_WITHIN_S
    while not start_after() and time.monotonic() < deadline:
        time.sleep(0.001)
    waits: list[int] = []
    span: list[int] = []
    all_ran = threading.Event()
    for i in range(mails):
        time.sleep(0.005)
        posted = count()
        if i == 0:
            span.append(posted)

        def mail(posted: int = posted, last: bool = i == mails - 1) -> None:
            waits.append(count() - posted)
            if last:
                span.append(count())
                all_ran.set()

        task.post_threadsafe(mail)
    all_ran.wait(RUN_WITHIN_S)
    return waits, (span[-1] - span[0]) if len(span) == 2 else 0
