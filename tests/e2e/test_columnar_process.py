"""A keyed batch process function through the public API, across a stop with savepoint and a
rescale 2 -> 3: its columnar value, map and list states and event-time timers are restored
at the new parallelism.

The job: record batches of ``0..N-1`` -> ``(k = i % KEYS, t = i)`` -> ``with_event_time("t")``
-> ``key_by("k")`` -> a function that counts each key's rows (a value state) and sets, per
row, a timer at the last millisecond of the row's ``SIZE`` ms window; each timer emits
``(k, at, count)``. Every (key, window) fires exactly once, and its count is at least the
key's rows up to ``at`` (all processed by then) and at most all of them; the last count of
every key is its number of rows. Without the restored state, counts after the stop come out
short; without the restored timers, windows open at the stop never fire; with the source
begun again, windows fire twice.
"""

from __future__ import annotations

import json
import os
import time
from collections import Counter
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pytest

from undertow.datastream import (
    BatchListStateDescriptor,
    BatchMapStateDescriptor,
    BatchValueStateDescriptor,
    KeyedBatchProcessFunction,
)
from undertow.datastream.connectors.number_seq_batches import NumberSequenceBatchSource
from undertow.testing.restore_control import evidence

from .conftest import EnvFactory
from .restore_evidence import restored_checkpoints

N, KEYS, ROWS, SIZE = 6_000, 10, 200, 50
COUNT = BatchValueStateDescriptor("count", pa.int64())
PER_WINDOW = BatchMapStateDescriptor("per window", pa.int64(), pa.int64())
TIMES = BatchListStateDescriptor("times", pa.int64())


class CountPerWindow(KeyedBatchProcessFunction):
    """Counts each key's rows three ways: all of them (a value state), per window (a map
    state from the window's last millisecond), and its rows' times (a list state)."""

    def process_batch(self, batch: pa.RecordBatch, ctx: Any) -> None:
        state = ctx.get_state(COUNT)
        index = ctx.key_index()
        seen = np.bincount(index, minlength=ctx.keys().num_rows)
        state.update(pc.add(pc.fill_null(state.value(), 0), pa.array(seen, pa.int64())))
        t = batch.column("t").to_numpy()
        ends = t - t % SIZE + SIZE - 1
        ctx.register_event_time_timers(ends, key_index=index)
        pairs, rows = np.unique(np.stack([index, ends]), axis=1, return_counts=True)
        per_window = ctx.get_map_state(PER_WINDOW)
        before = pc.fill_null(per_window.get(pairs[1], key_index=pairs[0]), 0)
        per_window.put(pairs[1], pc.add(before, pa.array(rows, pa.int64())), key_index=pairs[0])
        ctx.get_list_state(TIMES).add(batch.column("t"), key_index=index)

    def on_timer(self, timestamp: int, ctx: Any) -> pa.RecordBatch:
        keys = ctx.keys()
        at = pa.array([timestamp] * keys.num_rows, pa.int64())
        per_window, times = ctx.get_map_state(PER_WINDOW), ctx.get_list_state(TIMES)
        in_window = per_window.get(at)
        per_window.remove(at)
        lists = times.get().to_pylist()
        listed = [sum(1 for t in ts if t <= timestamp) for ts in lists]
        times.update([[t for t in ts if t > timestamp] for ts in lists])
        out = keys.append_column("at", at).append_column("count", ctx.get_state(COUNT).value())
        out = out.append_column("in_window", in_window)
        return out.append_column("listed", pa.array(listed, pa.int64()))


def _build(env: Any, out: Path, pace_s: float) -> None:
    def columns(batch: pa.RecordBatch) -> pa.RecordBatch:
        time.sleep(pace_s)
        i = batch.column("value")
        return pa.record_batch({"k": pc.remainder(i, KEYS), "t": i})

    def write(batch: pa.RecordBatch) -> None:
        fd = os.open(out, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
        try:
            os.write(fd, (json.dumps(batch.to_pylist()) + "\n").encode())
        finally:
            os.close(fd)

    source = NumberSequenceBatchSource(0, N - 1, batch_rows=ROWS)
    stream = env.from_source(source, None, "numbers").as_batches().uid("numbers")
    events = stream.map_batches(columns).uid("columns").with_event_time("t").uid("event time")
    events.key_by("k").process_batches(CountPerWindow()).uid("process").add_sink(write)


@pytest.mark.restores(catches=["keyed-state", "source-positions"])
@pytest.mark.parametrize("target", ["local-threads"])
def test_state_and_timers_survive_a_stop_with_savepoint_and_a_rescale(
    make_env: EnvFactory, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "fired.jsonl"
    config = {"execution.checkpointing.interval": "100 ms",
              "execution.checkpointing.dir": str(tmp_path / "checkpoints")}  # fmt: skip
    env = make_env(parallelism=2, config=config)
    _build(env, out, pace_s=0.01)
    client = env.execute_async("process p=2")
    deadline = time.monotonic() + 60
    while not out.exists() or len(out.read_text().splitlines()) < 5:
        assert time.monotonic() < deadline, "no timer fired in 60 s"
        time.sleep(0.02)
    savepoint = client.stop_with_savepoint(str(tmp_path / "sp")).result(timeout=60)
    env = make_env(parallelism=3, config={**config, "execution.state-recovery.path": savepoint})
    _build(env, out, pace_s=0.0)
    env.execute("process p=3")
    assert restored_checkpoints(capsys.readouterr().err), "the p=3 job did not restore"

    fired: Counter[tuple[int, int]] = Counter()
    counts: dict[tuple[int, int], int] = {}
    in_windows: dict[tuple[int, int], tuple[int, int]] = {}
    for line in out.read_text().splitlines():
        for r in json.loads(line):
            fired[(r["k"], r["at"])] += 1
            counts[(r["k"], r["at"])] = r["count"]
            in_windows[(r["k"], r["at"])] = (r["in_window"], r["listed"])
    # each key has SIZE / KEYS rows in each window: the map and list states, restored at p=3,
    # hold them exactly, also for windows open at the stop
    wrong = {w: c for w, c in in_windows.items() if c != (SIZE // KEYS, SIZE // KEYS)}
    evidence(not wrong, f"rows per window (map state, list state) not {SIZE // KEYS}: "
             f"{dict(list(wrong.items())[:5])}")  # fmt: skip
    windows = {(i % KEYS, i - i % SIZE + SIZE - 1) for i in range(N)}
    per_key = N // KEYS
    short = {w: c for w, c in counts.items() if not (w[1] + 1) // KEYS <= c <= per_key}
    last = {k: counts[(k, max(at for kk, at in counts if kk == k))] for k in range(KEYS)
            if any(kk == k for kk, _ in counts)}  # fmt: skip
    twice = [w for w, n in fired.items() if n > 1]
    evidence(
        not short and not twice and fired.keys() == windows
        and last == dict.fromkeys(range(KEYS), per_key),
        f"counts outside [rows up to the timer, all rows] (state not restored): "
        f"{dict(list(short.items())[:5])}; windows never fired (timers not restored): "
        f"{sorted(windows - fired.keys())[:5]}; fired twice (the source began again): "
        f"{twice[:5]}; last counts {last}",
    )  # fmt: skip
