"""Fuzzed bytes at the JobMaster's control port, before and after the HMAC handshake.

A real :class:`JobMaster` waits for its workers to register (the launcher starts none and
hands the test the control address and the job secret). Unauthenticated peers: no frame is
read and nothing unpickled (recording decoder in ``undertow.runtime.control.connection``), and
the job is unaffected. Authenticated peers sending malformed frames (bodies that are not a
pickle, bogus length prefixes, truncated frames): the connection is dropped, the job is
unaffected. After each fuzz test the JobMaster still runs and its real worker still gets in.
"""

from __future__ import annotations

import asyncio
import pickle
import pickletools
import threading
import time
from collections.abc import Iterator
from types import SimpleNamespace
from typing import Any

import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from undertow.common import Configuration
from undertow.datastream import StreamExecutionEnvironment
from undertow.graph.job_graph import build_job_graph
from undertow.runtime.control import connection as control
from undertow.runtime.master.job_master import JobMaster, JobStatus
from undertow.runtime.network.framing import client_handshake

from .conftest import FUZZ_CASES, FUZZ_SETTINGS, Recorder, frames, fuzz_seed
from .test_data_port_fuzz import JUNK

SANITY_PEER = "worker 5"


class WaitingLauncher:
    """Starts no worker; remembers where the JobMaster listens and the job secret."""

    def __init__(self) -> None:
        self.launched = threading.Event()
        self.master: tuple[str, int] = ("", 0)
        self.secret = b""

    def launch(self, num_workers: int, master: tuple[str, int], secret: bytes, attempt: int,
               config: dict[str, str]) -> None:  # fmt: skip
        self.master, self.secret = master, secret
        self.launched.set()

    def wait(self, timeout: float) -> bool:
        return False

    def kill(self) -> None:
        pass

    def exited(self) -> list[int]:
        return []

    def describe_exit(self, worker_index: int) -> str:
        return "still running"


@pytest.fixture(scope="module")
def master() -> Iterator[tuple[JobMaster, WaitingLauncher]]:
    env = StreamExecutionEnvironment(Configuration({"rest.port": "-1"}))
    env.from_collection([1, 2, 3]).map(str).print()
    graph = build_job_graph(env.get_stream_graph("control-port-fuzz"))
    launcher = WaitingLauncher()
    job = JobMaster(graph, Configuration({"rest.port": "-1"}), launcher, num_workers=1)
    job.start()
    assert launcher.launched.wait(10)
    yield job, launcher
    job.cancel()
    with pytest.raises(Exception):  # noqa: B017 - cancelled: whatever the job reports
        job.wait(timeout=10)


@pytest.fixture
def decoder(monkeypatch: pytest.MonkeyPatch) -> Recorder:
    recorder = Recorder()
    real_read_frame = control.read_frame

    async def read_frame(reader: Any, max_size: int, peer: str) -> bytes | None:
        if peer != SANITY_PEER:  # not the check that the real worker still gets in
            recorder.calls.append(("read_frame", peer))
        return await real_read_frame(reader, max_size, peer)

    def loads(data: bytes, *args: Any, **kwargs: Any) -> Any:
        recorder.calls.append(("pickle.loads", data))
        return pickle.loads(data, *args, **kwargs)

    monkeypatch.setattr(control, "read_frame", read_frame)
    monkeypatch.setattr(control, "pickle", SimpleNamespace(loads=loads, dumps=pickle.dumps))
    return recorder


def send(address: tuple[str, int], payload: bytes, *, secret: bytes | None,
         wait_for_nonce: bool = True, hello: int = 0) -> None:  # fmt: skip
    """Connect; authenticate as worker ``hello`` if ``secret``; send ``payload``; close."""

    async def main() -> None:
        reader, writer = await asyncio.open_connection(*address)
        if secret is not None:
            await client_handshake(reader, writer, secret, hello)
        elif wait_for_nonce:
            await reader.readexactly(16)
        writer.write(payload)
        await writer.drain()
        writer.close()
        await asyncio.sleep(0.002)

    asyncio.run(asyncio.wait_for(main(), 10))


def assert_job_unaffected(job: JobMaster, launcher: WaitingLauncher) -> None:
    assert not job.status.is_globally_terminal_state(), job.status
    assert job.status is not JobStatus.FAILED
    # The real worker still gets in (as worker 5, so the recorder can tell it apart).
    send(launcher.master, b"", secret=launcher.secret, hello=5)


@fuzz_seed
@settings(FUZZ_SETTINGS, max_examples=200)
@given(junk=JUNK, wait_for_nonce=st.booleans())
def test_unauthenticated_bytes_are_never_decoded(
    master: tuple[JobMaster, WaitingLauncher], decoder: Recorder, junk: bytes,
    wait_for_nonce: bool,
) -> None:  # fmt: skip
    FUZZ_CASES["control port, unauthenticated"] += 1
    job, launcher = master
    decoder.calls.clear()
    send(launcher.master, junk, secret=None, wait_for_nonce=wait_for_nonce)
    assert decoder.calls == [], "bytes of an unauthenticated peer were decoded"
    assert_job_unaffected(job, launcher)


def first_frame_body(stream: bytes) -> bytes | None:
    """The body of the first complete frame of ``stream``, if it has one."""
    if len(stream) < 4:
        return None
    length = int.from_bytes(stream[:4], "big")
    return stream[4 : 4 + length] if len(stream) >= 4 + length else None


def is_a_pickle(data: bytes) -> bool:
    """Whether ``data`` parses as a pickle (opcodes only: nothing is executed)."""
    try:
        pickletools.dis(data, out=_Discard())
    except Exception:
        return False
    return True


class _Discard:
    def write(self, text: str) -> int:
        return len(text)


@fuzz_seed
@settings(FUZZ_SETTINGS, max_examples=200)
@given(stream=frames())
def test_authenticated_malformed_frames_drop_the_connection_only(
    master: tuple[JobMaster, WaitingLauncher], decoder: Recorder, stream: bytes
) -> None:
    job, launcher = master
    # A first frame whose body is a pickle is a message (which a registered worker may send,
    # and whose disconnect then fails the attempt, as a dead worker's would): malformed only.
    first = first_frame_body(stream)
    assume(first is None or not is_a_pickle(first))
    FUZZ_CASES["control port, authenticated"] += 1
    decoder.calls.clear()
    send(launcher.master, stream, secret=launcher.secret)
    assert_job_unaffected(job, launcher)


def test_the_recorder_sees_authenticated_frames(
    master: tuple[JobMaster, WaitingLauncher], decoder: Recorder
) -> None:
    """The decoder patch is where the JobMaster decodes: an authenticated frame reaches it."""
    job, launcher = master
    body = b"\xff not a pickle"
    send(launcher.master, len(body).to_bytes(4, "big") + body, secret=launcher.secret)
    deadline = time.monotonic() + 5
    while ("pickle.loads", body) not in decoder.calls:
        assert time.monotonic() < deadline, decoder.calls
        time.sleep(0.01)
    assert_job_unaffected(job, launcher)
