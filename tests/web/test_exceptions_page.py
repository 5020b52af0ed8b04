"""The exceptions tab renders Flink's ``JobExceptionsInfoWithHistory`` (one history entry per
failed attempt), checked against a stub that serves the dashboard's files and canned JSON of
that documented shape; a job whose API has no exceptions endpoint shows "No exceptions."
(see test_dashboard)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler
from typing import Any

import pytest
from tests.rest_client import serving, wait_for

from undertow import web

JID = "a" * 32
JOB = {
    "jid": JID, "name": "failing <job>", "state": "RUNNING", "start-time": 1_700_000_000_000,
    "end-time": -1, "duration": 5000, "vertices": [], "plan": {"nodes": []},
}  # fmt: skip
EXCEPTIONS = {
    "root-exception": "ValueError: second failure\n  at map",
    "timestamp": 1_700_000_004_000,
    "all-exceptions": [],
    "truncated": False,
    "exceptionHistory": {
        "entries": [
            {"exceptionName": "ValueError", "stacktrace": "ValueError: second failure\n  at map",
             "timestamp": 1_700_000_004_000, "taskName": "Map (2/2)", "endpoint": "worker-1",
             "taskManagerId": "worker-1", "failureLabels": {}, "concurrentExceptions": []},
            {"exceptionName": "<script>alert(1)</script>", "stacktrace": "first\n  at source",
             "timestamp": 1_700_000_002_000, "failureLabels": {}, "concurrentExceptions": [
                 {"exceptionName": "OSError", "stacktrace": "OSError", "timestamp": 0,
                  "taskName": "Source (1/2)", "failureLabels": {}}]},
        ],
        "truncated": True,
    },
}  # fmt: skip


class _Stub(BaseHTTPRequestHandler):
    def do_GET(self) -> None:
        path = self.path.split("?")[0].rstrip("/") or "/"
        if path in ("/", "/index.html") or path.startswith("/static/"):
            name = "index.html" if not path.startswith("/static/") else path[len("/static/") :]
            found = web.asset(name)
            assert found is not None, path
            self._send(200, found[1], found[0])
            return
        body: Any = {
            "/config": {"refresh-interval": 500, "flink-version": "stub"},
            f"/jobs/{JID}": JOB,
            f"/jobs/{JID}/exceptions": EXCEPTIONS,
        }.get(path)
        if body is None:
            self._send(404, "application/json", b'{"errors": ["Not found"]}')
        else:
            self._send(200, "application/json", json.dumps(body).encode())

    def _send(self, status: int, content_type: str, payload: bytes) -> None:
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(payload)))
        self.end_headers()
        self.wfile.write(payload)

    def log_message(self, *args: Any) -> None:
        pass


@pytest.fixture
def stub() -> Iterator[str]:
    with serving(_Stub) as url:
        yield url


def test_root_cause_and_history_per_attempt(stub: str, browser: Any) -> None:
    browser.get(f"{stub}/#/job/{JID}/exceptions")
    page = wait_for(lambda: browser.execute_script(
        "const p = document.getElementById('exceptions'); return p ? {"
        "  root: document.getElementById('root-exception').innerText,"
        "  entries: [...p.querySelectorAll('.exception')].map((e) => e.innerText),"
        "  text: p.innerText, scripts: p.querySelectorAll('script').length} : null;"
    ), "the exceptions panel")  # fmt: skip
    assert page["root"] == "ValueError: second failure\n  at map"
    assert len(page["entries"]) == 2
    assert "ValueError" in page["entries"][0] and "Map (2/2)" in page["entries"][0]
    assert "worker-1" in page["entries"][0]
    assert "<script>alert(1)</script>" in page["entries"][1]  # shown as text, not run
    assert "concurrently: OSError Source (1/2)" in page["entries"][1]
    assert page["scripts"] == 0
    assert "older failures left out" in page["text"]
    title = browser.execute_script("return document.querySelector('h2').innerText;")
    assert "failing <job>" in title
