"""EndOfDataWatch: the final checkpoint is due once, when every subtask reached the end of its
data or finished, and again only in the next attempt."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from undertow.runtime.checkpoint.end_of_data import EndOfDataWatch

SUBTASKS = [(v, s) for v in (1, 2) for s in (0, 1)]


def test_due_once_every_subtask_reached_its_end() -> None:
    watch = EndOfDataWatch(SUBTASKS)
    for key in SUBTASKS[:-1]:
        watch.reached(key)
        assert not watch.due(set())
    watch.reached(SUBTASKS[-1])
    assert watch.due(set())
    assert not watch.due(set()), "requested once per attempt"


def test_finished_subtasks_count_and_a_new_attempt_starts_over() -> None:
    watch = EndOfDataWatch(SUBTASKS)
    assert not watch.due(set(SUBTASKS)), "all finished without any end of data: the job ends"
    watch.reached((1, 0))
    assert watch.due({(1, 1), (2, 0), (2, 1)})
    watch.reset()
    assert not watch.due({(1, 1), (2, 0), (2, 1)}), "the last attempt's reports are gone"
    watch.reached((1, 0))
    assert watch.due({(1, 1), (2, 0), (2, 1)})


@given(st.permutations(SUBTASKS), st.sets(st.sampled_from(SUBTASKS)))
def test_due_exactly_when_the_last_missing_subtask_reports(
    order: list[tuple[int, int]], finished: set[tuple[int, int]]
) -> None:
    watch = EndOfDataWatch(SUBTASKS)
    answers = []
    for key in order:
        watch.reached(key)
        answers.append(watch.due(finished))
    missing = [i for i, key in enumerate(order) if key not in finished]
    last = missing[-1] if missing else 0
    assert answers == [i == last for i in range(len(order))]
