"""Two more of Flink's job actions over REST: trigger a savepoint, and cancel.

``POST /jobs/:jobid/savepoints`` triggers a savepoint (its status is
``GET /jobs/:jobid/savepoints/:triggerid``, as for a stop); ``PATCH /jobs/:jobid?mode=cancel``
cancels the job. A POST needs ``Content-Type: application/json`` and a PATCH is no CORS-simple
method, so a web page of another origin cannot send either without a preflight.
:func:`answer` runs on the JobMaster's loop and returns None for any other request.

The longer story: docs/design.md, "Module notes", under this module's name.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from typing import Any, Protocol, runtime_checkable
from urllib.parse import parse_qs, unquote, urlsplit

from undertow.core.errors import ConfigurationError
from undertow.core.modes import SavepointFormatType
from undertow.runtime.master.metrics import JobView
from undertow.runtime.master.rest.access import RestAccess
from undertow.runtime.master.rest.ui_routes import RawResponse, responses_errors

_ID = r"([0-9A-Za-z-]+)"
_SAVEPOINTS = re.compile(rf"(?:/v1)?/jobs/{_ID}/savepoints")
_JOB = re.compile(rf"(?:/v1)?/jobs/{_ID}")
MAX_BODY_BYTES = 16 * 1024


@runtime_checkable
class JobActions(Protocol):
    """What these endpoints ask of the JobMaster (on its loop)."""

    def savepoint_trigger(
        self, target_directory: str | None, unaligned: bool = False,
        format_type: SavepointFormatType = SavepointFormatType.CANONICAL,
    ) -> str:  # fmt: skip
        """Start a savepoint (the job goes on); its trigger id. ``None``: the configured
        savepoint directory; raises ``ConfigurationError`` if there is none."""

    def cancel(self) -> None:
        """Cancel the job (returns at once)."""


def rest_format_type(fields: dict[str, Any]) -> SavepointFormatType | None:
    """The ``formatType`` of a savepoint or stop request body (Flink's field: the enum's name,
    upper case as Flink's JSON has it; default CANONICAL), or None if it is not one."""
    value = fields.get("formatType", SavepointFormatType.CANONICAL.name)
    if value not in ("CANONICAL", "NATIVE"):
        return None
    return SavepointFormatType[value]


def _json(status: int, body: Any) -> RawResponse:
    payload = json.dumps(body, separators=(",", ":")).encode("utf-8")
    return RawResponse(status, "application/json; charset=UTF-8", payload)


def answer(
    method: str, target: str, headers: dict[str, str], body: bytes, length: int,
    source: Callable[[], JobView], control: object, access: RestAccess | None = None,
) -> RawResponse | None:  # fmt: skip
    """The response to a savepoint trigger or a cancel, or None if ``target`` is neither."""
    if not isinstance(control, JobActions):
        return None
    split = urlsplit(target)
    path = unquote(split.path).rstrip("/")
    savepoints = _SAVEPOINTS.fullmatch(path)
    if method == "POST" and savepoints is not None:
        if savepoints.group(1) != source().job_id:
            return _json(404, responses_errors(f"Job {savepoints.group(1)} not found"))
        return _trigger(control, headers, body, length, access or RestAccess(None))
    job = _JOB.fullmatch(path)
    if method == "PATCH" and job is not None:
        if job.group(1) != source().job_id:
            return _json(404, responses_errors(f"Job {job.group(1)} not found"))
        mode = parse_qs(split.query).get("mode", ["cancel"])[-1]
        if mode.lower() != "cancel":
            return _json(400, responses_errors(
                f"mode {mode!r} is not supported: PATCH /jobs/:jobid?mode=cancel cancels; "
                "stop with a savepoint is POST /jobs/:jobid/stop"
            ))  # fmt: skip
        control.cancel()
        return _json(202, {})
    return None


def _trigger(
    control: JobActions, headers: dict[str, str], body: bytes, length: int, access: RestAccess
) -> RawResponse:
    if headers.get("content-type", "").split(";")[0].strip() != "application/json":
        return _json(415, responses_errors(
            "POST /jobs/:jobid/savepoints needs Content-Type: application/json"
        ))  # fmt: skip
    if length > MAX_BODY_BYTES or len(body) != length:
        return _json(400, responses_errors(f"request body must be JSON of at most "
                                           f"{MAX_BODY_BYTES} B"))  # fmt: skip
    try:
        request = json.loads(body.decode("utf-8") or "{}")
    except (UnicodeDecodeError, json.JSONDecodeError) as err:
        return _json(400, responses_errors(f"request body is not JSON: {err}"))
    fields = request if isinstance(request, dict) else {}
    directory = fields.get("target-directory")
    cancel = fields.get("cancel-job", False)
    unaligned = fields.get("unaligned", False)
    format_type = rest_format_type(fields)
    valid = directory is None or (isinstance(directory, str) and bool(directory))
    flags = isinstance(cancel, bool) and isinstance(unaligned, bool)
    if not isinstance(request, dict) or not valid or not flags or not format_type:
        return _json(400, responses_errors(
            'body must be {"target-directory": "<directory>", "cancel-job": false, '
            '"formatType": "CANONICAL"|"NATIVE", '
            f'"unaligned": true|false}} (all optional); got {body[:200]!r}'
        ))  # fmt: skip
    if cancel:
        return _json(400, responses_errors(
            '"cancel-job": true is not supported; stop with a savepoint instead '
            "(POST /jobs/:jobid/stop)"
        ))  # fmt: skip
    refusal = access.directory_problem(directory)
    if refusal is not None:
        return _json(refusal.status, responses_errors(refusal.message))
    try:
        trigger = control.savepoint_trigger(directory, unaligned, format_type)
    except ConfigurationError as err:
        return _json(400, responses_errors(str(err)))
    return _json(202, {"request-id": trigger})
