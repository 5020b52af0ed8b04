"""Evidence the oracle keeps from every attempt, not only the one that finished.

Accumulators reach the driver only from tasks that finish, so what a failed attempt saw (a
corrupt record at a verifying map, a duplicate at the sink, a state mismatch) would vanish with
it. With an ``evidence_dir``, each checking stage appends one JSON line per anomaly to a file of
its own (``<stage>-<subtask>-<run>.jsonl``, ``run`` drawn when the subtask opened) as soon as it
sees it: a line written before a ``kill -9`` survives in the OS's page cache. The verdict
(:meth:`~undertow.testing.oracle.OracleResult.from_job_result`) then adds the counts of every run
that is *not* one of the finishing attempt's (those publish their run ids in the accumulator
``oracle.runs``, and their anomalies are in the accumulators already).

Threading: one :class:`EvidenceLog` per subtask, used on its loop thread only; files of
different subtasks never collide. Reading happens once, after the job ended.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

RUNS = "oracle.runs"
"""Accumulator: the run ids of the finishing attempt's checking subtasks (a tuple)."""


class EvidenceLog:
    """Appends the anomalies of one checking subtask to its own file (see the module doc)."""

    def __init__(self, directory: str | None, stage: str, subtask: int, attempt: int,
                 run: int) -> None:  # fmt: skip
        self.run = run
        self._path = None
        if directory is not None:
            os.makedirs(directory, exist_ok=True)
            self._path = os.path.join(directory, f"{stage}-{subtask}-{run}.jsonl")
        self._header = {"stage": stage, "subtask": subtask, "attempt": attempt, "run": run}

    def record(self, counts: Mapping[str, int]) -> None:
        """Append the non-zero ``counts`` as one line (nothing without a directory)."""
        nonzero = {name: int(n) for name, n in counts.items() if n}
        if self._path is None or not nonzero:
            return
        line = json.dumps({**self._header, "counts": nonzero}) + "\n"
        fd = os.open(self._path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
        try:
            os.write(fd, line.encode())
        finally:
            os.close(fd)


def publish_run(accumulators: dict[str, Any], run: int) -> None:
    """Add ``run`` to the finishing attempt's run ids (tuples concatenate when summed)."""
    accumulators[RUNS] = (*accumulators.get(RUNS, ()), run)


def other_runs_counts(directory: str | os.PathLike[str] | None,
                      final_runs: Iterable[int]) -> tuple[dict[str, int], int]:  # fmt: skip
    """Summed anomaly counts of every run not in ``final_runs``, and how many such runs left
    evidence. A line that does not parse (a write cut by a kill) raises ``ValueError``
    naming the file and line: evidence is never skipped silently."""
    totals: dict[str, int] = {}
    if directory is None or not Path(directory).is_dir():
        return totals, 0
    final = set(final_runs)
    runs: set[int] = set()
    for path in sorted(Path(directory).glob("*.jsonl")):
        for number, line in enumerate(path.read_text().splitlines(), 1):
            try:
                entry = json.loads(line)
                run, counts = int(entry["run"]), dict(entry["counts"])
            except (ValueError, KeyError, TypeError) as err:
                raise ValueError(f"oracle evidence {path}, line {number}: {line!r}: {err}") from err
            if run in final:
                continue
            runs.add(run)
            for name, count in counts.items():
                totals[name] = totals.get(name, 0) + int(count)
    return totals, len(runs)
