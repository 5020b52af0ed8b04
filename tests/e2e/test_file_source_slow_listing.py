"""A file source whose first listing hangs (an object store, a huge directory, a hung NFS
mount): the JobMaster's loop, which hosts the source's enumerator, deploys the job and serves
REST meanwhile, and once the listing ends the job reads every file (docs/connectors.md). Until
2026-12-02 the first listing ran on the loop, which answered nothing until it ended."""

from __future__ import annotations

import json
import time
import urllib.request
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

import fsspec  # type: ignore[import-untyped]
import pytest
from tests import slow_listing_fs

from undertow.common import Configuration, Encoder, WatermarkStrategy
from undertow.datastream import JobStatus, StreamExecutionEnvironment
from undertow.datastream.connectors.file_system import FileSink, FileSource, StreamFormat


def _wait_for(condition: Callable[[], bool], what: str, timeout_s: float) -> None:
    deadline = time.monotonic() + timeout_s
    while not condition():
        assert time.monotonic() < deadline, f"no {what} within {timeout_s} s"
        time.sleep(0.1)


def _job_state(client: Any) -> str:
    url = f"{client.get_rest_address()}/jobs/{client.get_job_id()}"
    with urllib.request.urlopen(url, timeout=3) as answer:
        return str(json.load(answer)["state"])


@pytest.mark.timeout(120)
def test_rest_answers_while_the_first_listing_hangs_and_the_files_are_read_after(
    tmp_path: Path,
) -> None:
    root = f"{slow_listing_fs.PROTOCOL}://{uuid.uuid4().hex}"
    fs = fsspec.filesystem(slow_listing_fs.PROTOCOL)
    for name in ("a", "b", "c"):
        fs.pipe(f"{root}/{name}.txt", f"{name}1\n{name}2\n".encode())
    slow_listing_fs.LISTING.clear()
    slow_listing_fs.RELEASE.clear()
    env = StreamExecutionEnvironment.get_execution_environment(Configuration({
        "execution.target": "local-threads", "rest.port": "0",
        "restart-strategy.type": "none",
        "execution.checkpointing.interval": "100 ms",
        "execution.checkpointing.dir": str(tmp_path / "checkpoints"),
    }))  # fmt: skip
    env.set_parallelism(2)
    source = FileSource.for_record_stream_format(StreamFormat.text_line_format(), root).build()
    out = tmp_path / "out"
    env.from_source(source, WatermarkStrategy.no_watermarks(), "files").sink_to(
        FileSink.for_row_format(str(out), Encoder.simple_string_encoder()).build()
    )
    client = env.execute_async("first listing hangs")
    try:
        assert slow_listing_fs.LISTING.wait(30), "the listing never started"
        _wait_for(lambda: client.get_job_status().result() is JobStatus.RUNNING, "deploy", 10)
        started = time.monotonic()
        for _ in range(5):  # every answer while the listing hangs
            assert _job_state(client) == "RUNNING"
            time.sleep(0.2)
        assert time.monotonic() - started < 10, "REST waited for the listing"
    finally:
        slow_listing_fs.RELEASE.set()
    _wait_for(lambda: client.get_job_status().result().is_globally_terminal_state(),
              "the job's end", 60)  # fmt: skip
    assert client.get_job_status().result() is JobStatus.FINISHED
    lines = [line for p in out.rglob("part*") for line in p.read_text().splitlines()]
    assert sorted(lines) == ["a1", "a2", "b1", "b2", "c1", "c2"]
