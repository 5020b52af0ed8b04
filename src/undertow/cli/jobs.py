"""Flink's job verbs against a REST address: ``undertow list``, ``cancel`` and ``savepoint``.

* ``undertow list [REST_URL]`` prints the jobs of a REST address as ``flink list`` does
  (``<start time> : <job id> : <name> (<state>)``, running and restarting jobs first, then
  the others under their own heading, or ``No running jobs.``).
* ``undertow cancel JOB_ID_OR_REST_URL`` sends ``PATCH /jobs/:jobid?mode=cancel`` and waits
  until the job left RUNNING (or its endpoint closed with it).
* ``undertow savepoint JOB_ID_OR_REST_URL [DIR]`` posts ``/jobs/:jobid/savepoints`` (without
  DIR the job's ``execution.checkpointing.savepoint-dir``), polls the trigger and prints
  ``Savepoint completed. Path: <dir>``; the job goes on.

A job id uses ``--rest-address`` (default Flink's ``http://127.0.0.1:8081``); a REST URL names
the endpoint of its one job (see :mod:`undertow.cli.stop`). Exit codes: 0 done, 1 the job
failed it (a savepoint that failed, a cancel that does not end), 2 the endpoint refused the
request (the error it answered is printed) or could not be reached. Blocking I/O.
"""

from __future__ import annotations

import sys
import time
from datetime import datetime
from typing import Any, TextIO

from undertow.cli.stop import (
    DEFAULT_REST_ADDRESS,
    POLL_S,
    StopError,
    call,
    locate,
    savepoint_and_wait,
)

_ACTIVE = ("CREATED", "INITIALIZING", "RUNNING", "RESTARTING", "FAILING", "CANCELLING")


def list_jobs(rest_address: str = DEFAULT_REST_ADDRESS, out: TextIO | None = None) -> int:
    """``undertow list``: the jobs of ``rest_address``."""
    out = sys.stdout if out is None else out
    try:
        jobs = call(rest_address.rstrip("/") + "/jobs/overview").get("jobs")
    except StopError as err:
        print(f"undertow: {err}", file=sys.stderr)
        return 2
    if not isinstance(jobs, list):
        print(f"undertow: {rest_address}/jobs/overview lists no jobs: {jobs!r}", file=sys.stderr)
        return 2
    running = [j for j in jobs if j.get("state") in _ACTIVE]
    others = [j for j in jobs if j.get("state") not in _ACTIVE]
    if running:
        out.write("------------------ Running/Restarting Jobs -------------------\n")
        out.writelines(_line(j) for j in running)
        out.write("--------------------------------------------------------------\n")
    else:
        out.write("No running jobs.\n")
    if others:
        out.write("---------------------- Terminated Jobs -----------------------\n")
        out.writelines(_line(j) for j in others)
        out.write("--------------------------------------------------------------\n")
    return 0


def _line(job: dict[str, Any]) -> str:
    start = job.get("start-time", -1)
    when = "-" if not isinstance(start, int) or start < 0 else (
        datetime.fromtimestamp(start / 1000).strftime("%d.%m.%Y %H:%M:%S")
    )  # fmt: skip
    return f"{when} : {job.get('jid')} : {job.get('name')} ({job.get('state')})\n"


def cancel(
    job: str, rest_address: str = DEFAULT_REST_ADDRESS, timeout_s: float = 60.0,
    out: TextIO | None = None,
) -> int:  # fmt: skip
    """``undertow cancel``: cancel the job and wait until it is no longer running."""
    out = sys.stdout if out is None else out
    try:
        base, job_id = locate(job, rest_address)
        out.write(f"Cancelling job {job_id}.\n")
        call(f"{base}/jobs/{job_id}?mode=cancel", method="PATCH")
        deadline = time.monotonic() + timeout_s
        while True:
            try:
                state = call(f"{base}/jobs/{job_id}").get("state")
            except StopError:
                break  # the endpoint closed with the job
            if state not in _ACTIVE:
                break
            if time.monotonic() > deadline:
                print(f"undertow: job {job_id} still {state} after {timeout_s} s",
                      file=sys.stderr)  # fmt: skip
                return 1
            time.sleep(POLL_S)
    except StopError as err:
        print(f"undertow: {err}", file=sys.stderr)
        return 2
    out.write(f"Cancelled job {job_id}.\n")
    return 0


def savepoint(
    job: str, directory: str | None, rest_address: str = DEFAULT_REST_ADDRESS,
    timeout_s: float = 600.0, out: TextIO | None = None, *, unaligned: bool = False,
    format_type: str = "canonical",
) -> int:  # fmt: skip
    """``undertow savepoint``: take a savepoint of the running job (``unaligned``: with
    unaligned barriers; ``format_type``: ``canonical`` or ``native``, Flink's ``--type``)."""
    out = sys.stdout if out is None else out
    body: dict[str, Any] = {"cancel-job": False, "formatType": format_type.upper()}
    if unaligned:
        body["unaligned"] = True
    if directory:
        body["target-directory"] = directory
    try:
        base, job_id = locate(job, rest_address)
        out.write(f"Triggering savepoint for job {job_id}.\nWaiting for response...\n")
        status = savepoint_and_wait(base, job_id, "savepoints", body, timeout_s)
    except StopError as err:
        print(f"undertow: {err}", file=sys.stderr)
        return 2
    operation = status.get("operation") or {}
    if "location" in operation:
        out.write(f"Savepoint completed. Path: {operation['location']}\n")
        out.write("You can resume your program from this savepoint with the run command.\n")
        return 0
    cause = operation.get("failure-cause") or {}
    print(f"undertow: savepoint of job {job_id} failed: "
          f"{cause.get('error-message', operation)}", file=sys.stderr)  # fmt: skip
    return 1
