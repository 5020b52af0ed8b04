"""What only the ``spark`` target adds: slot checks, a hard stop that leaves no worker behind,
worker log lines that say where they come from, and data ports that refuse strangers.
(On Spark, worker log lines go through the JVM's stderr, which pytest cannot capture per test:
``tests/cli/test_run_on_spark.py`` checks them in a subprocess.)

The jobs run on the suite's shared local Spark session (``local[2]``); the oracle pipeline and
its counts are those of docs/testing.md.
"""

from __future__ import annotations

import asyncio
import os
import re
import socket
import time
from pathlib import Path
from typing import Any

import pytest

from undertow.core.errors import AuthenticationError, DeploymentError, JobCancelledError
from undertow.datastream import JobStatus
from undertow.datastream.functions import MapFunction
from undertow.runtime.network.framing import client_handshake
from undertow.testing._faults import worker_process_pids
from undertow.testing.oracle import OracleResult, OracleSource, build_pipeline

from .conftest import EnvFactory

KEYS, RECORDS_PER_KEY = 20, 2000


def wait_running(client: Any, timeout: float = 60.0) -> None:
    deadline = time.monotonic() + timeout
    while client.get_job_status().result() is not JobStatus.RUNNING:
        assert time.monotonic() < deadline, f"job not running after {timeout} s"
        time.sleep(0.02)


def listening_ports(pid: int) -> list[tuple[str, int]]:
    """(address, port) of the TCP sockets process ``pid`` listens on, from /proc."""
    inodes = set()
    for fd in os.listdir(f"/proc/{pid}/fd"):
        try:
            target = os.readlink(f"/proc/{pid}/fd/{fd}")
        except OSError:
            continue
        if target.startswith("socket:["):
            inodes.add(target[8:-1])
    found = []
    with open("/proc/net/tcp") as table:
        for row in table.readlines()[1:]:
            fields = row.split()
            local, state, inode = fields[1], fields[3], fields[9]
            if state == "0A" and inode in inodes:  # 0A = LISTEN
                address_hex, port_hex = local.split(":")
                address = socket.inet_ntoa(bytes.fromhex(address_hex)[::-1])
                found.append((address, int(port_hex, 16)))
    return found


@pytest.mark.parametrize("target", ["spark"])
def test_more_workers_than_spark_slots_fails_at_once(make_env: EnvFactory) -> None:
    env = make_env(parallelism=3, config={"undertow.workers": "3"})
    env.from_collection([1, 2, 3]).map(lambda x: x).print()
    started = time.monotonic()
    with pytest.raises(DeploymentError, match=r"needs 3 Spark task slots .* offers 2"):
        env.execute("too wide")
    assert time.monotonic() - started < 5


@pytest.mark.parametrize("target", ["spark"])
def test_cancel_stops_every_worker_within_seconds(make_env: EnvFactory, tmp_path: Path) -> None:
    config = {"execution.checkpointing.interval": "200 ms",
              "execution.checkpointing.dir": str(tmp_path)}  # fmt: skip
    env = make_env(parallelism=2, config=config)
    build_pipeline(env, OracleSource(KEYS, 100_000, records_per_second=2_000.0))
    client = env.execute_async("to be cancelled")
    wait_running(client)
    assert worker_process_pids(), "no Spark Python worker hosts an undertow worker"
    started = time.monotonic()
    client.cancel()
    with pytest.raises(JobCancelledError):
        client.get_job_execution_result(timeout=60)
    while worker_process_pids():
        assert time.monotonic() - started < 10, f"workers left: {worker_process_pids()}"
        time.sleep(0.05)
    assert client.get_job_status().result() is JobStatus.CANCELED


@pytest.mark.parametrize("target", ["spark"])
def test_data_ports_refuse_peers_without_the_job_secret(make_env: EnvFactory) -> None:
    env = make_env(parallelism=2)
    build_pipeline(env, OracleSource(KEYS, RECORDS_PER_KEY, records_per_second=5_000.0))
    client = env.execute_async("strangers knock")
    wait_running(client)
    ports = [p for pid in worker_process_pids() for p in listening_ports(pid)]
    assert ports, "found no listening worker port"
    assert all(address == "127.0.0.1" for address, _ in ports), ports

    async def knock(address: str, port: int) -> None:
        # No secret at all: garbage instead of the handshake; the worker hangs up.
        reader, writer = await asyncio.open_connection(address, port)
        writer.write(os.urandom(64))
        await writer.drain()
        assert await asyncio.wait_for(reader.read(), 10) is not None
        writer.close()
        # The wrong secret: the handshake fails on our side or the worker closes.
        reader, writer = await asyncio.open_connection(address, port)
        with pytest.raises(AuthenticationError):
            await client_handshake(reader, writer, b"not the job secret", 0)
        writer.close()

    for address, port in ports:
        asyncio.run(knock(address, port))
    oracle = OracleResult.from_job_result(
        client.get_job_execution_result(timeout=120), KEYS, RECORDS_PER_KEY
    )
    oracle.assert_exactly_once()
    assert oracle.restarts == 0


class LoggingMap(MapFunction):
    def map(self, value: Any) -> Any:
        if value == 7:
            import logging

            logging.getLogger("user.job").warning("hi from map, value %s", value)
        return value


@pytest.mark.parametrize("target", ["local"])
def test_worker_log_lines_name_job_worker_and_subtask(
    make_env: EnvFactory, capfd: pytest.CaptureFixture[str]
) -> None:
    env = make_env(parallelism=2)
    env.from_collection(list(range(20))).rebalance().map(LoggingMap()).name("Logging").print()
    result = env.execute("logs")
    pattern = re.compile(
        r"WARNING \[job (\w{8}) worker \d Logging[^\]]* \(\d/2\)\] user.job: hi from map"
    )
    err = capfd.readouterr().err
    line = pattern.search(err)
    assert line is not None, err[-3000:]
    assert line.group(1) == result.get_job_id()[:8]
