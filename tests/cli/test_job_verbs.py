"""``undertow list``, ``savepoint`` and ``cancel`` against a running job's REST address, and the
REST actions behind them (Flink's ``POST /jobs/:jobid/savepoints``, ``PATCH /jobs/:jobid``)."""

from __future__ import annotations

import io
import json
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

import pytest
from tests.rest_client import wait_for
from tests.web.conftest import start_job

from undertow.cli import stop
from undertow.cli.jobs import list_jobs
from undertow.cli.main import main
from undertow.cli.stop import StopError, locate
from undertow.core.errors import JobCancelledError


def request(url: str, method: str, body: bytes | None, content_type: str | None) -> tuple[int, Any]:
    req = urllib.request.Request(url, data=body, method=method)
    if content_type:
        req.add_header("Content-Type", content_type)
    try:
        with urllib.request.urlopen(req, timeout=10) as response:
            return response.status, json.loads(response.read())
    except urllib.error.HTTPError as err:
        return err.code, json.loads(err.read())


def test_list_savepoint_and_cancel(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    client = start_job(str(tmp_path / "chk"), "verbs job")
    url = client.get_rest_address()
    assert url is not None
    jid = client.get_job_id()
    try:
        wait_for(lambda: main(["list", url]) == 0 and "(RUNNING)" in capsys.readouterr().out,
                 "the job listed as running")  # fmt: skip
        assert main(["list", url]) == 0
        listed = capsys.readouterr().out
        assert "Running/Restarting Jobs" in listed and f" : {jid} : verbs job (RUNNING)" in listed
        out_buffer = io.StringIO()  # the verb's function, to any stream
        assert list_jobs(url, out_buffer) == 0 and f" : {jid} : " in out_buffer.getvalue()
        assert locate(url, "ignored") == (url.rstrip("/"), jid)  # a URL names its one job
        assert locate(jid, url + "/") == (url.rstrip("/"), jid)
        with pytest.raises(StopError, match="cannot reach"):
            locate("http://127.0.0.1:1", url)

        target = tmp_path / "sp"
        assert main(["savepoint", url, str(target)]) == 0
        out = capsys.readouterr().out
        assert f"Triggering savepoint for job {jid}." in out
        assert f"Savepoint completed. Path: {target}" in out
        assert any(target.iterdir())

        # the same by job id and --rest-address; no directory and none configured: refused
        assert main(["savepoint", jid, "--rest-address", url]) == 2
        assert "execution.checkpointing.savepoint-dir" in capsys.readouterr().err

        assert main(["cancel", url]) == 0
        assert f"Cancelled job {jid}." in capsys.readouterr().out
        with pytest.raises(JobCancelledError):
            client.get_job_execution_result(30)
    finally:
        client.cancel()


def test_rest_actions_refuse_what_flink_refuses(tmp_path: Path) -> None:
    client = start_job(str(tmp_path / "chk"), "refusals job")
    url, jid = client.get_rest_address(), client.get_job_id()
    try:
        body = json.dumps({"target-directory": str(tmp_path / "sp")}).encode()
        status, answer = request(f"{url}/jobs/{jid}/savepoints", "POST", body, "text/plain")
        assert status == 415 and "Content-Type" in answer["errors"][0]
        cancel_job = json.dumps({"cancel-job": True}).encode()
        status, answer = request(f"{url}/jobs/{jid}/savepoints", "POST", cancel_job,
                                 "application/json")  # fmt: skip
        assert status == 400 and "/stop" in answer["errors"][0]
        status, answer = request(f"{url}/jobs/{'0' * 32}/savepoints", "POST", body,
                                 "application/json")  # fmt: skip
        assert status == 404
        status, answer = request(f"{url}/jobs/{jid}?mode=stop", "PATCH", None, None)
        assert status == 400 and "mode" in answer["errors"][0]
        assert (
            not client.get_job_status().result().is_globally_terminal_state()
        )  # refused: still on
        status, answer = request(f"{url}/jobs/{jid}?mode=cancel", "PATCH", None, None)
        assert status == 202 and answer == {}
        with pytest.raises(JobCancelledError):
            client.get_job_execution_result(30)
    finally:
        client.cancel()


def test_verbs_send_the_rest_token_from_the_environment(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    savepoints = tmp_path / "sp"
    client = start_job(str(tmp_path / "chk"), "token verbs job", **{
        "rest.token": "cli-token", "execution.checkpointing.savepoint-dir": str(savepoints),
    })  # fmt: skip
    url = client.get_rest_address()
    assert url is not None
    try:
        monkeypatch.delenv("UNDERTOW_REST_TOKEN", raising=False)
        assert main(["savepoint", url]) == 2
        assert "401" in capsys.readouterr().err and not savepoints.exists()
        monkeypatch.setenv("UNDERTOW_REST_TOKEN", "cli-token")
        assert main(["savepoint", url]) == 0
        assert any(savepoints.iterdir())
        assert main(["cancel", url]) == 0
        with pytest.raises(JobCancelledError):
            client.get_job_execution_result(30)
    finally:
        client.cancel()


def test_nothing_at_the_default_address_names_where_a_local_job_serves(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """``undertow list`` without a URL asks Flink's default address; a job on a local target
    serves on a free port, so the error says where to find it (the default is patched to a
    port nothing serves: another test's job may hold 8081)."""
    monkeypatch.setattr(stop, "DEFAULT_REST_ADDRESS", "http://127.0.0.1:1")
    with pytest.raises(StopError, match=r"http://127.0.0.1:1/jobs/x: .*a job on the local or "
                       r"local-threads target serves its REST API on a free port"):  # fmt: skip
        stop.call("http://127.0.0.1:1/jobs/x")
    with pytest.raises(StopError) as other:  # another address: no such hint
        stop.call("http://127.0.0.1:2/jobs/x")
    assert "free port" not in str(other.value)
