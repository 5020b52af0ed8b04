"""The REST API of a running job, served by its JobMaster (Flink's REST endpoint).

Flink's GET endpoints (bodies from :mod:`undertow.runtime.master.rest.responses`) and its stop
with savepoint, ``POST /jobs/:jobid/stop``; the dashboard and further routes are in
:mod:`.ui_routes`, the savepoint trigger and the cancel in :mod:`.job_actions`, who may change
the job in :mod:`.access`. Bound to ``rest.bind-address`` (127.0.0.1) and ``rest.port`` (8081;
unset on the local targets: any free port; -1: no REST API).

Lifecycle and threading: the JobMaster starts the endpoint on its own asyncio loop before it
launches workers and closes it when the job has ended. Requests run on that loop and ask
``source`` for a fresh JobView, built on the JobMaster's own thread: nothing is shared across
threads, nothing locks, and rendering is a pure function of the view.

The longer story: docs/design.md, "Module notes", under this module's name.
"""

from __future__ import annotations

import asyncio
import json
import logging
import re
import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Protocol
from urllib.parse import parse_qs, unquote, urlsplit

from undertow.core.errors import ConfigurationError
from undertow.core.modes import SavepointFormatType
from undertow.runtime.master import prometheus
from undertow.runtime.master.metrics import JobView, VertexView
from undertow.runtime.master.rest import job_actions, responses, ui_routes
from undertow.runtime.master.rest.access import Refusal, RestAccess, is_loopback, resolve_access
from undertow.runtime.master.settings import RestSettings

log = logging.getLogger(__name__)

MAX_HEAD_BYTES = 16 * 1024
HEAD_TIMEOUT_S = 10.0
MAX_CONNECTIONS = 32
#: The targets that run the whole job on this machine (Flink's MiniCluster).

#: Builds the view a request is answered from; called on the JobMaster's loop.
ViewSource = Callable[[], JobView]
MAX_BODY_BYTES = 16 * 1024


class JobControl(Protocol):
    """What the stop endpoints ask of the JobMaster (on its loop)."""

    def stop_with_savepoint_trigger(
        self, target_directory: str | None, drain: bool, unaligned: bool = False,
        format_type: SavepointFormatType = SavepointFormatType.CANONICAL,
    ) -> str:  # fmt: skip
        """Start a stop with savepoint; its trigger id. ``None``: the job's configured
        savepoint directory; raises ``ConfigurationError`` if there is none."""

    def savepoint_operation(self, trigger_id: str) -> dict[str, Any] | None:
        """Flink's ``AsynchronousOperationResult`` of a trigger, or None if unknown."""


_REASONS = {200: "OK", 202: "Accepted", 400: "Bad Request", 401: "Unauthorized",
            403: "Forbidden", 404: "Not Found",
            405: "Method Not Allowed", 415: "Unsupported Media Type",
            431: "Request Header Fields Too Large",
            500: "Internal Server Error"}  # fmt: skip


async def start_rest_endpoint(
    settings: RestSettings, source: ViewSource, control: JobControl | None = None
) -> RestEndpoint | None:
    """Start the job's REST API as configured (None when ``rest.port`` is -1). Must be awaited
    on the JobMaster's loop; raises :class:`ConfigurationError` when it cannot listen."""
    if not settings.enabled:
        return None
    host = settings.bind_address
    endpoint = RestEndpoint(source, host, settings.port, control, resolve_access(settings))
    endpoint.exporter = prometheus.start_exporter(settings, source)  # metrics.reporter.prom.*
    try:
        await endpoint.start()
    except ConfigurationError:
        endpoint.close()
        raise
    return endpoint


#: The URLs of the endpoints listening in this process, for ``undertow run``'s status line
#: (the only state shared across threads here, hence the lock).
_LIVE: set[str] = set()
_LIVE_LOCK = threading.Lock()


def live_urls() -> list[str]:
    """The URLs of the REST endpoints listening in this process now (any thread)."""
    with _LIVE_LOCK:
        return sorted(_LIVE)


class _NotFound(Exception):
    pass


@dataclass(frozen=True, slots=True)
class Response:
    status: int
    body: dict[str, Any] | list[Any]
    head_only: bool = False
    allow: str | None = None
    authenticate: bool = False

    def encode(self) -> bytes:
        payload = json.dumps(self.body, separators=(",", ":")).encode("utf-8")
        lines = [
            f"HTTP/1.1 {self.status} {_REASONS.get(self.status, 'Error')}",
            "Content-Type: application/json; charset=UTF-8",
            f"Content-Length: {len(payload)}",
            "Cache-Control: no-store",
            "Connection: close",
        ]
        if self.allow is not None:
            lines.append(f"Allow: {self.allow}")
        if self.authenticate:
            lines.append('WWW-Authenticate: Bearer realm="undertow"')
        head = ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1")
        return head if self.head_only else head + payload


def errors(*messages: str) -> dict[str, Any]:
    """Flink's ``ErrorResponseBody``."""
    return {"errors": list(messages)}


class RestEndpoint:
    """The HTTP server (see the module docstring). ``start`` then ``close``, on one loop."""

    def __init__(
        self, source: ViewSource, host: str, port: int, control: JobControl | None = None,
        access: RestAccess | None = None,
    ) -> None:  # fmt: skip
        self.source = source
        self.control = control
        self.host = host
        self.port = port
        self.access = access if access is not None else RestAccess(None)
        self._server: asyncio.Server | None = None
        self._writers: set[asyncio.StreamWriter] = set()
        self._loopback = is_loopback(host)
        self.exporter: prometheus.PrometheusExporter | None = None

    @property
    def url(self) -> str:
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"http://{host}:{self.port}"

    async def start(self) -> None:
        try:
            self._server = await asyncio.start_server(
                self._on_connection, self.host, self.port, limit=MAX_HEAD_BYTES
            )
        except OSError as err:
            raise ConfigurationError(
                f"the REST API cannot listen on {self.host}:{self.port}: "
                f"{err.strerror or err}. Set 'rest.port' to a free port, to 0 for any free "
                "port, or to -1 to run the job without a REST API"
            ) from err
        self.port = int(self._server.sockets[0].getsockname()[1])
        with _LIVE_LOCK:
            _LIVE.add(self.url)

    def close(self) -> None:
        """Stop listening and drop open connections (does not wait)."""
        with _LIVE_LOCK:
            _LIVE.discard(self.url)
        if self.exporter is not None:
            self.exporter.close()
            self.exporter = None
        if self._server is not None:
            self._server.close()
            self._server = None
        for writer in list(self._writers):
            writer.close()
        self._writers.clear()

    # -- HTTP --------------------------------------------------------------------------------
    async def _on_connection(
        self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter
    ) -> None:
        if len(self._writers) >= MAX_CONNECTIONS:
            writer.close()
            return
        self._writers.add(writer)
        try:
            response: Response | ui_routes.RawResponse
            try:
                head = await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), HEAD_TIMEOUT_S)
            except asyncio.LimitOverrunError:
                response = Response(431, errors(f"request head larger than {MAX_HEAD_BYTES} B"))
            else:
                body = b""
                length = _content_length(head)
                if 0 < length <= MAX_BODY_BYTES:
                    body = await asyncio.wait_for(reader.readexactly(length), HEAD_TIMEOUT_S)
                response = self.respond(head, body, length)
            writer.write(response.encode())
            await asyncio.wait_for(writer.drain(), HEAD_TIMEOUT_S)
        except (asyncio.IncompleteReadError, asyncio.TimeoutError, ConnectionError):
            pass
        finally:
            self._writers.discard(writer)
            writer.close()

    def respond(
        self, head: bytes, body: bytes = b"", length: int = 0
    ) -> Response | ui_routes.RawResponse:
        """The response to one request head (request line and headers) and its body."""
        lines = head.decode("latin-1").split("\r\n")
        parts = lines[0].split(" ")
        if len(parts) != 3 or not parts[2].startswith("HTTP/"):
            return Response(400, errors("Bad request: malformed request line"))
        method, target, _ = parts
        headers = {}
        for line in lines[1:]:
            name, sep, value = line.partition(":")
            if sep:
                headers[name.strip().lower()] = value.strip()
        problem = self._host_problem(headers.get("host"))
        if problem is not None:
            return Response(403, errors(problem))
        if method not in ("GET", "HEAD"):  # every request that may change the job
            refusal = self.access.token_problem(headers)
            if refusal is not None:
                return _refused(refusal)
        stop = _STOP.fullmatch(unquote(urlsplit(target).path).rstrip("/"))
        if method == "POST" and stop is not None and self.control is not None:
            return self._stop(stop.group(1), headers, body, length)
        action = job_actions.answer(
            method, target, headers, body, length, self.source, self.control, self.access
        )  # POST .../savepoints, PATCH ?mode=cancel
        if action is not None:
            return action
        extra = ui_routes.answer(method, target, self.source)  # dashboard, metrics, plan
        if extra is not None:
            return extra
        if method not in ("GET", "HEAD"):
            return Response(405, errors(f"Method {method} is not allowed; the REST API is "
                                        "read-only but for POST /jobs/:jobid/stop"),
                            allow="GET, HEAD")  # fmt: skip
        url = urlsplit(target)
        status, payload = self.route(unquote(url.path), url.query)
        return Response(status, payload, head_only=method == "HEAD")

    def _stop(self, job_id: str, headers: dict[str, str], body: bytes, length: int) -> Response:
        """``POST /jobs/:jobid/stop``: start a stop with savepoint (202 and its trigger id)."""
        assert self.control is not None
        if job_id != self.source().job_id:
            return Response(404, errors(f"Job {job_id} not found"))
        if headers.get("content-type", "").split(";")[0].strip() != "application/json":
            return Response(415, errors("POST /jobs/:jobid/stop needs Content-Type: "
                                        "application/json"))  # fmt: skip
        if length > MAX_BODY_BYTES or len(body) != length:
            return Response(400, errors(f"request body must be JSON of at most "
                                        f"{MAX_BODY_BYTES} B"))  # fmt: skip
        try:
            request = json.loads(body.decode("utf-8") or "{}")
        except (UnicodeDecodeError, json.JSONDecodeError) as err:
            return Response(400, errors(f"request body is not JSON: {err}"))
        fields = request if isinstance(request, dict) else {}
        target = fields.get("targetDirectory")
        drain = fields.get("drain", False)
        unaligned = fields.get("unaligned", False)
        format_type = job_actions.rest_format_type(fields)
        valid_target = target is None or (isinstance(target, str) and bool(target))
        flags = isinstance(drain, bool) and isinstance(unaligned, bool)
        if not isinstance(request, dict) or not valid_target or not flags or not format_type:
            return Response(400, errors(
                'body must be {"targetDirectory": "<directory>", "drain": true|false, '
                '"formatType": "CANONICAL"|"NATIVE", '
                f'"unaligned": true|false}} (all optional); got {body[:200]!r}'
            ))  # fmt: skip
        refusal = self.access.directory_problem(target)
        if refusal is not None:
            return _refused(refusal)
        try:
            trigger = self.control.stop_with_savepoint_trigger(
                target, drain, unaligned, format_type
            )
        except (ConfigurationError, ValueError) as err:  # no directory; drain with unaligned
            return Response(400, errors(str(err)))
        return Response(202, {"request-id": trigger})

    def _host_problem(self, host: str | None) -> str | None:
        if host is None or not self._loopback:
            return None
        name = host[1 : host.find("]")] if host.startswith("[") else host.rsplit(":", 1)[0]
        name = name.lower()
        if name in ("localhost", self.host) or is_loopback(name):
            return None
        return (
            f"Host {host!r} is not allowed: the REST API listens on {self.host} and only "
            "answers requests addressed to a loopback name (localhost, 127.0.0.1, ::1)"
        )

    def route(self, path: str, query: str = "") -> tuple[int, dict[str, Any] | list[Any]]:
        """Status and body for ``path`` (already unquoted) and its query string."""
        if path == "/v1" or path.startswith("/v1/"):
            path = path[3:]
        path = path.rstrip("/") or "/"
        exceptions = _EXCEPTIONS.fullmatch(path)
        if exceptions is not None:
            return self._exceptions(exceptions.group(1), query)
        operation = _SAVEPOINT.fullmatch(path)
        if operation is not None and self.control is not None:
            if operation.group(1) != self.source().job_id:
                return 404, errors(f"Job {operation.group(1)} not found")
            result = self.control.savepoint_operation(operation.group(2))
            if result is None:
                return 404, errors(f"Operation not found under key: {operation.group(2)}")
            return 200, result
        for pattern, handler in _ROUTES:
            match = pattern.fullmatch(path)
            if match is None:
                continue
            try:
                return 200, handler(self.source(), *match.groups())
            except _NotFound as err:
                return 404, errors(str(err))
            except Exception as err:
                log.exception("REST %s failed", path)
                return 500, errors("Internal server error.", f"{type(err).__name__}: {err}")
        return 404, errors(f"Not found: {path}")

    def _exceptions(self, job_id: str, query: str) -> tuple[int, dict[str, Any]]:
        """``/jobs/:jobid/exceptions[?maxExceptions=N]``."""
        view = self.source()
        if job_id != view.job_id:
            return 404, errors(f"Job {job_id} not found")
        values = parse_qs(query).get("maxExceptions", [])
        limit: int | None = None
        if values:
            try:
                limit = int(values[-1].split(",")[0])
            except ValueError:
                return 400, errors(f"maxExceptions must be an integer, got {values[-1]!r}")
            if limit < 0:
                return 400, errors(f"maxExceptions must not be negative, got {limit}")
        return 200, responses.job_exceptions(view, limit)


def _content_length(head: bytes) -> int:
    for line in head.decode("latin-1").split("\r\n")[1:]:
        name, sep, value = line.partition(":")
        if sep and name.strip().lower() == "content-length":
            try:
                return max(0, int(value.strip()))
            except ValueError:
                return 0
    return 0


def _refused(refusal: Refusal) -> Response:
    if refusal.status == 401:
        return Response(401, errors(refusal.message), authenticate=True)
    return Response(refusal.status, errors(refusal.message))


# -- routes ----------------------------------------------------------------------------------
def _job(view: JobView, job_id: str) -> JobView:
    if job_id != view.job_id:
        raise _NotFound(f"Job {job_id} not found")
    return view


def _vertex(view: JobView, vertex_id: str) -> VertexView:
    vertex = view.vertex(vertex_id)
    if vertex is None:
        raise _NotFound(f"Job vertex {vertex_id} not found in job {view.job_id}")
    return vertex


def _checkpoint_details(view: JobView, job_id: str, checkpoint_id: str) -> dict[str, Any]:
    entry = _job(view, job_id).checkpoints.find(int(checkpoint_id))
    if entry is None:
        raise _NotFound(f"Could not find checkpointing statistics for checkpoint {checkpoint_id}.")
    return responses.checkpoint_entry(view, entry, details=True)


def _subtask_details(
    view: JobView, job_id: str, checkpoint_id: str, vertex_id: str
) -> dict[str, Any]:
    entry = _job(view, job_id).checkpoints.find(int(checkpoint_id))
    if entry is None:
        raise _NotFound(f"Could not find checkpointing statistics for checkpoint {checkpoint_id}.")
    return responses.task_checkpoint(entry, _vertex(view, vertex_id), details=True)


_ID = r"([0-9A-Za-z-]+)"
_STOP = re.compile(rf"(?:/v1)?/jobs/{_ID}/stop")
_SAVEPOINT = re.compile(rf"/jobs/{_ID}/savepoints/{_ID}")
_EXCEPTIONS = re.compile(rf"/jobs/{_ID}/exceptions")
_ROUTES: list[tuple[re.Pattern[str], Callable[..., dict[str, Any] | list[Any]]]] = [
    (re.compile(r"/config"), responses.dashboard_config),
    (re.compile(r"/overview"), responses.cluster_overview),
    (re.compile(r"/taskmanagers"), responses.taskmanagers),
    (re.compile(r"/jobs"), responses.job_ids),
    (re.compile(r"/jobs/overview"), responses.jobs_overview),
    (re.compile(rf"/jobs/{_ID}"), lambda v, j: responses.job_details(_job(v, j))),
    (re.compile(rf"/jobs/{_ID}/checkpoints"),
     lambda v, j: responses.checkpointing_statistics(_job(v, j))),
    (re.compile(rf"/jobs/{_ID}/checkpoints/config"),
     lambda v, j: responses.checkpoint_config(_job(v, j))),
    (re.compile(rf"/jobs/{_ID}/checkpoints/details/(\d+)"), _checkpoint_details),
    (re.compile(rf"/jobs/{_ID}/checkpoints/details/(\d+)/subtasks/{_ID}"), _subtask_details),
    (re.compile(rf"/jobs/{_ID}/vertices/{_ID}/backpressure"),
     lambda v, j, x: responses.vertex_backpressure(v, _vertex(_job(v, j), x))),
]  # fmt: skip
