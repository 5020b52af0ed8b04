"""Event-time windows of batch streams through the public API: tumbling sums and sliding
counts equal plain Python over the input, and open windows survive a stop with savepoint and a
rescale 2 -> 3 (their columnar state is restored, or windows spanning the stop come out short;
the source's position is restored, or windows fire twice); several aggregates of one window
operator (``aggregate``) survive a worker kill, each equal to plain Python.

The job: record batches of ``0..N-1`` -> ``(k = i % KEYS, t = i, v = i)`` (``t`` is the event
time in ms) -> ``with_event_time("t")`` -> ``key_by("k")`` -> ``window(...)`` -> aggregate.
"""

from __future__ import annotations

import json
import os
import time
from collections import Counter
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
import pytest

from undertow.connectors.source import SourceReaderContext
from undertow.datastream.connectors.number_seq_batches import NumberSequenceBatchSource
from undertow.datastream.window import (
    EventTimeSessionWindows,
    SlidingEventTimeWindows,
    TumblingEventTimeWindows,
)
from undertow.testing.gates import SourceHold
from undertow.testing.oracle import oracle_seed
from undertow.testing.restore_control import evidence

from .conftest import EnvFactory
from .kills import RESTARTING, run_killing_a_worker_after_a_checkpoint
from .restore_evidence import CountingMap, handled_in_finishing_attempt, restored_checkpoints

N, KEYS, ROWS, SIZE = 6_000, 10, 200, 50
#: A session gap longer than a key's spacing (KEYS ms) and shorter than the leap of event time
#: every BLOCK rows: a key's rows of a block are one session.
GAP, BLOCK, JUMP = 15, 1000, 100


class _HeldNumbers(NumberSequenceBatchSource):
    """The source of :func:`_events` whose readers each stop after ``hold.after_records``
    batches of their attempt until the test releases them (:class:`SourceHold`)."""

    def __init__(self, hold: SourceHold) -> None:
        super().__init__(0, N - 1, batch_rows=ROWS)
        self.hold = hold

    def create_reader(self, context: SourceReaderContext) -> Any:
        return self.hold.reader(context, batch_size=1, records_per_second=None)


def _events(env: Any, pace_s: float = 0.0, jumps: bool = False,
            source: NumberSequenceBatchSource | None = None) -> Any:  # fmt: skip
    """With ``jumps``, event time leaps ``JUMP`` ms every ``BLOCK`` rows (sessions end)."""

    def columns(batch: pa.RecordBatch) -> pa.RecordBatch:
        if pace_s:
            time.sleep(pace_s)
        i = batch.column("value")
        t = pc.add(i, pc.multiply(pc.divide(i, BLOCK), JUMP)) if jumps else i
        return pa.record_batch({"k": pc.remainder(i, KEYS), "t": t, "v": i})

    if source is None:
        source = NumberSequenceBatchSource(0, N - 1, batch_rows=ROWS)
    stream = env.from_source(source, None, "numbers").as_batches().uid("numbers")
    return stream.map_batches(columns).uid("columns").with_event_time("t").uid("event time")


def _session_sums() -> dict[tuple[int, int], int]:
    return {(k, b * BLOCK + k + b * JUMP): sum(range(b * BLOCK + k, (b + 1) * BLOCK, KEYS))
            for k in range(KEYS) for b in range(N // BLOCK)}  # fmt: skip


def _tumbling_sums() -> dict[tuple[int, int], int]:
    want: Counter[tuple[int, int]] = Counter()
    for i in range(N):
        want[(i % KEYS, i - i % SIZE)] += i
    return dict(want)


def test_tumbling_sums_and_sliding_counts_equal_plain_python(make_env: EnvFactory) -> None:
    env = make_env(parallelism=2)
    keyed = _events(env).key_by("k")
    sums = keyed.window(TumblingEventTimeWindows.of(SIZE)).sum("v")
    got = {(r["k"], r["window_start"]): r["v"]
           for b in sums.execute_and_collect() for r in b.to_pylist()}  # fmt: skip
    assert got == _tumbling_sums()

    env = make_env(parallelism=2)
    counts = _events(env).key_by("k").window(SlidingEventTimeWindows.of(30, 10)).count()
    got_counts = {(r["k"], r["window_start"]): r["count"]
                  for b in counts.execute_and_collect() for r in b.to_pylist()}  # fmt: skip
    want: Counter[tuple[int, int]] = Counter()
    for i in range(N):
        for start in range(i - i % 10, i - 30, -10):
            want[(i % KEYS, start)] += 1
    assert got_counts == dict(want)


def _append(out: Path) -> Any:
    def write(batch: pa.RecordBatch) -> None:
        line = json.dumps(batch.to_pylist()) + "\n"
        fd = os.open(out, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
        try:
            os.write(fd, line.encode())
        finally:
            os.close(fd)

    return write


@pytest.mark.restores(catches=["keyed-state", "source-positions"])
@pytest.mark.parametrize("target", ["local-threads"])
@pytest.mark.parametrize("windows", ["tumbling", "sessions"])
def test_open_windows_survive_a_stop_with_savepoint_and_a_rescale(
    make_env: EnvFactory, tmp_path: Path, capsys: pytest.CaptureFixture[str], windows: str
) -> None:
    """Sessions: a key's rows of a block are a session (``GAP``), the first ones fire before
    the stop, and the ones open across it come out short unless their state was restored."""
    out = tmp_path / "windows.jsonl"
    config = {"execution.checkpointing.interval": "100 ms",
              "execution.checkpointing.dir": str(tmp_path / "checkpoints")}  # fmt: skip

    assigner = (TumblingEventTimeWindows.of(SIZE) if windows == "tumbling"
                else EventTimeSessionWindows.with_gap(GAP))  # fmt: skip

    def build(env: Any, pace_s: float) -> None:
        keyed = _events(env, pace_s, jumps=windows == "sessions").key_by("k")
        keyed.window(assigner).sum("v").uid("windows").add_sink(_append(out))

    env = make_env(parallelism=2, config=config)
    build(env, pace_s=0.01)
    client = env.execute_async("windows p=2")
    while not out.exists() or len(out.read_text().splitlines()) < 2:
        time.sleep(0.02)
    savepoint = client.stop_with_savepoint(str(tmp_path / "sp")).result(timeout=60)
    env = make_env(parallelism=3, config={**config, "execution.state-recovery.path": savepoint})
    build(env, pace_s=0.0)
    env.execute("windows p=3")
    assert restored_checkpoints(capsys.readouterr().err), "the p=3 job did not restore"

    fired: Counter[tuple[int, int]] = Counter()
    got: dict[tuple[int, int], int] = {}
    for line in out.read_text().splitlines():
        for r in json.loads(line):
            fired[(r["k"], r["window_start"])] += 1
            got[(r["k"], r["window_start"])] = r["v"]
    want = _tumbling_sums() if windows == "tumbling" else _session_sums()
    short = {w: (got[w], want[w]) for w in want if w in got and got[w] != want[w]}
    twice = [w for w, n in fired.items() if n > 1]
    evidence(not short and not twice and got.keys() == want.keys(),
             f"windows open at the savepoint came back short or missing (their state was not "
             f"restored): {dict(list(short.items())[:5])}, missing "
             f"{sorted(want.keys() - got.keys())[:5]}; windows fired twice (the source began "
             f"again): {twice[:5]}")  # fmt: skip


#: ``aggregate``'s window: 1.5 batches (``ROWS``), so a window open at a barrier has rows on
#: both sides of it. (With ``SIZE``, a divisor of ``ROWS``, every window open at a barrier is
#: whole: without its state it only went missing if it had not fired before the kill.)
AGG_SIZE = 300
#: Where each reader of the kill test holds, in batches of ``ROWS``: the source has 8 splits
#: of 750 numbers (4 batches each), so each reader holds in the middle of its second split,
#: with windows of ``AGG_SIZE`` open at the hold that straddle it.
HELD_AT = 6
#: The rows both readers emitted at the hold: each its first split's 750 and 2 batches more.
HELD_ROWS = 2 * (750 + 2 * ROWS)

#: ``aggregate``'s outputs, and each one's plain-Python value over a window's ``v`` values.
STATS: dict[str, tuple[tuple[str | None, str], Any]] = {
    "total": (("v", "sum"), sum), "n": ((None, "count"), len), "low": (("v", "min"), min),
    "high": (("v", "max"), max), "avg": (("v", "mean"), lambda vs: sum(vs) / len(vs)),
}  # fmt: skip


@pytest.mark.restores(catches=["keyed-state", "source-positions"])
@pytest.mark.parametrize("target", ["local"])
def test_several_aggregates_of_one_window_operator_survive_a_worker_kill(
    make_env: EnvFactory, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The sink is at-least-once (windows fired after the last checkpoint fire again after the
    restore), so each window may come twice, with the same values. A window open at the
    restored checkpoint comes back short (or not at all) unless its state was restored, and
    too large (its rows counted twice) unless the source's position was."""
    seed = oracle_seed()
    out = tmp_path / "windows.jsonl"
    env = make_env(parallelism=2, config={
        "execution.checkpointing.interval": "100 ms",
        "execution.checkpointing.dir": str(tmp_path / "checkpoints"),
        "restart-strategy.type": "fixed-delay",
        "restart-strategy.fixed-delay.attempts": "2",
        "restart-strategy.fixed-delay.delay": "0 ms",
    })  # fmt: skip
    # each reader holds after HELD_AT batches until the kill landed: the first attempt cannot
    # run out of input (firing every window, leaving no state to restore) before the kill,
    # however slow its checkpoints (pacing it at 1 s a batch did, in CI at 3.8 s a checkpoint)
    hold = SourceHold(tmp_path / "hold", after_records=HELD_AT)
    events = _events(env, source=_HeldNumbers(hold)).map_batches(CountingMap("rows"))
    windows = events.uid("counted").key_by("k").window(TumblingEventTimeWindows.of(AGG_SIZE))
    stats = windows.aggregate(**{name: spec for name, (spec, _) in STATS.items()})
    stats.uid("windows").add_sink(_append(out))
    client = env.execute_async("window aggregates kill")
    if not hold.wait_held(readers=2, timeout_s=120):
        client.cancel()
        raise AssertionError(f"seed {seed}: {hold.held_readers()} of 2 readers reached the hold")
    capsys.readouterr()
    # two checkpoints after the hold: the second was triggered once the first completed, after
    # every reader held, so the restored checkpoint has the readers at the hold
    result, console = run_killing_a_worker_after_a_checkpoint(
        client, capsys, seed, earliest_s=0.02, latest_s=0.2, timeout_s=90.0, checkpoints=2,
        source_hold=hold,
    )  # fmt: skip
    assert RESTARTING.findall(console), (seed, console)
    handled = handled_in_finishing_attempt(result, "rows")
    evidence(handled < N, f"seed {seed}: the finishing attempt handled all {N} rows (the "
             "sources started over)")  # fmt: skip
    assert handled == N - HELD_ROWS, (seed, handled, "the restored checkpoint was not at the hold")

    rows: dict[tuple[int, int], list[int]] = {}
    for i in range(N):
        rows.setdefault((i % KEYS, i - i % AGG_SIZE), []).append(i)
    want = {w: {name: fn(vs) for name, (_, fn) in STATS.items()} for w, vs in rows.items()}
    got: dict[tuple[int, int], list[dict[str, Any]]] = {}
    for line in out.read_text().splitlines():
        for r in json.loads(line):
            got.setdefault((r["k"], r["window_start"]), []).append({n: r[n] for n in STATS})
    wrong = {w: (v, want.get(w)) for w, vs in got.items() for v in vs if v != want.get(w)}
    missing = sorted(want.keys() - got.keys())
    evidence(not wrong and not missing, f"seed {seed}: windows whose aggregates differ from plain "
             f"Python {dict(list(wrong.items())[:3])} or never fired {missing[:5]} (state or "
             "source position not restored)")  # fmt: skip
