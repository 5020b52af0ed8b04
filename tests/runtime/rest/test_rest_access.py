"""The REST API's access rules (:mod:`undertow.runtime.master.rest.access`): when a token is
required, how it is checked, and where savepoints may go; and the endpoint applying them."""

from __future__ import annotations

import json
import os
import stat
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from undertow.core.config import Configuration
from undertow.core.errors import ConfigurationError
from undertow.runtime.master.rest.access import RestAccess, resolve_access, within
from undertow.runtime.master.rest.server import RestEndpoint
from undertow.runtime.master.settings import RestSettings

JOB = "c" * 32
VIEW: Any = SimpleNamespace(job_id=JOB)
TOKEN = "s3cret-token"


def access_of(config: Configuration, host: str) -> RestAccess:
    """The access rules of an endpoint bound to ``host`` under ``config``."""
    return resolve_access(RestSettings.of(config.set_string("rest.bind-address", host)))


def test_loopback_needs_no_token_and_anywhere_else_gets_one_made_per_job() -> None:
    assert access_of(Configuration(), "127.0.0.1") == RestAccess(None)
    assert access_of(Configuration(), "::1").token is None
    assert access_of(Configuration(), "localhost").token is None
    first, second = (access_of(Configuration(), "0.0.0.0") for _ in range(2))
    assert first.generated and first.token and len(first.token) >= 40
    assert first.token != second.token  # per job
    assert "Bearer " + first.token in first.console_note()


def test_a_configured_token_is_required_on_loopback_too_and_never_printed() -> None:
    access = access_of(Configuration({"rest.token": TOKEN}), "127.0.0.1")
    assert access == RestAccess(TOKEN, False, "")
    assert TOKEN not in access.console_note() and "rest.token" in access.console_note()


def test_the_token_file_is_made_0600_once_and_read_again(tmp_path: Path) -> None:
    path = tmp_path / "conf" / "rest.token"
    config = Configuration({"rest.token-file": str(path)})
    made = access_of(config, "0.0.0.0")
    assert stat.S_IMODE(os.stat(path).st_mode) == 0o600 and not made.generated
    assert access_of(config, "0.0.0.0").token == made.token == path.read_text().strip()
    path.write_text("two words\n")
    with pytest.raises(ConfigurationError, match=r"rest\.token-file"):
        access_of(config, "0.0.0.0")


def test_the_token_is_checked_before_anything_else() -> None:
    access = RestAccess(TOKEN)
    missing = access.token_problem({})
    assert missing is not None and missing.status == 401
    assert access.token_problem({"authorization": f"Basic {TOKEN}"}) == missing
    wrong = access.token_problem({"authorization": "Bearer nope"})
    assert wrong is not None and wrong.status == 403
    assert access.token_problem({"authorization": f"bearer {TOKEN}"}) is None
    assert RestAccess(None).token_problem({}) is None


def test_savepoint_directories_stay_below_the_savepoint_dir(tmp_path: Path) -> None:
    root = tmp_path / "sp"
    access = RestAccess(TOKEN, savepoint_root=str(root))
    assert access.directory_problem(None) is None
    assert access.directory_problem(str(root)) is None
    assert access.directory_problem(str(root / "a" / "b")) is None
    assert access.directory_problem(f"file://{root}/a") is None
    for outside in (tmp_path / "sp-evil", root / ".." / "x", Path("/etc")):
        refusal = access.directory_problem(str(outside))
        assert refusal is not None and refusal.status == 403, outside
    root.mkdir()
    (root / "link").symlink_to(tmp_path)
    assert access.directory_problem(str(root / "link" / "x")) is not None
    none_configured = RestAccess(TOKEN, savepoint_root="").directory_problem(str(root))
    assert none_configured is not None and "not set" in none_configured.message
    assert RestAccess(TOKEN, savepoint_root=None).directory_problem("/anywhere") is None


def test_object_store_directories_compare_bucket_and_path() -> None:
    assert within("s3://bucket/sp/x", "s3://bucket/sp")
    assert not within("s3://other/sp/x", "s3://bucket/sp")
    assert not within("s3://bucket/sp/../y", "s3://bucket/sp")
    assert not within("/bucket/sp/x", "s3://bucket/sp")


@given(st.lists(st.sampled_from(["a", "b", "..", ".", "sp", "sp-x"]), max_size=6))
def test_a_directory_is_within_the_root_iff_its_normal_form_is(parts: list[str]) -> None:
    candidate = "/".join(["/r/sp", *parts])
    expected = os.path.normpath(candidate)
    assert within(candidate, "/r/sp") == (expected == "/r/sp" or expected.startswith("/r/sp/"))


class Master:
    def __init__(self) -> None:
        self.calls: list[str] = []

    def stop_with_savepoint_trigger(self, target: str | None, drain: bool, unaligned: bool = False,
                                    format_type: Any = None) -> str:  # fmt: skip
        self.calls.append(f"stop {target}")
        return "t1"

    def savepoint_operation(self, trigger_id: str) -> dict[str, Any] | None:
        return None

    def savepoint_trigger(self, target: str | None, unaligned: bool = False,
                          format_type: Any = None) -> str:  # fmt: skip
        self.calls.append(f"savepoint {target}")
        return "t2"

    def cancel(self) -> None:
        self.calls.append("cancel")


def send(endpoint: RestEndpoint, method: str, path: str, body: Any = None,
         token: str | None = None) -> Any:  # fmt: skip
    data = b"" if body is None else json.dumps(body).encode()
    lines = [f"{method} {path} HTTP/1.1", "Host: 10.1.2.3:8081",
             "Content-Type: application/json", f"Content-Length: {len(data)}"]  # fmt: skip
    if token is not None:
        lines.append(f"Authorization: Bearer {token}")
    return endpoint.respond(("\r\n".join(lines) + "\r\n\r\n").encode(), data, len(data))


@pytest.mark.parametrize(
    ("method", "path", "body", "call"),
    [
        ("POST", f"/jobs/{JOB}/stop", {"drain": False}, "stop None"),
        ("POST", f"/jobs/{JOB}/savepoints", {}, "savepoint None"),
        ("PATCH", f"/jobs/{JOB}?mode=cancel", None, "cancel"),
    ],
)
def test_every_action_off_loopback_needs_the_token(
    method: str, path: str, body: Any, call: str
) -> None:
    master = Master()
    endpoint = RestEndpoint(lambda: VIEW, "0.0.0.0", 0, master, RestAccess(TOKEN, False, "/sp"))
    refused = send(endpoint, method, path, body)
    assert refused.status == 401 and b"WWW-Authenticate: Bearer" in refused.encode()
    assert send(endpoint, method, path, body, "wrong").status == 403
    assert master.calls == []
    assert send(endpoint, method, path, body, TOKEN).status == 202
    assert master.calls == [call]


def test_reads_need_no_token_and_targets_are_checked_after_it() -> None:
    master = Master()
    endpoint = RestEndpoint(lambda: VIEW, "0.0.0.0", 0, master, RestAccess(TOKEN, False, "/sp"))
    assert endpoint.respond(b"GET /jobs HTTP/1.1\r\nHost: 10.1.2.3\r\n\r\n").status != 401
    outside = send(endpoint, "POST", f"/jobs/{JOB}/stop", {"targetDirectory": "/tmp/x"}, TOKEN)
    assert outside.status == 403 and "savepoint-dir" in outside.body["errors"][0]
    other = send(endpoint, "POST", f"/jobs/{JOB}/savepoints", {"target-directory": "/x"}, TOKEN)
    assert other.status == 403
    inside = send(endpoint, "POST", f"/jobs/{JOB}/savepoints", {"target-directory": "/sp/1"},
                  TOKEN)  # fmt: skip
    assert inside.status == 202 and master.calls == ["savepoint /sp/1"]
