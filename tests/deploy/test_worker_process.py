"""A ``local`` worker process's entry (:mod:`undertow.deploy.worker_process`): a worker that
cannot start says why on stderr, naming its index, and exits 1."""

from __future__ import annotations

import pickle

import pytest

from undertow.deploy.worker_process import run


def test_a_worker_that_cannot_start_names_itself_and_exits_1(
    capsys: pytest.CaptureFixture[str],
) -> None:
    config = {"python.executable": "/nope/python"}
    arguments = pickle.dumps((3, 0, ("127.0.0.1", 1), b"s" * 32, config))
    assert run(arguments) == 1
    assert "undertow worker 3: python.executable is '/nope/python'" in capsys.readouterr().err
