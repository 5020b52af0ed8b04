"""What a running job tells a user function beside its records: each checkpoint's barrier
before it passes the function's operator (``prepare_snapshot_pre_barrier``, the hook the testing
kit's scheduled failures count on), then that the checkpoint completed.

Functions anywhere in a chain are told, not only its head, and a two-input function and a
window function as a one-input one is. Each function logs to a file per subtask and attempt.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from undertow.common import WatermarkStrategy
from undertow.datastream import (
    CoMapFunction,
    MapFunction,
    ProcessWindowFunction,
    RuntimeContext,
)
from undertow.datastream.connectors import DataGeneratorSource, DiscardingSink

from .conftest import EnvFactory

RECORDS, PER_SECOND = 600, 300.0  # each of two readers: about a second


class _Log:
    """Lines ``open -``, ``barrier <id>``, ``complete <id>`` in ``<directory>/<name>-<subtask>``."""

    def __init__(self, directory: Path, name: str) -> None:
        self.directory, self.name = str(directory), name
        self.path = ""

    def open(self, runtime_context: RuntimeContext) -> None:
        index = runtime_context.get_index_of_this_subtask()
        self.path = f"{self.directory}/{self.name}-{index}"
        self.write("open -")

    def write(self, line: str) -> None:
        with open(self.path, "a") as file:
            file.write(line + "\n")


class ToldMap(MapFunction):
    def __init__(self, log: _Log) -> None:
        self.log = log

    def open(self, runtime_context: RuntimeContext) -> None:
        self.log.open(runtime_context)

    def map(self, value: Any) -> Any:
        return value

    def prepare_snapshot_pre_barrier(self, checkpoint_id: int) -> None:
        self.log.write(f"barrier {checkpoint_id}")

    def notify_checkpoint_complete(self, checkpoint_id: int) -> None:
        self.log.write(f"complete {checkpoint_id}")


class ToldCoMap(CoMapFunction):
    def __init__(self, log: _Log) -> None:
        self.log = log

    def open(self, runtime_context: RuntimeContext) -> None:
        self.log.open(runtime_context)

    def map1(self, value: Any) -> Any:
        return value

    def map2(self, value: Any) -> Any:
        return value

    def prepare_snapshot_pre_barrier(self, checkpoint_id: int) -> None:
        self.log.write(f"barrier {checkpoint_id}")

    def notify_checkpoint_complete(self, checkpoint_id: int) -> None:
        self.log.write(f"complete {checkpoint_id}")


class ToldWindow(ProcessWindowFunction):
    def __init__(self, log: _Log) -> None:
        self.log = log

    def open(self, runtime_context: RuntimeContext) -> None:
        self.log.open(runtime_context)

    def process(self, key: Any, context: Any, elements: Any) -> Any:
        yield sum(elements)

    def prepare_snapshot_pre_barrier(self, checkpoint_id: int) -> None:
        self.log.write(f"barrier {checkpoint_id}")

    def notify_checkpoint_complete(self, checkpoint_id: int) -> None:
        self.log.write(f"complete {checkpoint_id}")


def unannounced(directory: Path, name: str) -> dict[int, tuple[int, list[int]]]:
    """subtask -> (how many checkpoints it was told completed, those of them it was not told
    of the barrier before)."""
    found = {}
    for path in sorted(directory.glob(f"{name}-*")):
        barriers: set[str] = set()
        completed, missed = 0, []
        for what, cid in (line.split() for line in path.read_text().splitlines()):
            if what == "barrier":
                barriers.add(cid)
            elif what == "complete":
                completed += 1
                if cid not in barriers:
                    missed.append(int(cid))
        found[int(path.name.rsplit("-", 1)[1])] = (completed, missed)
    return found


@pytest.mark.parametrize("target", ["local-threads", "local"])
def test_functions_in_a_chain_are_told_of_each_barrier_before_its_checkpoint_completes(
    make_env: EnvFactory, tmp_path: Path
) -> None:
    env = make_env(parallelism=2, config={
        "execution.checkpointing.interval": "50 ms",
        "execution.checkpointing.dir": str(tmp_path / "checkpoints"),
    })  # fmt: skip
    numbers = env.from_source(
        DataGeneratorSource(lambda i: i, RECORDS, PER_SECOND),
        WatermarkStrategy.no_watermarks(), "numbers",
    )  # fmt: skip
    # source -> map -> told map: one chain, the told function third
    chained = numbers.map(lambda v: v + 1).map(ToldMap(_Log(tmp_path, "map")))
    chained.connect(numbers).map(ToldCoMap(_Log(tmp_path, "co-map"))).sink_to(DiscardingSink())
    windows = numbers.key_by(lambda v: v % 4).count_window(50)
    windows.process(ToldWindow(_Log(tmp_path, "window"))).sink_to(DiscardingSink())
    env.execute("function hooks")

    for name in ("map", "co-map", "window"):
        subtasks = unannounced(tmp_path, name)
        assert sorted(subtasks) == [0, 1], (name, subtasks)
        for subtask, (completed, missed) in subtasks.items():
            assert completed, f"{name} {subtask}: no checkpoint completed while it ran"
            assert not missed, f"{name} {subtask}: told {missed} completed, not their barriers"
