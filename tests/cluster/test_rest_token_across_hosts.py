"""The REST API bound off loopback, used from another host (issue 30; ARCHITECTURE §7).

The job runs on the driver host with ``rest.bind-address`` on the test subnet; a second host
(its own network namespace and address) sends the requests a person on another machine of the
cluster would: it may read the job, but stopping, taking a savepoint or cancelling needs the
token printed where the job started, and savepoints go only below the job's savepoint
directory.
"""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path
from typing import Any

import pytest
from tests.rest_client import wait_for
from tests.web.conftest import start_job

from undertow.core.errors import JobCancelledError

from . import netns

pytestmark = pytest.mark.skipif(netns.unavailable() is not None,
                                reason=f"no test hosts: {netns.unavailable()}")  # fmt: skip

TOKEN_LINE = re.compile(r"REST API at (\S+) \(requests that change the job need "
                        r"'Authorization: Bearer (\S+)'")  # fmt: skip

_CLIENT = """
import json, sys, urllib.error, urllib.request
method, url, body, token = sys.argv[1:5]
request = urllib.request.Request(url, data=body.encode() or None, method=method)
if body:
    request.add_header("Content-Type", "application/json")
if token:
    request.add_header("Authorization", "Bearer " + token)
try:
    with urllib.request.urlopen(request, timeout=10) as response:
        print(json.dumps([response.status, json.loads(response.read() or b"{}")]))
except urllib.error.HTTPError as err:
    print(json.dumps([err.code, json.loads(err.read() or b"{}")]))
"""


def remote(host: netns.Host, method: str, url: str, body: Any = None,
           token: str = "") -> tuple[int, Any]:  # fmt: skip
    """One HTTP request sent from ``host``; (status, JSON body)."""
    payload = "" if body is None else json.dumps(body)
    done = host.run([sys.executable, "-c", _CLIENT, method, url, payload, token])
    assert done.returncode == 0, done.stderr
    status, answer = json.loads(done.stdout)
    return int(status), answer


@pytest.mark.timeout(120)
def test_changing_a_job_from_another_host_needs_its_token(
    tmp_path: Path, capfd: pytest.CaptureFixture[str]
) -> None:
    savepoints = tmp_path / "savepoints"
    with netns.test_network(hosts=1) as network:
        other = network.hosts[0]
        client = start_job(str(tmp_path / "chk"), "token job", **{
            "rest.bind-address": network.driver_address,
            "execution.checkpointing.savepoint-dir": str(savepoints),
        })  # fmt: skip
        try:
            found = TOKEN_LINE.search(capfd.readouterr().err)
            assert found is not None, "the console names no token for a REST API off loopback"
            url, token = found.group(1), found.group(2)
            jid = client.get_job_id()
            assert url == client.get_rest_address() and network.driver_address in url

            # reading needs no token, from the other host
            wait_for(lambda: remote(other, "GET", f"{url}/jobs/{jid}")[0] == 200,
                     "the job readable from the other host")  # fmt: skip

            # without a token, or with a wrong one: refused, and nothing happens
            status, answer = remote(other, "POST", f"{url}/jobs/{jid}/savepoints", {})
            assert status == 401 and "token" in answer["errors"][0]
            status, _ = remote(other, "POST", f"{url}/jobs/{jid}/savepoints", {}, "x" * 43)
            assert status == 403
            assert remote(other, "PATCH", f"{url}/jobs/{jid}?mode=cancel")[0] == 401
            assert remote(other, "POST", f"{url}/jobs/{jid}/stop", {"drain": False})[0] == 401
            assert not savepoints.exists()
            assert not client.get_job_status().result().is_globally_terminal_state()

            # with the token: not outside the savepoint directory, but into it
            outside = {"target-directory": str(tmp_path / "elsewhere")}
            status, answer = remote(other, "POST", f"{url}/jobs/{jid}/savepoints", outside, token)
            assert status == 403 and "execution.checkpointing.savepoint-dir" in answer["errors"][0]
            escape = {"target-directory": str(savepoints / ".." / "elsewhere")}
            assert remote(other, "POST", f"{url}/jobs/{jid}/savepoints", escape, token)[0] == 403
            status, answer = remote(other, "POST", f"{url}/jobs/{jid}/savepoints", {}, token)
            assert status == 202, answer
            trigger = answer["request-id"]

            def completed() -> bool:
                result = remote(other, "GET", f"{url}/jobs/{jid}/savepoints/{trigger}")[1]
                return result["status"]["id"] == "COMPLETED"

            wait_for(completed, "the savepoint completed")
            assert not (tmp_path / "elsewhere").exists() and any(savepoints.iterdir())

            assert remote(other, "PATCH", f"{url}/jobs/{jid}?mode=cancel", None, token)[0] == 202
            with pytest.raises(JobCancelledError):
                client.get_job_execution_result(30)
        finally:
            client.cancel()
