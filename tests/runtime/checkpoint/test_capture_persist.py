"""runtime.checkpoint.capture_persist: each capture decision becomes its writer call, and a
run of an older file is referred to only where the decision, the run and the writer allow it,
else its chunks are written again."""

from __future__ import annotations

from typing import Any

import pytest

from undertow.runtime.checkpoint.capture_persist import persist
from undertow.runtime.checkpoint.channel_recovery.stream import RestoredRun
from undertow.runtime.checkpoint.channel_state_handles import ChannelStateReference
from undertow.runtime.checkpoint.inflight_capture import (
    FinishInput,
    FinishOutput,
    PersistInput,
    PersistInputRun,
    PersistOutput,
    PersistOutputRun,
    ScheduleOutputTimeout,
    StartChannelState,
)
from undertow.storage import FileHandle

OLD = FileHandle("chk-3/channel-state-a", 100, "ab" * 32)
DATA = bytes(range(100))


def run(referencable: bool) -> RestoredRun:
    reference = ChannelStateReference((0, 0), 0, OLD, 0, 100, "cd" * 32, 10, (30, 60))
    return RestoredRun(reference, referencable, lambda path, start, length: DATA[start:][:length])


class Writer:
    """Records every call a channel-state writer gets."""

    def __init__(self) -> None:
        self.calls: list[tuple[Any, ...]] = []

    def start(self, cid: int) -> None:
        self.calls.append(("start", cid))

    def add_input(self, cid: int, channel: Any, chunk: bytes) -> None:
        self.calls.append(("input", cid, channel, chunk))

    def add_output(self, cid: int, channel: Any, chunk: bytes) -> None:
        self.calls.append(("output", cid, channel, chunk))

    def finish_input(self, cid: int) -> None:
        self.calls.append(("finish input", cid))

    def finish_output(self, cid: int) -> None:
        self.calls.append(("finish output", cid))


class ReferringWriter(Writer):
    def add_input_reference(self, cid: int, channel: Any, reference: Any) -> None:
        self.calls.append(("input ref", cid, channel, reference.length))

    def add_output_reference(self, cid: int, channel: Any, reference: Any) -> None:
        self.calls.append(("output ref", cid, channel, reference.length))


def test_each_decision_is_its_writer_call_in_order() -> None:
    writer, timeouts = Writer(), []
    persist(writer, [  # type: ignore[arg-type]
        StartChannelState(7), PersistInput(7, (0, 1), b"in"), None,
        PersistOutput(7, (1, 0), b"out"), FinishInput(7), ScheduleOutputTimeout(7, 25),
        FinishOutput(7),
    ], lambda cid, delay: timeouts.append((cid, delay)))  # fmt: skip
    assert writer.calls == [
        ("start", 7), ("input", 7, (0, 1), b"in"), ("output", 7, (1, 0), b"out"),
        ("finish input", 7), ("finish output", 7),
    ]  # fmt: skip
    assert timeouts == [(7, 25)]


@pytest.mark.parametrize("side", ["input", "output"])
def test_a_run_is_referred_to_only_when_decision_run_and_writer_allow_it(side: str) -> None:
    decide = PersistInputRun if side == "input" else PersistOutputRun
    written = [(side, 7, (0, 0), DATA[10:40]), (side, 7, (0, 0), DATA[40:100])]
    cases = [  # (writer, run referencable, decision refers) -> calls
        (ReferringWriter(), True, True, [(f"{side} ref", 7, (0, 0), 90)]),
        (ReferringWriter(), False, True, written),  # not the job's own file
        (ReferringWriter(), True, False, written),  # a savepoint: self-contained
        (Writer(), True, True, written),  # the writer cannot refer
    ]
    for writer, referencable, refer, calls in cases:
        persist(writer, [decide(7, (0, 0), run(referencable), refer)],  # type: ignore[arg-type]
                lambda cid, delay: None)  # fmt: skip
        assert writer.calls == calls, (type(writer).__name__, referencable, refer)
