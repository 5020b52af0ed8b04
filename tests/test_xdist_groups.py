"""``make test``'s ``-n 2 --dist loadgroup`` keeps each ``xdist_group`` on one worker.

tests/conftest.py puts every test in a group (the Spark context's tests, the Kafka broker's,
the network namespaces', otherwise its module), so that a resource of one process is started
once per run and a module fixture is paid once. pytest-xdist does it by appending ``@group``
to each node id on the workers; under pytest 9 (node ids held as ``NodeId``) that write is
lost, and every test became its own unit: two Spark contexts and two Kafka brokers per run,
and tests/test_docs_blocks.py's module fixture (every docs block, about 26 s in CI) run on
both workers. pyproject.toml pins pytest below 9 until pytest-xdist groups there.

This runs a small suite under the same options in a subprocess: one module whose tests share
a module fixture that notes each worker it runs on, and modules of other groups beside it.
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections import OrderedDict
from pathlib import Path

from tests.xdist_schedule import long_groups_first

CONFTEST = """
import pytest

def pytest_itemcollected(item):
    item.add_marker(pytest.mark.xdist_group(item.nodeid.split("::", 1)[0]))
"""

SHARED = """
import os
import pytest

@pytest.fixture(scope="module")
def shared():
    with open(os.environ["SETUPS"], "a") as out:
        out.write(os.environ.get("PYTEST_XDIST_WORKER", "main") + "\\n")

@pytest.mark.parametrize("i", range(12))
def test_shared(i, shared):
    pass
"""

OTHER = """
import time
import pytest

@pytest.mark.parametrize("i", range(12))
def test_other(i):
    time.sleep(0.02)
"""


def test_a_group_runs_on_one_worker(tmp_path: Path) -> None:
    suite = tmp_path / "suite"
    suite.mkdir()
    (suite / "conftest.py").write_text(CONFTEST)
    (suite / "test_shared.py").write_text(SHARED)
    for name in ("a", "b", "c"):
        (suite / f"test_other_{name}.py").write_text(OTHER)
    setups = tmp_path / "setups"
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-n", "2", "--dist", "loadgroup",
         "-p", "no:cacheprovider", str(suite)],
        cwd=suite, capture_output=True, text=True, timeout=120,
        # not this run's PYTEST_XDIST_WORKER or PYTEST_ADDOPTS
        env={**{k: v for k, v in os.environ.items() if not k.startswith("PYTEST_")},
             "SETUPS": str(setups)},
    )  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
    workers = setups.read_text().split()
    assert len(workers) == 1, (
        f"the module fixture of one xdist_group ran on {workers}: --dist loadgroup does not "
        f"group tests under this pytest and pytest-xdist\n{done.stdout}"
    )


def test_long_groups_go_out_first_and_the_others_keep_their_order() -> None:
    queue = OrderedDict((scope, {}) for scope in ["big", "a.py", "slow", "c.py", "slower"])
    long_groups_first(queue, ["slower", "slow", "absent"])
    assert list(queue) == ["slower", "slow", "big", "a.py", "c.py"]


SCHEDULE_CONFTEST = """
import pytest
from tests import xdist_schedule

xdist_schedule.LongGroupsFirst.long_groups = ("test_slow.py",)

def pytest_itemcollected(item):
    item.add_marker(pytest.mark.xdist_group(item.nodeid.split("::", 1)[0]))

@pytest.hookimpl(tryfirst=True)
def pytest_xdist_make_scheduler(config, log):
    return xdist_schedule.make_scheduler(config, log)
"""

STARTS = """
import os
import time
import pytest

@pytest.mark.parametrize("i", range(COUNT))
def test_one(i):
    with open(os.environ["STARTS"], "a") as out:
        out.write(__name__ + "\\n")
    time.sleep(0.01)
"""


def test_the_scheduler_hands_the_long_group_out_first(tmp_path: Path) -> None:
    """A group of one test named long starts among the first two groups (one per worker);
    pytest-xdist's own order would start it last."""
    suite = tmp_path / "suite"
    suite.mkdir()
    (suite / "conftest.py").write_text(SCHEDULE_CONFTEST)
    (suite / "test_slow.py").write_text(STARTS.replace("COUNT", "1"))
    for name in ("a", "b", "c", "d"):
        (suite / f"test_many_{name}.py").write_text(STARTS.replace("COUNT", "6"))
    starts = tmp_path / "starts"
    root = Path(__file__).resolve().parent.parent
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-n", "2", "--dist", "loadgroup",
         "-p", "no:cacheprovider", str(suite)],
        cwd=suite, capture_output=True, text=True, timeout=120,
        env={**{k: v for k, v in os.environ.items() if not k.startswith("PYTEST_")},
             "STARTS": str(starts), "PYTHONPATH": str(root)},
    )  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
    modules = list(dict.fromkeys(starts.read_text().split()))  # in order of first start
    assert "test_slow" in modules[:2], modules
