"""The dashboard in a real headless Chromium against a running job's REST API."""

from __future__ import annotations

import datetime
import re
from typing import Any

from tests.rest_client import Job, wait_for


def _ids(browser: Any) -> list[int]:
    """The checkpoint ids in the history table (read in one step: the page re-renders)."""
    ids = browser.execute_script(
        "return [...document.querySelectorAll('#checkpoint-history tbody tr')]"
        ".map((row) => Number(row.dataset.id));"
    )
    return [int(i) for i in ids]


def _text(browser: Any, selector: str) -> str | None:
    """The text of the first element matching ``selector`` now, or None."""
    text: str | None = browser.execute_script(
        "const e = document.querySelector(arguments[0]); return e ? e.innerText : null;",
        selector,
    )
    return text


def test_job_list_links_to_the_job(job: Job, browser: Any) -> None:
    from selenium.webdriver.common.by import By

    browser.get(job.url + "/")
    row = wait_for(lambda: browser.find_elements(By.ID, f"job-{job.jid}"), "the job's row")[0]
    assert "web test job" in row.text and "RUNNING" in row.text
    row.find_element(By.TAG_NAME, "a").click()
    wait_for(lambda: browser.find_elements(By.ID, "graph"), "the job graph")
    assert browser.current_url.endswith(f"#/job/{job.jid}/overview")


def test_graph_shows_vertices_edges_and_metrics(job: Job, browser: Any) -> None:
    details = job.get(f"/jobs/{job.jid}")
    browser.get(f"{job.url}/#/job/{job.jid}/overview")
    # one step per read: the page re-renders on every refresh
    read = """return {
        rows: [...document.querySelectorAll('#vertices tbody tr')].map((r) => r.innerText),
        boxes: [...document.querySelectorAll('#graph g.vertex')].map((g) => ({
            id: g.id, text: g.textContent, busy: Number(g.dataset.busy),
            backpressured: Number(g.dataset.backpressured)})),
        edges: [...document.querySelectorAll('#graph text.edge')].map((t) => t.textContent),
    };"""

    def complete() -> Any:
        page = browser.execute_script(read)
        watermarked = [r for r in page["rows"] if "No Watermark" not in r]
        return page if len(watermarked) == len(details["vertices"]) else None

    page = wait_for(complete, "every vertex with its watermark")
    boxes = {box["id"]: box for box in page["boxes"]}
    for vertex in details["vertices"]:
        box = boxes[f"vertex-{vertex['id']}"]
        assert vertex["name"][:39] in box["text"]
        assert 0.0 <= box["busy"] <= 1.0 and 0.0 <= box["backpressured"] <= 1.0
    described = [box for box in page["boxes"] if "doubles each number" in box["text"]]
    assert len(described) == 1  # set_description, as the vertex's tooltip
    assert "HASH" in page["edges"], page["edges"]
    # the watermark of 1_700_000_000_000 + n ms (2023-11-14T22:13:20Z on): shown as a UTC
    # instant; a fast source passes midnight (7 M records, 2023-11-15T00:05:41.100Z seen)
    shown = re.search(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z", page["rows"][0])
    assert shown is not None, page["rows"][0]
    instant = datetime.datetime.fromisoformat(shown.group().replace("Z", "+00:00"))
    assert instant.timestamp() * 1000 >= 1_700_000_000_000, page["rows"][0]


def test_checkpoint_history_appears_and_updates(job: Job, browser: Any) -> None:
    browser.get(f"{job.url}/#/job/{job.jid}/checkpoints")
    first = wait_for(lambda: _ids(browser), "a checkpoint in the history")
    newest = max(first)
    later = wait_for(lambda: [i for i in _ids(browser) if i > newest], "a newer checkpoint")
    assert later
    counts = (_text(browser, "#checkpoint-counts") or "").split()
    assert int(counts[2]) >= 1  # completed
    config = _text(browser, "#checkpoint-config") or ""
    assert "EXACTLY_ONCE" in config and "300 ms" in config
    summary = _text(browser, "#checkpoint-summary") or ""
    assert "End to end duration" in summary
    # per-subtask details of a completed checkpoint
    completed = job.get(f"/jobs/{job.jid}/checkpoints")["latest"]["completed"]["id"]
    wait_for(lambda: completed in _ids(browser), "the completed checkpoint on the page")
    browser.execute_script(f"document.getElementById('checkpoint-{completed}').click();")
    text = wait_for(
        lambda: _text(browser, "#checkpoint-details .subtask-details"), "the per-subtask details"
    )
    assert "Start delay" in text and "Alignment" in text and "completed" in text


def test_exceptions_tab_without_failures(job: Job, browser: Any) -> None:
    from selenium.webdriver.common.by import By

    browser.get(f"{job.url}/#/job/{job.jid}/exceptions")
    panel = wait_for(lambda: browser.find_elements(By.ID, "exceptions"), "the exceptions panel")
    assert "No exceptions." in panel[0].text


def _press(browser: Any, button: str, directory: str) -> None:
    """Click a savepoint button and answer its directory prompt."""
    from selenium.webdriver.support import expected_conditions
    from selenium.webdriver.support.ui import WebDriverWait

    wait_for(
        lambda: browser.execute_script(
            "const b = document.getElementById(arguments[0]); return b && !b.disabled;", button
        ),
        f"the {button} button",
    )
    browser.execute_script("document.getElementById(arguments[0]).click();", button)
    alert = WebDriverWait(browser, 10).until(expected_conditions.alert_is_present())
    alert.send_keys(directory)
    alert.accept()


def test_savepoint_button_takes_a_savepoint(job: Job, browser: Any, tmp_path: Any) -> None:
    browser.get(f"{job.url}/#/job/{job.jid}/overview")
    _press(browser, "savepoint", str(tmp_path / "sp"))
    message = wait_for(
        lambda: "completed" in (_text(browser, "#message") or "") and _text(browser, "#message"),
        "the savepoint's completion on the page",
    )
    assert f"savepoint completed: {tmp_path / 'sp'}" in message
    assert any((tmp_path / "sp").iterdir())
    assert job.get(f"/jobs/{job.jid}")["state"] == "RUNNING"
    browser.get(f"{job.url}/#/job/{job.jid}/checkpoints")  # the Checkpoints tab's latest savepoint
    latest = wait_for(
        lambda: (
            str(tmp_path / "sp") in (_text(browser, "#checkpoint-latest") or "")
            and _text(browser, "#checkpoint-latest")
        ),
        "the savepoint as the latest savepoint in the Checkpoints tab",
    )
    assert "Savepoint" in latest


def test_stop_button_stops_the_job_with_a_savepoint(browser: Any, tmp_path: Any) -> None:
    from tests.web.conftest import start_job

    client = start_job(str(tmp_path / "chk"), "stopped from the page")
    try:
        browser.get(f"{client.get_rest_address()}/#/job/{client.get_job_id()}/overview")
        _press(browser, "stop", str(tmp_path / "stop"))
        message = wait_for(
            lambda: (
                "completed" in (_text(browser, "#message") or "") and _text(browser, "#message")
            ),
            "the stop's completion on the page",
        )
        assert f"stop with savepoint completed: {tmp_path / 'stop'}" in message
        client.get_job_execution_result(30)  # FINISHED, no error
    finally:
        client.cancel()


def test_savepoint_button_asks_for_the_rest_token(browser: Any, tmp_path: Any) -> None:
    """With ``rest.token`` set, the page asks for the token when the API answers 401, sends it,
    and the savepoint completes (below the job's savepoint directory, as a token requires)."""
    from selenium.webdriver.support import expected_conditions
    from selenium.webdriver.support.ui import WebDriverWait
    from tests.web.conftest import start_job

    savepoints = tmp_path / "sp"
    client = start_job(str(tmp_path / "chk"), "token from the page", **{
        "rest.token": "page-token", "execution.checkpointing.savepoint-dir": str(savepoints),
    })  # fmt: skip
    try:
        browser.get(f"{client.get_rest_address()}/#/job/{client.get_job_id()}/overview")
        _press(browser, "savepoint", str(savepoints / "one"))
        alert = WebDriverWait(browser, 10).until(expected_conditions.alert_is_present())
        assert "token" in alert.text
        alert.send_keys("page-token")
        alert.accept()
        message = wait_for(
            lambda: (
                "completed" in (_text(browser, "#message") or "") and _text(browser, "#message")
            ),
            "the savepoint's completion on the page",
        )
        assert f"savepoint completed: {savepoints / 'one'}" in message
    finally:
        client.cancel()
