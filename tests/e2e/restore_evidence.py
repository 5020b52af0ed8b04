"""Evidence that a restore happened, shared by the e2e restore tests (issue 12).

A bounded deterministic source replayed from its start gives a perfect tally, so a restore
test must also see the restore itself:

* the JobMaster's console line per restore (``restored from checkpoint 7 (unaligned, 1.2 MiB
  in-flight) in 40 ms``), failover included;
* REST ``latest.restored`` of ``/jobs/:id/checkpoints``, polled while the job runs (the API
  closes with the job) by :class:`RestWatcher`;
* what the finishing attempt did (:meth:`OracleResult.assert_restored`): fewer records than all
  (the source resumed), restored state, and for channel state records replayed before live
  data; for jobs without the oracle, :class:`CountingMap` counts what a stage handled in the
  finishing attempt.

Every check raises :class:`RestoreEvidenceMissing` (:func:`evidence`), the one failure a
restore control counts as caught.
"""

from __future__ import annotations

import json
import re
import threading
import urllib.request
from collections.abc import Callable
from typing import Any

from undertow.datastream import MapFunction, RuntimeContext
from undertow.testing.restore_control import RestoreEvidenceMissing, evidence

__all__ = [
    "RESTORED",
    "CountingMap",
    "RestWatcher",
    "assert_restores",
    "evidence",
    "handled_in_finishing_attempt",
    "restored_checkpoints",
]

RESTORED = re.compile(
    r"^\[undertow\] restored from (?:checkpoint|savepoint) (?P<cid>\d+) "
    r"\((?P<mode>aligned|unaligned), (?P<size>[\d.]+) (?P<unit>B|KiB|MiB|GiB) in-flight\) "
    r"in (?P<ms>\d+) ms$",
    re.M,
)
SCALE = {"B": 1, "KiB": 1024, "MiB": 1024**2, "GiB": 1024**3}


def restored_checkpoints(console: str) -> list[tuple[int, str, float]]:
    """Per restore line: (checkpoint id, aligned/unaligned, in-flight bytes)."""
    return [
        (int(m["cid"]), m["mode"], float(m["size"]) * SCALE[m["unit"]])
        for m in RESTORED.finditer(console)
    ]


class RestWatcher:
    """Polls ``/jobs/:id/checkpoints`` every 20 ms on a daemon thread until :meth:`stop`;
    keeps each distinct ``latest.restored.id`` in the order seen, and each completed
    checkpoint's (``checkpointed_size``, ``state_size``) and whole history entry by id, and
    each failed one's ``failure_message``; ``on_completed(id, entry)`` is called on its
    thread once per completed checkpoint seen, ``on_triggered(id)`` once per checkpoint seen
    in any state."""

    def __init__(
        self, client: Any, on_completed: Callable[[int, dict[str, Any]], None] | None = None,
        on_triggered: Callable[[int], None] | None = None,
    ) -> None:  # fmt: skip
        self.client = client
        self.on_completed = on_completed
        self.on_triggered = on_triggered
        self.triggered: set[int] = set()
        self.restored_ids: list[int] = []
        self.completed_sizes: dict[int, tuple[int, int]] = {}
        self.completed: dict[int, dict[str, Any]] = {}
        self.failed: dict[int, str] = {}
        self.errors = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="rest-watcher", daemon=True)
        self._thread.start()

    def _run(self) -> None:
        job_id = self.client.get_job_id()
        while not self._stop.wait(0.02):
            address = self.client.get_rest_address()
            if address is None:
                continue
            try:
                with urllib.request.urlopen(f"{address}/jobs/{job_id}/checkpoints", timeout=2) as r:
                    body = json.loads(r.read())
            except (OSError, ValueError):
                self.errors += 1  # not up yet, or closed with the job
                continue
            for entry in body.get("history", []):
                if self.on_triggered is not None and int(entry["id"]) not in self.triggered:
                    self.triggered.add(int(entry["id"]))
                    self.on_triggered(int(entry["id"]))
                if entry["status"] == "FAILED":
                    self.failed[int(entry["id"])] = str(entry.get("failure_message", ""))
                if entry["status"] == "COMPLETED" and not entry["is_savepoint"]:
                    cid = int(entry["id"])
                    sizes = (int(entry["checkpointed_size"]), int(entry["state_size"]))
                    self.completed_sizes[cid] = sizes
                    if cid not in self.completed and self.on_completed is not None:
                        self.on_completed(cid, entry)
                    self.completed[cid] = entry
            restored = body["latest"]["restored"]
            if restored is not None and (
                not self.restored_ids or self.restored_ids[-1] != restored["id"]
            ):
                self.restored_ids.append(int(restored["id"]))

    def stop(self) -> list[int]:
        self._stop.set()
        self._thread.join(5)
        return self.restored_ids


def assert_restores(console: str, rest_ids: list[int], restores: int) -> list[int]:
    """Exactly ``restores`` restore lines on the console, and REST saw the last one (it may
    miss an earlier one between two polls); else :class:`RestoreEvidenceMissing`. Returns the
    restored checkpoint ids."""
    lines = restored_checkpoints(console)
    ids = [cid for cid, _, _ in lines]
    if len(lines) != restores:
        raise RestoreEvidenceMissing(f"expected {restores} restore lines, got {lines}:\n{console}")
    if restores and not (rest_ids and rest_ids[-1] == ids[-1] and set(rest_ids) <= set(ids)):
        raise RestoreEvidenceMissing(
            f"REST latest.restored saw {rest_ids}, the console restored {ids}"
        )
    return ids


COUNTED = "restore-evidence.handled."


class CountingMap(MapFunction):
    """Identity that counts the records it maps (``map``), or the rows of the record batches
    (``map_batches``), per subtask, into the accumulator ``restore-evidence.handled.<name>``;
    accumulators reach the driver from the attempt that finishes, so
    :func:`handled_in_finishing_attempt` tells a resumed source (fewer than all) from one that
    started over."""

    def __init__(self, name: str) -> None:
        self.name = name

    def open(self, runtime_context: RuntimeContext) -> None:
        self._accumulators = runtime_context.get_metrics_group()
        self._accumulators.setdefault(COUNTED + self.name, 0)

    def map(self, value: Any) -> Any:
        self._accumulators[COUNTED + self.name] += 1
        return value

    def map_batches(self, batch: Any) -> Any:
        self._accumulators[COUNTED + self.name] += batch.num_rows
        return batch


def handled_in_finishing_attempt(result: Any, name: str) -> int:
    """Records the :class:`CountingMap` ``name`` handled in the attempt that finished."""
    return int(result.get_all_accumulator_results().get(COUNTED + name, 0))
