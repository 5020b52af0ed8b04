"""``core.errors``: RestoreError's path and reason; the notes an operator adds to a user
function's error, and the one-line description of a failure that a task's report carries."""

from __future__ import annotations

import pickle

from undertow.core.errors import RestoreError, StateError, describe, note_record


def test_a_restore_error_names_its_path_in_one_line_and_keeps_it_across_pickling() -> None:
    why = "operator 'sum' (uid 'sum') was checkpointed with max parallelism 256"
    bare = RestoreError(why)
    assert isinstance(bare, StateError) and str(bare) == why and bare.path is None
    placed = bare.at("/snapshots/savepoint-1")
    assert str(placed) == f"cannot restore from /snapshots/savepoint-1: {why}"
    assert placed.at("/elsewhere") is placed, "a refusal keeps the path it was given"
    remote = RestoreError(why, path="/s", remote_traceback="Traceback ...")
    again = pickle.loads(pickle.dumps(remote))
    assert (again.reason, again.path, again.remote_traceback) == (why, "/s", "Traceback ...")
    assert str(again) == f"cannot restore from /s: {why}"


class _BadRepr:
    def __repr__(self) -> str:
        raise RuntimeError("no repr")


def test_a_noted_error_keeps_its_type_and_message_and_names_the_record() -> None:
    err = ValueError("invalid literal for int() with base 10: 'x3'")
    note_record(err, "x3")
    assert type(err) is ValueError and str(err) == "invalid literal for int() with base 10: 'x3'"
    assert err.__notes__ == ["on the record 'x3'"]
    assert describe(err) == (
        "ValueError: invalid literal for int() with base 10: 'x3' (on the record 'x3')"
    )


def test_a_long_record_is_cut_and_a_record_whose_repr_raises_is_named_by_type() -> None:
    err = KeyError("k")
    note_record(err, "y" * 1000)
    note_record(err, _BadRepr())
    assert err.__notes__ == [
        f"on the record {('y' * 1000)!r:.200}",
        "on the record <a _BadRepr whose repr() raised>",
    ]
    assert describe(ValueError("plain")) == "ValueError: plain"
