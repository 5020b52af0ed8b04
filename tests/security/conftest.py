"""Shared pieces of the security suite: the frame fuzzer, a call recorder, the case count.

``frames()`` draws a byte stream as an authenticated peer could send it: well-formed frames
with random bodies, frames shaped like the data plane's BUFFER / CREDIT / RESUME messages with
random fields, bogus length prefixes and truncated frames, in any order. ``FUZZ_CASES``
counts the examples each fuzz test ran; the totals are printed at the end of the run.

The fuzz tests draw new cases every run: ``FUZZ_SEED`` is ``$UNDERTOW_TEST_SEED`` if set (to
replay a run), else random; ``FUZZ`` seeds every fuzz test with it and the seed is printed at
the end of the run with how to replay it (Hypothesis' example database also replays a failure
it saw before, first).
"""

from __future__ import annotations

import collections
import os
import random
import struct
from dataclasses import dataclass, field
from typing import Any

import pytest
from hypothesis import HealthCheck, seed, settings
from hypothesis import strategies as st

from undertow.runtime.network.framing import frame

FUZZ_CASES: collections.Counter[str] = collections.Counter()
#: The same cases by what they tried (e.g. the kind of malformed frame), printed under their test.
FUZZ_KINDS: collections.Counter[tuple[str, str]] = collections.Counter()
SEED_ENV = "UNDERTOW_TEST_SEED"
FUZZ_SEED = int(os.environ.get(SEED_ENV) or random.SystemRandom().randrange(2**32))
#: The fuzz tests' settings: new cases every run (see the module docstring).
FUZZ_SETTINGS = settings(
    deadline=None, derandomize=False, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
#: Seeds a fuzz test with this run's seed (decorate outside ``@given``).
fuzz_seed = seed(FUZZ_SEED)

u32 = st.integers(min_value=0, max_value=0xFFFFFFFF)
channel = st.sampled_from([0, 1]) | u32


@dataclass
class Recorder:
    """What a patched decoder was asked to decode, in order."""

    calls: list[tuple[str, Any]] = field(default_factory=list)


def _buffer(cid: int, seq: int, backlog: int, flags: int, payload: bytes) -> bytes:
    return frame(struct.pack(">cIIIB", b"B", cid, seq, backlog, flags) + payload)


pieces = st.one_of(
    st.binary(max_size=64).map(frame),
    st.builds(_buffer, channel, u32, u32, st.integers(0, 255), st.binary(max_size=64)),
    st.builds(lambda c, n: frame(struct.pack(">cII", b"C", c, n)), channel, u32),
    st.builds(lambda c: frame(struct.pack(">cI", b"R", c)), channel),
    st.builds(lambda n: struct.pack(">I", n), u32),  # a length prefix and nothing after it
    st.binary(min_size=1, max_size=32),  # unframed bytes
)


def frames() -> st.SearchStrategy[bytes]:
    return st.lists(pieces, min_size=1, max_size=6).map(b"".join)


def pytest_terminal_summary(terminalreporter: Any) -> None:
    if FUZZ_CASES:
        terminalreporter.write_sep("-", "security fuzz cases tried")
        terminalreporter.write_line(f"seed {FUZZ_SEED} (replay: {SEED_ENV}={FUZZ_SEED})")
        for name, count in sorted(FUZZ_CASES.items()):
            terminalreporter.write_line(f"{name}: {count}")
            for (test, kind), n in sorted(FUZZ_KINDS.items()):
                if test == name:
                    terminalreporter.write_line(f"    {kind}: {n}")
        terminalreporter.write_line(f"total: {sum(FUZZ_CASES.values())}")


@pytest.fixture
def fuzz_cases() -> collections.Counter[str]:
    return FUZZ_CASES
