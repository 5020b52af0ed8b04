"""CommitSequence: one commit in flight, what is asked for meanwhile merged and sent next."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from undertow.connectors.kafka.offset_commits import CommitSequence
from undertow.connectors.kafka.offsets import KafkaTopicPartition

P0, P1 = KafkaTopicPartition("t", 0), KafkaTopicPartition("t", 1)


def test_a_commit_asked_for_while_one_is_in_flight_waits_merged_with_the_next() -> None:
    commits = CommitSequence()
    assert commits.ask({P0: 1, P1: 1}) == {P0: 1, P1: 1}
    assert commits.ask({P0: 2}) is None
    assert commits.ask({P0: 3}) is None
    assert commits.answered() == {P0: 3}
    assert commits.answered() is None
    assert not commits.in_flight
    assert commits.ask({P1: 4}) == {P1: 4}


#: a step: ask for these offsets (partition -> offset), or None: the commit in flight is answered
offsets = st.dictionaries(st.sampled_from([P0, P1]), st.integers(0, 99), min_size=1)
steps = st.lists(st.one_of(st.none(), offsets), max_size=30)


@given(steps)
def test_at_most_one_in_flight_and_the_group_ends_with_the_last_asked(
    script: list[dict[KafkaTopicPartition, int] | None],
) -> None:
    """Whatever the order of asks and answers: never two commits in flight, a partition's
    offsets are sent in the order they were asked for (never an older one after a newer),
    and once every commit is answered the last sent offset of each partition is the last one
    asked for."""
    commits = CommitSequence()
    asked: dict[KafkaTopicPartition, list[int]] = {P0: [], P1: []}
    sent: dict[KafkaTopicPartition, list[int]] = {P0: [], P1: []}
    in_flight = False
    for step in [*script, *[None] * (len(script) + 1)]:  # then answer until all are sent
        if step is None:
            if not in_flight:
                continue
            send = commits.answered()
            in_flight = False
        else:
            for tp, offset in step.items():
                asked[tp].append(offset)
            send = commits.ask(step)
        if send is not None:
            assert not in_flight, "a second commit in flight"
            in_flight = True
            for tp, offset in send.items():
                sent[tp].append(offset)
        assert commits.in_flight == in_flight
    assert not commits.waiting
    for tp in (P0, P1):
        assert sent[tp][-1:] == asked[tp][-1:], tp
        rest = iter(asked[tp])
        assert all(offset in rest for offset in sent[tp]), "sent out of the asked order"
