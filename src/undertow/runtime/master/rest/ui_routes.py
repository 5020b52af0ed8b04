"""The web dashboard's files and the REST endpoints beside Flink's core ones (plan, metrics,
watermarks), with their query strings.

:func:`answer` is asked first by :class:`~.server.RestEndpoint` for every GET or HEAD (after its
Host check); it returns None for any path it does not serve, which the core routes then
answer.

Pure but for reading packaged files; runs on the JobMaster's loop like the rest of the API.

The longer story: docs/design.md, "Module notes", under this module's name.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any
from urllib.parse import parse_qs, unquote, urlsplit

from undertow import web
from undertow.runtime.master.metrics import JobView, VertexView
from undertow.runtime.master.rest import metrics_responses as mr
from undertow.runtime.master.rest import responses

_REASONS = {200: "OK", 202: "Accepted", 400: "Bad Request", 404: "Not Found",
            415: "Unsupported Media Type"}  # fmt: skip


@dataclass(frozen=True, slots=True)
class RawResponse:
    """A response whose body is already bytes (a file, or JSON that is not an object)."""

    status: int
    content_type: str
    payload: bytes
    head_only: bool = False

    def encode(self) -> bytes:
        lines = [
            f"HTTP/1.1 {self.status} {_REASONS.get(self.status, 'Error')}",
            f"Content-Type: {self.content_type}",
            f"Content-Length: {len(self.payload)}",
            "Cache-Control: no-store",
            "X-Content-Type-Options: nosniff",
            "Connection: close",
        ]
        head = ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1")
        return head if self.head_only else head + self.payload


def _json(status: int, body: Any, head_only: bool) -> RawResponse:
    payload = json.dumps(body, separators=(",", ":")).encode("utf-8")
    return RawResponse(status, "application/json; charset=UTF-8", payload, head_only)


def answer(method: str, target: str, source: Callable[[], JobView]) -> RawResponse | None:
    """The response to a GET or HEAD of ``target`` if it is served here, else None."""
    if method not in ("GET", "HEAD"):
        return None
    head_only = method == "HEAD"
    split = urlsplit(target)
    path = unquote(split.path)
    if path == "/v1" or path.startswith("/v1/"):
        path = path[3:]
    path = path.rstrip("/") or "/"
    if path in ("/", "/index.html") or path.startswith("/static/"):
        name = "index.html" if path in ("/", "/index.html") else path[len("/static/") :]
        found = web.asset(name)
        if found is None:
            return _json(404, responses_errors(f"Not found: {path}"), head_only)
        return RawResponse(200, found[1], found[0], head_only)
    query = {k: v[-1] for k, v in parse_qs(split.query, keep_blank_values=True).items()}
    for pattern, handler in _ROUTES:
        match = pattern.fullmatch(path)
        if match is None:
            continue
        view = source()
        if match.group(1) != view.job_id:
            return _json(404, responses_errors(f"Job {match.group(1)} not found"), head_only)
        try:
            return _json(200, handler(view, query, *match.groups()[1:]), head_only)
        except _NotFound as err:
            return _json(404, responses_errors(str(err)), head_only)
        except mr.BadQuery as err:
            return _json(400, responses_errors(str(err)), head_only)
    return None


def responses_errors(*messages: str) -> dict[str, Any]:
    """Flink's ``ErrorResponseBody``."""
    return {"errors": list(messages)}


class _NotFound(Exception):
    pass


def _vertex(view: JobView, vertex_id: str) -> VertexView:
    vertex = view.vertex(vertex_id)
    if vertex is None:
        raise _NotFound(f"Job vertex {vertex_id} not found in job {view.job_id}")
    return vertex


def _subtask(view: JobView, query: dict[str, str], vertex_id: str, index: str) -> Any:
    vertex = _vertex(view, vertex_id)
    if int(index) >= vertex.parallelism:
        raise _NotFound(
            f"Subtask {index} of vertex {vertex_id} not found (parallelism {vertex.parallelism})"
        )
    return mr.metric_list(mr.subtask_metrics(vertex.metrics[int(index)]), query.get("get"))


_ID = r"([0-9A-Za-z-]+)"
_ROUTES: list[tuple[re.Pattern[str], Callable[..., Any]]] = [
    (re.compile(rf"/jobs/{_ID}/plan"),
     lambda v, q: {"plan": responses.job_details(v)["plan"]}),
    (re.compile(rf"/jobs/{_ID}/metrics"),
     lambda v, q: mr.metric_list(mr.job_metrics(v), q.get("get"))),
    (re.compile(rf"/jobs/{_ID}/vertices/{_ID}/metrics"),
     lambda v, q, x: mr.metric_list(mr.vertex_metrics(_vertex(v, x)), q.get("get"))),
    (re.compile(rf"/jobs/{_ID}/vertices/{_ID}/subtasks/metrics"),
     lambda v, q, x: mr.aggregated_subtask_metrics(
         _vertex(v, x), q.get("get"), q.get("agg"), q.get("subtasks"))),
    (re.compile(rf"/jobs/{_ID}/vertices/{_ID}/subtasks/(\d+)/metrics"), _subtask),
    (re.compile(rf"/jobs/{_ID}/vertices/{_ID}/watermarks"),
     lambda v, q, x: mr.watermarks(_vertex(v, x))),
]  # fmt: skip
