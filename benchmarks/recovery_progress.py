"""Progress under backpressure with frequently induced failures (FLIP-76's test plan), with
``execution.checkpointing.during-recovery.enabled`` on and off.

The job: an unbounded generator (faster than the rest) -> rebalance -> a slow map (spins per
record) -> a file sink that commits a part file per checkpoint (two-phase commit). Deep
network buffers that fill before they are sent make the in-flight data of each unaligned
checkpoint large: more records than the slow map processes between two failures. The slow
map fails every ``--kill-every`` seconds after its attempt started (an injected failure, on
the ``local-threads`` target: a kill of the attempt without a process to kill).

Measured per mode, over ``--duration`` seconds: records committed (lines in the sink's
committed part files) per minute; per restart, the time from the restart to the first
completed checkpoint (from the restore's console line, printed once the restoring tasks
were deployed), and that checkpoint's bytes written and bytes referenced (restored
channel state not yet consumed is referred to in the old checkpoint's files, not written
again, see docs/unaligned-and-debloating.md).

PyFlink 2.3 runs the same job shape in the same run (benchmarks/peers/recovery_pyflink_job.py,
in the venv of benchmarks/peers/pyflink_venv.py, ``UNDERTOW_PYFLINK_VENV``) with both FLIP-547
options on (``execution.checkpointing.unaligned.recover-output-on-downstream.enabled`` and
``execution.checkpointing.during-recovery.enabled``, the key Flink 2.3.0 reads; FLIP-547's
``unaligned.``-prefixed one is set too): its records committed per minute and the time from
each restore to its first completed checkpoint (from its REST API), printed beside ours; if it
fails or hangs (FLINK-40518), the error is printed instead. ``--no-pyflink`` skips it.

Prints last::

    target progress-under-kills: on X rec/min and N committed after its first restore, off
        Y rec/min and M (goal on keeps committing, off commits nothing once restoring): met|missed
    target first-checkpoint-after-restore: X s (goal 2 s): met|missed

Usage: ``python benchmarks/recovery_progress.py [--quick] [--duration S] [--kill-every S]``
"""

from __future__ import annotations

import argparse
import io
import json
import re
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TextIO

from undertow.common import Configuration, Encoder, WatermarkStrategy
from undertow.datastream import MapFunction, RuntimeContext, StreamExecutionEnvironment
from undertow.datastream.connectors import DataGeneratorSource
from undertow.datastream.connectors.file_system import FileSink, RollingPolicy

COMPLETED = re.compile(
    r"^\[undertow\] checkpoint (\d+) completed in (\d+) ms, .*in-flight ([\d.]+) (B|KiB|MiB|GiB)"
    r"(?:, referenced ([\d.]+) (B|KiB|MiB|GiB))?"
)
RESTARTING = re.compile(r"^\[undertow\] job \w+ failed \(.*\); restarting")
RESTORED = re.compile(r"^\[undertow\] restored from checkpoint \d+ ")
SCALE = {"B": 1, "KiB": 1024, "MiB": 1024**2, "GiB": 1024**3}
GOAL_FIRST_CHECKPOINT_S = 2.0
PEERS = Path(__file__).resolve().parent / "peers"
sys.path.insert(0, str(PEERS))
import recovery_shape as shape  # noqa: E402  (the job shape, shared with the PyFlink peer)


class SlowFailingMap(MapFunction):
    """Spins ``spin_s`` per record; raises ``fail_after_s`` after each attempt opened."""

    def __init__(self, spin_s: float, fail_after_s: float) -> None:
        self.spin_s = spin_s
        self.fail_after_s = fail_after_s

    def open(self, runtime_context: RuntimeContext) -> None:
        self.opened = time.monotonic()

    def map(self, value: Any) -> Any:
        end = time.perf_counter() + self.spin_s
        while time.perf_counter() < end:
            pass
        if time.monotonic() - self.opened > self.fail_after_s:
            raise RuntimeError(f"injected failure {self.fail_after_s} s into the attempt")
        return value


class TimedConsole(io.TextIOBase):
    """Stands in for ``sys.stderr``: keeps the JobMaster's console lines with the time each
    was written, and passes everything on."""

    def __init__(self, inner: TextIO) -> None:
        self.inner = inner
        self.lines: list[tuple[float, str]] = []
        self._partial = ""
        self._lock = threading.Lock()

    def write(self, text: str) -> int:
        self.inner.write(text)
        with self._lock:
            now = time.monotonic()
            parts = (self._partial + text).split("\n")
            self._partial = parts.pop()
            self.lines += [(now, line) for line in parts]
        return len(text)

    def flush(self) -> None:
        self.inner.flush()


@dataclass
class Run:
    during_recovery: bool
    engine: str = "undertow"
    committed: list[tuple[float, int]] = field(default_factory=list)
    #: per restart: (seconds to the first completed checkpoint, its in-flight bytes written,
    #: and referenced)
    first_checkpoints: list[tuple[float, int, int]] = field(default_factory=list)
    restarts: int = 0
    #: restarts with no completed checkpoint before the next one (or for 2 s before the end)
    missed: int = 0
    #: when the first restore was printed (time.monotonic, as ``committed``); None: no restore
    first_restore: float | None = None

    @property
    def after_first_restore(self) -> int | None:
        """Records committed after the first restore: what the job achieved once it was in
        the cycle of restores and kills (None without a restore or its time)."""
        if self.first_restore is None or not self.committed:
            return None
        before = [n for t, n in self.committed if t <= self.first_restore]
        return self.committed[-1][1] - (before[-1] if before else 0)

    @property
    def per_minute(self) -> float:
        if len(self.committed) < 2:
            return 0.0
        (t0, c0), (t1, c1) = self.committed[0], self.committed[-1]
        return (c1 - c0) / max(t1 - t0, 1e-9) * 60


def committed_records(out: Path) -> int:
    """Lines in committed part files (in-progress and pending ones start with a dot)."""
    total = 0
    for path in out.rglob("*"):
        if path.is_file() and not path.name.startswith((".", "_")):
            with path.open("rb") as f:
                total += sum(1 for _ in f)
    return total


def run(during_recovery: bool, args: argparse.Namespace) -> Run:
    work = Path(tempfile.mkdtemp(prefix="undertow-recovery-progress-"))
    out = work / "out"
    env = StreamExecutionEnvironment.get_execution_environment(
        Configuration({
            **shape.OPTIONS,
            shape.BUFFERS_PER_CHANNEL: str(args.buffers),
            "execution.target": "local-threads",
            "execution.checkpointing.dir": str(work / "checkpoints"),
            "execution.checkpointing.during-recovery.enabled":
                str(during_recovery).lower(),
            "execution.buffer-timeout": "1 s",
        })
    )  # fmt: skip
    env.set_parallelism(shape.PARALLELISM)
    source = DataGeneratorSource(shape.line, count=None, records_per_second=args.rate)
    sink = (
        FileSink.for_row_format(str(out), Encoder.simple_string_encoder())
        .with_rolling_policy(RollingPolicy.on_checkpoint_rolling_policy())
        .build()
    )
    (
        env.from_source(source, WatermarkStrategy.no_watermarks(), "generator").uid("gen")
        .rebalance()
        .map(SlowFailingMap(args.spin_ms / 1000, args.kill_every)).uid("slow")
        .name(shape.SLOW_MAP)
        .sink_to(sink).uid("sink")
    )  # fmt: skip
    console = TimedConsole(sys.stderr)
    result = Run(during_recovery)
    sys.stderr = console  # type: ignore[assignment]
    try:
        client = env.execute_async(f"recovery progress ({'on' if during_recovery else 'off'})")
        started = time.monotonic()
        while time.monotonic() - started < args.duration:
            time.sleep(1.0)
            result.committed.append((time.monotonic(), committed_records(out)))
        ended = time.monotonic()
        client.cancel()
    finally:
        sys.stderr = console.inner
    restarted: float | None = None  # the restore line: printed once its tasks were deployed
    for seen, line in console.lines:
        if RESTARTING.match(line):
            result.restarts += 1
            result.missed += restarted is not None
            restarted = None
        elif RESTORED.match(line):
            restarted = seen
            if result.first_restore is None:
                result.first_restore = seen
        elif (m := COMPLETED.match(line)) and restarted is not None:
            written = int(float(m[3]) * SCALE[m[4]])
            referenced = int(float(m[5]) * SCALE[m[6]]) if m[5] else 0
            result.first_checkpoints.append((seen - restarted, written, referenced))
            restarted = None
    # a restart too close to the end to have had its first checkpoint is not counted
    result.missed += restarted is not None and ended - restarted > GOAL_FIRST_CHECKPOINT_S
    return result


def run_pyflink(args: argparse.Namespace) -> Run | str:
    """The same job on PyFlink 2.3 with both FLIP-547 options on, or why it gave no result."""
    import pyflink_venv  # beside recovery_shape (PEERS is on the path)

    python = pyflink_venv.ensure_pyflink()
    work = Path(tempfile.mkdtemp(prefix="undertow-recovery-progress-pyflink-"))
    command = [
        str(python), str(PEERS / "recovery_pyflink_job.py"), "--out", str(work / "out"),
        "--checkpoints", str(work / "checkpoints"), "--duration", str(args.duration),
        "--kill-every", str(args.kill_every), "--spin-ms", str(args.spin_ms),
        "--buffers", str(args.buffers), "--flip547", "on",
    ]  # fmt: skip
    limit = args.duration + 180
    try:
        done = subprocess.run(command, env=pyflink_venv.pyflink_environment(python),
                              capture_output=True, text=True, timeout=limit)  # fmt: skip
    except subprocess.TimeoutExpired as err:
        tail = (err.stderr or b"")[-400:]
        return f"hung: no result within {limit:.0f} s (FLINK-40518?); stderr tail: {tail!r}"
    lines = done.stdout.splitlines()
    results = [line for line in lines if line.startswith("RESULT ")]
    if not results:
        failed = [line for line in lines if line.startswith("FAILED ")]
        why = failed[0] if failed else " ".join(done.stderr.split()[-60:])
        return f"failed (exit {done.returncode}): {why[:800]}"
    doc = json.loads(results[-1][len("RESULT ") :])
    run = Run(True, "pyflink", [(t, n) for t, n in doc["committed"]])
    run.restarts = int(doc["restores"])
    for first in doc["firsts"]:
        if first is None:
            run.missed += 1
        else:  # Flink persists the in-flight data again: nothing is referenced
            run.first_checkpoints.append((float(first["seconds"]), int(first["persisted"]), 0))
    return run


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="30 s per mode (default 90 s)")
    parser.add_argument("--duration", type=float, default=None, help="seconds per mode")
    parser.add_argument("--kill-every", type=float, default=6.0, help="seconds per attempt")
    parser.add_argument("--rate", type=float, default=20_000.0, help="generator records/s")
    parser.add_argument("--spin-ms", type=float, default=1.0, help="slow map per record")
    parser.add_argument("--buffers", type=int, default=64, help="buffers per channel")
    parser.add_argument("--no-pyflink", action="store_true", help="skip PyFlink 2.3")
    args = parser.parse_args()
    if args.duration is None:
        args.duration = 30.0 if args.quick else 90.0
    runs = [run(True, args), run(False, args)]
    peer = "skipped (--no-pyflink)" if args.no_pyflink else run_pyflink(args)
    if isinstance(peer, Run):
        runs.append(peer)
    print(f"{'during-recovery':<22}{'restarts':>9}{'committed':>11}{'rec/min':>10}"
          f"{'1st ckpt s (max)':>18}{'written (max)':>15}{'referenced (max)':>18}")  # fmt: skip
    for r in runs:
        firsts = [s for s, _, _ in r.first_checkpoints]
        written = max((w for _, w, _ in r.first_checkpoints), default=0)
        referenced = max((ref for _, _, ref in r.first_checkpoints), default=0)
        worst = f"{max(firsts):.2f}" if firsts else "none"
        worst = f"{r.missed} never" if r.missed else worst
        last = r.committed[-1][1] if r.committed else 0
        mode = ("on" if r.during_recovery else "off") + (" (PyFlink)" if r.engine != "undertow"
                                                         else "")  # fmt: skip
        print(f"{mode:<22}{r.restarts:>9}{last:>11}{r.per_minute:>10.0f}{worst:>18}"
              f"{written / 1024:>11.0f} KiB{referenced / 1024:>14.0f} KiB")  # fmt: skip
    on, off = runs[:2]
    # a restart with no checkpoint before the next one counts as never (the goal is missed)
    on_firsts = [s for s, _, _ in on.first_checkpoints]
    worst_on = max(on_firsts) if on_firsts and not on.missed else float("inf")
    on_after, off_after = on.after_first_restore, off.after_first_restore
    print(f"committed after the first restore: on {on_after}, off {off_after}")
    progress_met = bool(on_after) and off_after == 0
    if isinstance(peer, Run):
        firsts = [s for s, _, _ in peer.first_checkpoints]
        worst = "never" if peer.missed or not firsts else f"{max(firsts):.2f} s"
        print(f"PyFlink 2.3 with both FLIP-547 options: {peer.per_minute:.0f} rec/min, first "
              f"checkpoint after restore at most {worst} over {peer.restarts} restores "
              f"(in-flight bytes written again, none referenced)")  # fmt: skip
    else:
        print(f"PyFlink 2.3 with both FLIP-547 options: {peer}")
    print(f"target progress-under-kills: on {on.per_minute:.0f} rec/min and {on_after} "
          f"committed after its first restore, off {off.per_minute:.0f} rec/min and "
          f"{off_after} (goal on keeps committing, off commits nothing once restoring): "
          f"{'met' if progress_met else 'missed'}")  # fmt: skip
    shown = "never" if worst_on == float("inf") else f"{worst_on:.2f}"
    print(f"target first-checkpoint-after-restore: {shown} s (goal "
          f"{GOAL_FIRST_CHECKPOINT_S:.0f} s): "
          f"{'met' if worst_on <= GOAL_FIRST_CHECKPOINT_S else 'missed'}")  # fmt: skip


if __name__ == "__main__":
    main()
