"""Fencing of older attempts on both planes (ARCHITECTURE §9, issue 30).

A worker of an older attempt may live on: behind a network partition, on a host the JobMaster
thought dead, or stopped and resumed. Every control message carries its attempt number (the
JobMaster ignores older ones), and every connection starts with an HMAC handshake keyed by the
attempt's own key (:func:`~undertow.runtime.network.framing.attempt_secret`): an older
attempt's worker cannot open a control connection to the JobMaster of a newer attempt nor a
data connection to any worker of it, so it can deliver no data and send no acknowledgement.
The worker's half: its control connection ends when its messages go unacknowledged for
``heartbeat.timeout`` (a partition from the JobMaster), and with it the worker and its tasks
(tests/cluster/test_spark_hosts.py cuts a host off the driver to show it across hosts).
"""

from __future__ import annotations

import asyncio
import socket
import sys
import time
from pathlib import Path

import pytest

from undertow.common import Configuration
from undertow.core.errors import AuthenticationError, NetworkError
from undertow.datastream import StreamExecutionEnvironment
from undertow.runtime.control.connection import ControlConnection, limit_unacknowledged_time
from undertow.runtime.network.framing import attempt_secret, client_handshake
from undertow.runtime.network.transport import NetworkEnvironment
from undertow.testing.oracle import FailingMap, OracleSource, build_pipeline

JOB_SECRET = b"j" * 32


def test_each_attempt_has_its_own_key_and_none_is_the_jobs() -> None:
    keys = {attempt_secret(JOB_SECRET, attempt) for attempt in range(50)}
    assert len(keys) == 50 and JOB_SECRET not in keys
    assert attempt_secret(JOB_SECRET, 3) == attempt_secret(JOB_SECRET, 3)
    assert attempt_secret(b"k" * 32, 3) != attempt_secret(JOB_SECRET, 3)


async def _dial(port: int, key: bytes) -> None:
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    try:
        await client_handshake(reader, writer, key, 0)
    finally:
        writer.close()


def test_a_worker_of_an_older_attempt_cannot_reach_a_newer_attempts_data_port() -> None:
    async def scenario() -> None:
        newer = NetworkEnvironment(1, attempt_secret(JOB_SECRET, 2), bind_host="127.0.0.1",
                                   max_frame_size=1 << 20, on_failure=lambda err: None)  # fmt: skip
        port = await newer.start_server()
        try:
            with pytest.raises(AuthenticationError):
                await asyncio.wait_for(_dial(port, attempt_secret(JOB_SECRET, 1)), 10)
            await asyncio.wait_for(_dial(port, attempt_secret(JOB_SECRET, 2)), 10)
        finally:
            newer.close()

    asyncio.run(scenario())


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="TCP_USER_TIMEOUT is Linux's")
def test_a_workers_control_connection_times_out_after_the_heartbeat_timeout() -> None:
    """The worker's fence is set on its socket: unacknowledged data ends it after the timeout."""

    async def scenario() -> int:
        server = await asyncio.start_server(lambda r, w: None, "127.0.0.1", 0)
        port = server.sockets[0].getsockname()[1]
        _, writer = await asyncio.open_connection("127.0.0.1", port)
        try:
            assert limit_unacknowledged_time(writer, 4.25)
            sock = writer.get_extra_info("socket")
            return int(sock.getsockopt(socket.IPPROTO_TCP, socket.TCP_USER_TIMEOUT))
        finally:
            writer.close()
            server.close()

    assert asyncio.run(scenario()) == 4250


def test_a_failed_control_connection_raises_a_network_error_naming_its_peer() -> None:
    async def scenario() -> None:
        reader = asyncio.StreamReader()
        reader.set_exception(TimeoutError(110, "Connection timed out"))
        conn = ControlConnection(reader, None, "JobMaster", 1 << 20)  # type: ignore[arg-type]
        with pytest.raises(NetworkError, match="control connection to JobMaster failed"):
            await conn.recv()

    asyncio.run(scenario())


@pytest.mark.timeout(120)
def test_after_a_restart_the_older_attempts_key_no_longer_opens_the_jobmaster(
    tmp_path: Path,
) -> None:
    """A job restarts once (a scheduled failure); then a client holding attempt 0's key is
    dropped by the JobMaster's control port, and one holding the current attempt's is let in."""
    config = Configuration({
        "execution.target": "local-threads",
        "execution.checkpointing.interval": "100 ms",
        "execution.checkpointing.dir": str(tmp_path),
        "restart-strategy.type": "fixed-delay",
        "restart-strategy.fixed-delay.attempts": "2",
        "restart-strategy.fixed-delay.delay": "0 ms",
        "rest.port": "-1",
    })  # fmt: skip
    env = StreamExecutionEnvironment.get_execution_environment(config)
    env.set_parallelism(1)
    build_pipeline(env, OracleSource(4, 4000, records_per_second=2000.0),
                   failing_map=FailingMap([1]))  # fmt: skip
    client = env.execute_async("fenced")
    master = client._master  # the JobMaster in this process: its control address and secret
    try:
        deadline = time.monotonic() + 60
        while master.attempt < 1 and time.monotonic() < deadline:
            time.sleep(0.05)
        assert master.attempt >= 1, "the job did not restart"
        host, port = master._address

        async def dial(key: bytes) -> None:
            reader, writer = await asyncio.open_connection(host, port)
            try:
                await client_handshake(reader, writer, key, 0)
            finally:
                writer.close()

        with pytest.raises(AuthenticationError):
            asyncio.run(asyncio.wait_for(dial(attempt_secret(master.secret, 0)), 10))
        asyncio.run(asyncio.wait_for(dial(attempt_secret(master.secret, master.attempt)), 10))
    finally:
        client.cancel()
        # ended (cancelled, or done first) before the next test: a job left running is still
        # tracked by the exit hook, whose test then met it
        client.get_job_execution_result().exception(timeout=60)
