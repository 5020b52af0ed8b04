"""The control plane's messages: typed, frozen, slotted, and fenced by attempt number."""

from __future__ import annotations

import asyncio
import dataclasses
import typing

import pytest

from undertow.core.errors import ConfigurationError, UndertowError
from undertow.runtime.control import messages
from undertow.runtime.control.messages import (
    AddSplits,
    MasterMessage,
    NoMoreSplits,
    RestoreAssignment,
    TaskMetrics,
    WorkerMessage,
)
from undertow.runtime.master.enumerators import EnumeratorContext, _failing

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
    failures: list[BaseException] = []
    context = EnumeratorContext(
        lambda subtask, msg: sent.append((subtask, msg)), 7, 3, 2, fail=failures.append
    )
    context.assign_split("split-a", 1)
    context.signal_no_more_splits(0)
    assert sent == [(1, AddSplits(7, 3, 1, ["split-a"])), (0, NoMoreSplits(7, 3, 0))]
    assert failures == []


def test_what_a_call_async_handler_raises_fails_the_attempt_naming_the_source() -> None:
    """The handler runs on the loop after the call's thread: its error goes to the attempt's
    ``fail`` (an undertow error as it is, any other wrapped naming the source), not to the
    loop's exception handler, where a failed first partition discovery went unnoticed."""
    failures: list[UndertowError] = []

    def handler(result: object, error: BaseException | None) -> None:
        if error is not None:
            raise error
        raise KeyError(result)

    async def scenario() -> None:
        context = EnumeratorContext(
            lambda subtask, msg: None, 7, 3, 2, fail=_failing(failures.append, "orders")
        )
        context.call_async(lambda: "listed", handler)
        context.call_async(lambda: (_ for _ in ()).throw(ConfigurationError("bad")), handler)
        for _ in range(500):
            if len(failures) == 2:
                break
            await asyncio.sleep(0.01)

    asyncio.run(scenario())
    by_kind = {type(f).__name__: f for f in failures}
    assert sorted(by_kind) == ["ConfigurationError", "JobExecutionError"], failures
    wrapped = by_kind["JobExecutionError"]
    assert str(wrapped) == "the split enumerator of source 'orders' failed: KeyError('listed')"
    assert isinstance(wrapped.__cause__, KeyError)
