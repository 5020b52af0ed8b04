"""The driver's end of each worker's control connection, and the restore a deployment carries.

:func:`serve_worker` runs one connection from accept to close: the mutual handshake with the
current attempt's secret (a worker of an older attempt fails it), then every message of the
current attempt goes to :func:`~undertow.runtime.master.attempt.dispatch`; a message of an
older attempt is dropped (fencing). A connection that breaks, or a worker that goes away
while its attempt runs, fails that attempt, naming the worker and how it exited.
:func:`restore_assignment` is what a ``Deploy`` tells the workers to restore.

Threading: the JobMaster's asyncio loop only (one :func:`serve_worker` per connection);
:class:`ControlHost` is what it asks of the JobMaster there.
"""

from __future__ import annotations

import asyncio
import logging
from typing import Protocol

from undertow.core.errors import JobExecutionError
from undertow.core.types import AttemptNumber
from undertow.runtime.checkpoint.restore_plan import RestorePlan
from undertow.runtime.control.connection import ControlConnection
from undertow.runtime.control.messages import RestoreAssignment, WorkerMessage
from undertow.runtime.master.attempt import Attempt, AttemptHost, dispatch, now_ms
from undertow.runtime.master.launcher import WorkerLauncher
from undertow.runtime.master.settings import MasterSettings
from undertow.runtime.network.framing import attempt_secret, server_handshake

log = logging.getLogger(__name__)


class ControlHost(AttemptHost, Protocol):
    """What a worker's control connection needs of the JobMaster (on its loop)."""

    job_id: str
    #: The job's secret; each attempt's key is derived from it (:func:`attempt_secret`).
    secret: bytes
    #: The current attempt's number (the handshake's key and the fence).
    attempt: AttemptNumber
    settings: MasterSettings
    launcher: WorkerLauncher

    @property
    def current_attempt(self) -> Attempt | None:
        """The attempt running now, None between attempts."""


async def serve_worker(
    host: ControlHost, reader: asyncio.StreamReader, writer: asyncio.StreamWriter
) -> None:
    """Serve one worker's control connection until it closes (see the module docstring)."""
    try:
        index = await server_handshake(reader, writer, attempt_secret(host.secret, host.attempt))
    except Exception as err:
        log.warning("job %s: dropped a control connection: %s", host.job_id, err)
        writer.close()
        return
    conn = ControlConnection(reader, writer, f"worker {index}",
                             host.settings.max_frame_size)  # fmt: skip
    attempt: Attempt | None = None
    try:
        while True:
            msg = await conn.recv()
            if msg is None:
                break
            if not isinstance(msg, WorkerMessage):
                log.warning("job %s: unexpected control message %r from worker %d",
                            host.job_id, msg, index)  # fmt: skip
                continue
            current = host.current_attempt
            if current is None or msg.attempt != current.number:
                continue  # fencing: a message from an older attempt
            attempt = current
            attempt.heartbeats.seen(index, now_ms())
            dispatch(host, attempt, index, conn, msg)
    except asyncio.CancelledError:
        return
    except Exception as err:
        if attempt is not None:
            attempt.end(JobExecutionError(f"control connection to worker {index} failed: {err}"))
        return
    finally:
        conn.close()
        if attempt is not None:
            attempt.disconnected.add(index)
    if attempt is not None and not attempt.done.is_set():
        loop = asyncio.get_running_loop()
        how = await loop.run_in_executor(None, host.launcher.describe_exit, index)
        host.fail(attempt, JobExecutionError(f"worker {index} exited unexpectedly ({how})"))


def restore_assignment(restore: RestorePlan | None, job_id: str) -> RestoreAssignment | None:
    """What the workers of job ``job_id`` restore from ``restore`` (None: start empty)."""
    if restore is None:
        return None
    return RestoreAssignment(restore.metadata.checkpoint_id, restore.checkpoint_dir,
                             restore.job_id, restore.subtask_files,
                             restore.channel_state,
                             restore.finished_vertices, restore.reemit,
                             restore.rescaled_gates,
                             restore.rescaled_outputs, restore.fault,
                             is_own_checkpoint(restore, job_id))  # fmt: skip


def is_own_checkpoint(restore: RestorePlan, job_id: str) -> bool:
    """``restore`` is one of this job's own retained checkpoints (a failover restore): not a
    snapshot restored from a path (``pointer`` set, CLAIM or NO_CLAIM, whose files are the
    user's or of another job's directory). Only then may checkpoints during recovery refer to
    its channel-state files (the coordinator keeps what they refer to)."""
    return not restore.pointer and restore.job_id == job_id
