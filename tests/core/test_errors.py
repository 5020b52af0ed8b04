"""The exception hierarchy's behaviour beyond its classes: RestoreError's path and reason."""

from __future__ import annotations

import pickle

from undertow.core.errors import RestoreError, StateError


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
