"""The control plane's messages: typed, frozen, slotted, and fenced by attempt number."""

from __future__ import annotations

import dataclasses
import typing

import pytest

from undertow.runtime.control import messages
from undertow.runtime.control.messages import (
    AddSplits,
    MasterMessage,
    NoMoreSplits,
    RestoreAssignment,
    TaskMetrics,
    WorkerMessage,
)
from undertow.runtime.master.enumerators import EnumeratorContext

CONTROL = typing.get_args(WorkerMessage) + typing.get_args(MasterMessage)


def test_every_message_class_is_in_one_of_the_two_unions() -> None:
    defined = {
        obj
        for obj in vars(messages).values()
        if isinstance(obj, type) and dataclasses.is_dataclass(obj)
        and obj.__module__ == messages.__name__
    }  # fmt: skip
    # parts of messages, not messages: Deploy's restore, TaskMetricsReport's samples
    assert defined - set(CONTROL) == {RestoreAssignment, TaskMetrics}
    assert not set(typing.get_args(WorkerMessage)) & set(typing.get_args(MasterMessage))


@pytest.mark.parametrize(
    "cls", (*CONTROL, RestoreAssignment, TaskMetrics), ids=lambda c: c.__name__
)
def test_messages_are_frozen_slotted_and_typed_without_any(cls: type) -> None:
    assert cls.__dataclass_params__.frozen  # type: ignore[attr-defined]
    assert "__slots__" in vars(cls)
    for f in dataclasses.fields(cls):
        assert "Any" not in str(f.type), f"{cls.__name__}.{f.name}: {f.type}"


@pytest.mark.parametrize("cls", CONTROL, ids=lambda c: c.__name__)
def test_every_control_message_carries_the_attempt_number_first(cls: type) -> None:
    first = dataclasses.fields(cls)[0]
    assert first.name == "attempt" and first.type in ("int", "AttemptNumber")


def test_split_assignments_carry_the_attempt_that_created_the_enumerator() -> None:
    sent: list[tuple[int, MasterMessage]] = []
    context = EnumeratorContext(lambda subtask, msg: sent.append((subtask, msg)), 7, 3, 2)
    context.assign_split("split-a", 1)
    context.signal_no_more_splits(0)
    assert sent == [(1, AddSplits(7, 3, 1, ["split-a"])), (0, NoMoreSplits(7, 3, 0))]
