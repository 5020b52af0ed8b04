"""Fencing of older attempts on both planes (ARCHITECTURE §9, issue 30).

A worker of an older attempt may live on: behind a network partition, on a host the JobMaster
thought dead, or stopped and resumed. Every control message carries its attempt number (the
JobMaster ignores older ones), and every connection starts with an HMAC handshake keyed by the
attempt's own key (:func:`~undertow.runtime.network.framing.attempt_secret`): an older
attempt's worker cannot open a control connection to the JobMaster of a newer attempt nor a
data connection to any worker of it, so it can deliver no data and send no acknowledgement.
"""

from __future__ import annotations

import asyncio
import time
from pathlib import Path

import pytest

from undertow.common import Configuration
from undertow.core.errors import AuthenticationError
from undertow.datastream import StreamExecutionEnvironment
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
