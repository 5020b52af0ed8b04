"""``undertow stop JOB_ID_OR_REST_URL [--savepoint-path DIR] [--drain | --unaligned]
[--type canonical|native]``: stop a running job with a savepoint through its REST API (Flink's
``flink stop``; ``--unaligned`` is undertow's unaligned savepoint).

It posts to ``/jobs/:jobid/stop``, polls the savepoint's status and prints
``Savepoint completed. Path: <dir>`` (exit 0) or the failure (exit 1); an endpoint it cannot
reach or understand exits 2. A token for the job's REST API comes from ``UNDERTOW_REST_TOKEN``.

Blocking I/O (urllib); a command-line tool.

The longer story: docs/design.md, "Module notes", under this module's name.
"""

from __future__ import annotations

import json
import os
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Callable
from typing import Any, TextIO

from undertow.runtime.master.rest.access import TOKEN_ENV

DEFAULT_REST_ADDRESS = "http://127.0.0.1:8081"
POLL_S = 0.1


class StopError(Exception):
    """The REST endpoint could not be reached or answered something unexpected."""


def call(url: str, body: dict[str, Any] | None = None, method: str | None = None) -> dict[str, Any]:
    """One REST request: GET, or POST of ``body`` as JSON (``method`` overrides); the JSON
    object it answers. Raises :class:`StopError` naming the URL on any failure."""
    data = None if body is None else json.dumps(body).encode("utf-8")
    method = method or ("GET" if data is None else "POST")
    request = urllib.request.Request(url, data=data, method=method)
    if data is not None:
        request.add_header("Content-Type", "application/json")
    token = os.environ.get(TOKEN_ENV, "").strip()
    if token and method not in ("GET", "HEAD"):
        request.add_header("Authorization", f"Bearer {token}")
    try:
        with urllib.request.urlopen(request, timeout=10) as response:
            answer = json.loads(response.read().decode("utf-8"))
    except urllib.error.HTTPError as err:
        detail = err.read().decode("utf-8", "replace")
        raise StopError(f"{url} answered {err.code}: {detail}") from err
    except (urllib.error.URLError, OSError, ValueError) as err:
        hint = ""
        if url.startswith(DEFAULT_REST_ADDRESS + "/"):
            hint = (
                f" (nothing answers at the default address {DEFAULT_REST_ADDRESS}: a job on the "
                "local or local-threads target serves its REST API on a free port, named by its "
                "'[undertow] REST API at URL' line; pass that URL)"
            )
        raise StopError(f"cannot reach {url}: {err}{hint}") from err
    if not isinstance(answer, dict):
        raise StopError(f"{url} answered {answer!r}, not a JSON object")
    return answer


def locate(job: str, rest_address: str) -> tuple[str, str]:
    """(REST base URL, job id) from a job id or a REST URL."""
    if job.startswith(("http://", "https://")):
        base = job.rstrip("/")
        jobs = call(base + "/jobs").get("jobs") or []
        if len(jobs) != 1 or not isinstance(jobs[0], dict) or "id" not in jobs[0]:
            raise StopError(f"{base}/jobs lists {jobs!r}: expected exactly one job")
        return base, str(jobs[0]["id"])
    return rest_address.rstrip("/"), job


def savepoint_and_wait(
    base: str, job_id: str, endpoint: str, body: dict[str, Any], timeout_s: float,
    on_triggered: Callable[[], object] = lambda: None,
) -> dict[str, Any]:  # fmt: skip
    """POST a savepoint request to ``/jobs/<job_id>/<endpoint>`` (``stop`` or ``savepoints``),
    call ``on_triggered`` once it is accepted, and poll its operation until it is COMPLETED
    (successfully or not); its last status body. Raises :class:`StopError`."""
    answer = call(f"{base}/jobs/{job_id}/{endpoint}", body)
    trigger = answer.get("request-id")
    if not isinstance(trigger, str):
        raise StopError(f"{base}/jobs/{job_id}/{endpoint} answered {answer!r}: no request-id")
    on_triggered()
    deadline = time.monotonic() + timeout_s
    while True:
        status = call(f"{base}/jobs/{job_id}/savepoints/{trigger}")
        if (status.get("status") or {}).get("id") == "COMPLETED":
            return status
        if time.monotonic() > deadline:
            raise StopError(f"job {job_id}: savepoint {trigger} not completed after "
                            f"{timeout_s} s")  # fmt: skip
        time.sleep(POLL_S)


def run(
    job: str, savepoint_path: str | None, drain: bool, rest_address: str = DEFAULT_REST_ADDRESS,
    timeout_s: float = 600.0, out: TextIO | None = None, *, unaligned: bool = False,
    format_type: str = "canonical",
) -> int:  # fmt: skip
    """The command; its exit code (see the module docstring). ``out``: stdout.
    ``savepoint_path`` None: the job's configured savepoint directory. ``unaligned``: an
    unaligned savepoint (``"unaligned": true`` in the request). ``format_type``:
    ``canonical`` or ``native`` (``"formatType"`` of the request, as Flink's)."""
    out = sys.stdout if out is None else out
    where = savepoint_path or "its configured savepoint directory"
    body: dict[str, Any] = {"drain": drain, "formatType": format_type.upper()}
    if unaligned:
        body["unaligned"] = True
    if savepoint_path:
        body["targetDirectory"] = savepoint_path
    try:
        base, job_id = locate(job, rest_address)
        status = savepoint_and_wait(
            base, job_id, "stop", body, timeout_s,
            lambda: out.write(f"Suspending job {job_id} with a savepoint into {where}.\n"),
        )  # fmt: skip
    except StopError as err:
        print(f"undertow: {err}", file=sys.stderr)
        return 2
    operation = status.get("operation") or {}
    if "location" in operation:
        out.write(f"Savepoint completed. Path: {operation['location']}\n")
        return 0
    cause = operation.get("failure-cause") or {}
    print(f"undertow: stopping job {job_id} with a savepoint into {where} failed: "
          f"{cause.get('error-message', operation)}", file=sys.stderr)  # fmt: skip
    return 1
