"""Worker log lines say where they come from: job and worker set once, each subtask's
coroutine adds its own name, and the handler is gone once the worker ends."""

from __future__ import annotations

import asyncio
import io
import logging

from undertow.runtime.worker.log_context import (
    add_log_context,
    log_context,
    set_log_context,
    worker_log_handler,
)

log = logging.getLogger("undertow.test.log_context")


def test_each_subtasks_lines_carry_the_worker_context_and_its_own_name() -> None:
    out = io.StringIO()

    async def subtask(name: str) -> None:
        add_log_context(name)
        await asyncio.sleep(0)
        log.warning("hello from %s", name)

    async def worker() -> None:
        set_log_context("job 3f2a9c1e worker 1")
        await asyncio.gather(subtask("Map (1/2)"), subtask("Map (2/2)"))
        log.warning("worker line")
        assert log_context() == "job 3f2a9c1e worker 1"  # the subtasks' names stayed theirs

    with worker_log_handler(out):
        asyncio.run(worker())
    lines = [line.split(" WARNING ", 1)[1] for line in out.getvalue().splitlines()]
    assert lines == [
        "[job 3f2a9c1e worker 1 Map (1/2)] undertow.test.log_context: hello from Map (1/2)",
        "[job 3f2a9c1e worker 1 Map (2/2)] undertow.test.log_context: hello from Map (2/2)",
        "[job 3f2a9c1e worker 1] undertow.test.log_context: worker line",
    ]


def test_the_handler_is_removed_and_the_root_level_restored_afterwards() -> None:
    root = logging.getLogger()
    before_handlers, before_level = list(root.handlers), root.level
    out = io.StringIO()
    with worker_log_handler(out, level=logging.INFO) as handler:
        assert handler in root.handlers
        logging.getLogger("undertow.test.log_context").info("no context here")
    assert root.handlers == before_handlers and root.level == before_level
    assert out.getvalue().endswith("INFO [-] undertow.test.log_context: no context here\n")
