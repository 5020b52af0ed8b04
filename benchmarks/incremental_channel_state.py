"""Bytes written per unaligned checkpoint with incremental channel state on and off (issue 29,
part 3; ``execution.checkpointing.unaligned.incremental-channel-state.enabled``).

The FLIP-76 anchor job under backpressure (benchmarks/peers/shapes.py ``anchor-spin``: an
unbounded sequence -> map -> key_by -> a map spinning 1 ms per record, p=1), unaligned
checkpoints every ``--interval``, buffer debloating off (it would shrink the in-flight data),
on the ``local-threads`` target, for ``--seconds`` per mode. From the JobMaster's console
line of each completed checkpoint: the in-flight bytes it wrote and those it referred to in
an earlier checkpoint's file (buffers still queued since then). Prints per mode the
checkpoints, median and total bytes written, median bytes referenced and the median
checkpoint duration, then one summary line with the ratio of bytes written per checkpoint
(the issue sets no target for it).

Usage: ``python benchmarks/incremental_channel_state.py [--seconds S] [--interval MS]``
"""

from __future__ import annotations

import argparse
import io
import re
import statistics
import sys
import tempfile
import time
from pathlib import Path

from undertow.common import Configuration
from undertow.datastream import StreamExecutionEnvironment

sys.path.insert(0, str(Path(__file__).resolve().parent / "peers"))
import shapes

COMPLETED = re.compile(
    r"^\[undertow\] checkpoint (\d+) completed in (\d+) ms, .*in-flight ([\d.]+) (B|KiB|MiB|GiB)"
    r"(?:, referenced ([\d.]+) (B|KiB|MiB|GiB))?",
    re.M,
)
SCALE = {"B": 1, "KiB": 1024, "MiB": 1024**2, "GiB": 1024**3}
OPTION = "execution.checkpointing.unaligned.incremental-channel-state.enabled"


class Tee(io.TextIOBase):
    """Keeps the JobMaster's console lines (stderr) instead of printing them."""

    def __init__(self) -> None:
        self.text = io.StringIO()

    def write(self, text: str) -> int:
        self.text.write(text)
        return len(text)


def run(incremental: bool, args: argparse.Namespace) -> list[tuple[int, int, int]]:
    """Per completed checkpoint: (duration ms, bytes written, bytes referenced)."""
    directory = tempfile.mkdtemp(prefix="undertow-incremental-channel-state-")
    env = StreamExecutionEnvironment.get_execution_environment(Configuration({
        "execution.target": "local-threads",
        "rest.port": "-1",
        "execution.checkpointing.interval": f"{args.interval} ms",
        "execution.checkpointing.dir": directory,
        "execution.checkpointing.unaligned.enabled": "true",
        "taskmanager.network.memory.buffer-debloat.enabled": "false",
        OPTION: str(incremental).lower(),
    }))  # fmt: skip
    shapes.build("undertow", "anchor-spin", env)
    tee, saved = Tee(), sys.stderr
    sys.stderr = tee
    try:
        client = env.execute_async(f"anchor job, incremental channel state {incremental}")
        time.sleep(args.seconds)
        client.cancel()
        try:
            client.get_job_execution_result(timeout=30)
        except Exception:  # cancelled, as asked
            pass
    finally:
        sys.stderr = saved
    found = []
    for m in COMPLETED.finditer(tee.text.getvalue()):
        written = round(float(m[3]) * SCALE[m[4]])
        referenced = round(float(m[5]) * SCALE[m[6]]) if m[5] else 0
        found.append((int(m[2]), written, referenced))
    return found


def kib(n: float) -> str:
    return f"{n / 1024:.0f} KiB"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=20.0, help="run time per mode")
    parser.add_argument("--interval", type=int, default=200, help="checkpoint interval (ms)")
    args = parser.parse_args()
    print(f"{'incremental':<12}{'ckpts':>6}{'written p50':>13}{'written total':>15}"
          f"{'referenced p50':>16}{'p50 ms':>8}")  # fmt: skip
    medians = {}
    for incremental in (True, False):
        found = run(incremental, args)
        if not found:
            print(f"{'on' if incremental else 'off':<12} no completed checkpoint")
            continue
        written = [w for _, w, _ in found]
        medians[incremental] = statistics.median(written)
        print(f"{'on' if incremental else 'off':<12}{len(found):>6}"
              f"{kib(statistics.median(written)):>13}{kib(sum(written)):>15}"
              f"{kib(statistics.median(r for _, _, r in found)):>16}"
              f"{statistics.median(d for d, _, _ in found):>8.0f}")  # fmt: skip
    if len(medians) == 2:
        on, off = medians[True], medians[False]
        ratio = f"{on / off:.2f}x" if off else "-"
        print(
            f"result incremental-channel-state: bytes written per checkpoint (median) on "
            f"{kib(on)}, off {kib(off)} ({ratio} of off; the issue sets no target)"
        )


if __name__ == "__main__":
    main()
