"""A worker's Python environment (:mod:`undertow.deploy.python_environment`): what the threads
target refuses, and what a worker process puts on its path and in its working directory, then
takes back."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

from undertow.common.python_dependencies import PythonDependencies
from undertow.core.errors import DeploymentError
from undertow.deploy.python_environment import (
    PYTHON_VARIABLE,
    WorkerEnvironment,
    check_target,
    same_place,
)


def test_local_threads_refuse_what_needs_a_process_of_its_own() -> None:
    check_target(PythonDependencies(executable="/usr/bin/python-other"), "local")
    with pytest.raises(DeploymentError, match=r"python\.executable '/usr/bin/python-other'"):
        check_target(PythonDependencies(executable="/usr/bin/python-other"), "local-threads")
    check_target(PythonDependencies(executable=sys.executable), "local-threads")


def test_a_worker_sees_its_files_and_leaves_no_trace(tmp_path: Path) -> None:
    module = tmp_path / "helper_for_worker_env.py"
    module.write_text("VALUE = 7\n")
    before_path, before_cwd = list(sys.path), os.getcwd()
    with WorkerEnvironment(PythonDependencies(files=(str(module),)), same_place):
        assert os.environ[PYTHON_VARIABLE] == sys.executable  # as PyFlink's workers export it
        folder = os.getcwd()
        assert folder != before_cwd and any(p.startswith(folder) for p in sys.path)
    assert sys.path == before_path and os.getcwd() == before_cwd
    assert not os.path.exists(folder)


def test_another_interpreter_is_refused_naming_both() -> None:
    environment = WorkerEnvironment(PythonDependencies(executable="/nope/python"), same_place)
    with pytest.raises(DeploymentError, match=r"python\.executable is '/nope/python'"):
        environment.__enter__()
