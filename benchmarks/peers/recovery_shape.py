"""The job shape of benchmarks/recovery_progress.py, as data both engines read: undertow's side
(``recovery_progress.py``) and PyFlink's (``recovery_pyflink_job.py``, run by the PyFlink venv's
Python, which must not import undertow). Standard library only, nothing to import but this.

The job: a generator (faster than the rest) -> rebalance -> a slow map (spins per record, fails
a set time after each attempt opened) -> a file sink committing a part file per checkpoint,
at parallelism :data:`PARALLELISM`. Each record is one line: the record's index zero-padded to
:data:`LINE_DIGITS` digits, a space and :data:`LINE_FILLER` (52 bytes). The options below are
Flink's keys, set alike on both engines; the buffers per channel are a command-line value.
"""

from __future__ import annotations

PARALLELISM = 1
LINE_DIGITS = 12
LINE_FILLER = "x" * 40
#: Name of the slow map on both engines.
SLOW_MAP = "slow"

#: Options both engines set (the FLIP-547 ones and the checkpoint directory are per run).
OPTIONS = {
    "execution.checkpointing.interval": "500 ms",
    "execution.checkpointing.unaligned.enabled": "true",
    "restart-strategy.type": "fixed-delay",
    "restart-strategy.fixed-delay.attempts": "1000",
    "restart-strategy.fixed-delay.delay": "0 ms",
    # debloating would shrink the in-flight data to a second of throughput
    "taskmanager.network.memory.buffer-debloat.enabled": "false",
    "taskmanager.memory.segment-size": "32 kb",
    "taskmanager.network.memory.floating-buffers-per-gate": "0",
    "taskmanager.network.memory.max-buffers-per-channel": "2",
}
#: The option given ``--buffers``.
BUFFERS_PER_CHANNEL = "taskmanager.network.memory.buffers-per-channel"


def line(index: int) -> str:
    """Record ``index`` as the job's line (a copy of this body is what each engine runs)."""
    return f"{index:0{LINE_DIGITS}d} {LINE_FILLER}"
