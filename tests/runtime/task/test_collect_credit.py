"""A collect sink's credit: available while above 0, wakes its task once granted, may go
below 0 by the batch the sink sends; the worker's registry keeps grants that come first."""

from __future__ import annotations

from undertow.runtime.task.collect_credit import (
    AvailabilityProvider,
    CollectCredit,
    CollectCredits,
)


def test_credit_is_available_while_above_zero_and_a_grant_wakes_the_waiting_task() -> None:
    credit = CollectCredit("s")
    woken: list[int] = []
    assert not credit.is_available()
    credit.notify_when_available(lambda: woken.append(1))
    credit.grant(10)
    assert credit.is_available() and woken == [1]
    credit.spend(25)  # one batch past the credit
    assert credit.credit == -15 and not credit.is_available()
    credit.notify_when_available(lambda: woken.append(2))
    credit.grant(10)  # still below 0: the task sleeps on
    assert woken == [1]
    credit.grant(10)
    assert woken == [1, 2] and (credit.granted, credit.spent) == (30, 25)


def test_the_registry_keeps_a_grant_that_came_before_the_sink() -> None:
    credits = CollectCredits()
    credits.grant("s", 5)
    gate = credits.gate("s")
    assert gate.credit == 5 and credits.gate("s") is gate
    provider: AvailabilityProvider = gate  # what the mailbox loop waits on
    assert provider.is_available()
