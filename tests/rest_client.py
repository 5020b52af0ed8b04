"""What the REST tests share: a running job with its REST address, a JSON fetch that returns
error bodies too, and a poll until a probe answers (tests/web and tests/runtime/rest)."""

from __future__ import annotations

import json
import time
import urllib.error
import urllib.request
from collections.abc import Callable
from dataclasses import dataclass
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
