"""What the REST tests share: a running job with its REST address, a JSON fetch that returns
error bodies too, a poll until a probe answers (tests/web and tests/runtime/rest), and a
stand-in REST API of the test's own (:func:`serving`)."""

from __future__ import annotations

import contextlib
import json
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from undertow.datastream import JobClient


@dataclass
class Job:
    client: JobClient
    url: str

    @property
    def jid(self) -> str:
        return self.client.get_job_id()

    def get(self, path: str) -> Any:
        status, body = fetch(self.url + path)
        assert status == 200, (path, status, body)
        return body


def fetch(url: str) -> tuple[int, Any]:
    """The status and JSON body of a GET, also for an error status."""
    try:
        with urllib.request.urlopen(url, timeout=10) as response:
            return response.status, json.loads(response.read())
    except urllib.error.HTTPError as err:
        return err.code, json.loads(err.read())


def wait_for(probe: Callable[[], Any], what: str, timeout: float = 20.0) -> Any:
    """``probe()``'s first truthy value, polled every 50 ms; AssertionError after ``timeout``."""
    deadline = time.monotonic() + timeout
    while True:
        value = probe()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.05)


@contextlib.contextmanager
def serving(handler: type[BaseHTTPRequestHandler]) -> Iterator[str]:
    """A server on a free loopback port whose requests ``handler`` answers, each on a thread
    of its own; yields its base URL (``http://127.0.0.1:PORT``), shut down and closed on
    exit."""
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()
