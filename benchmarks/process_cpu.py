"""CPU time of groups of processes, from ``/proc`` (Linux), for benchmarks/kafka.py and others.

A benchmark on a shared machine cannot trust wall-clock figures alone: the latency of a paced
run depends on how much CPU each record costs, and that cost is what moves between a burst and
a paced phase. :class:`CpuGroups` names groups of processes (the job, the broker, the
benchmark's own producer and consumer) and reads their user + system seconds, each group with
every descendant of its roots (worker processes forked by undertow's fork server, Spark's JVM
under its Python driver), so a phase's CPU per record is the difference of two readings over
the records of the phase.

Threading: plain reads of ``/proc``; call from one thread. A process that ended between two
readings drops out of the later one (its time is lost, so keep readings inside a job run),
unless the groups count reaped children (``reaped=True``) and a process of the tree reaped it.
"""

from __future__ import annotations

import os
import threading
import time
from collections import defaultdict
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from types import TracebackType

_TICK = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100


def rss_bytes(pid: int, field: str = "VmRSS") -> int:
    """Resident set size of process ``pid`` (``VmRSS``), or another of its ``/proc/PID/status``
    memory lines in kB (``RssAnon``: its private anonymous pages, what a leak grows; ``RssFile``:
    pages of mapped files such as shared libraries' code); 0 if it is gone."""
    try:
        with open(f"/proc/{pid}/status") as status:
            for line in status:
                if line.startswith(f"{field}:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    return 0


def _stat(pid: int, reaped: bool = False) -> tuple[int, float] | None:
    """(parent pid, user + system seconds) of ``pid``, None if it is gone; ``reaped`` adds the
    seconds of the children it has waited for (and theirs, recursively)."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            text = f.read()
    except OSError:
        return None
    fields = text.rsplit(")", 1)[1].split()  # the name may hold spaces and parentheses
    ticks = int(fields[11]) + int(fields[12])
    if reaped:
        ticks += int(fields[13]) + int(fields[14])
    return int(fields[1]), ticks / _TICK


def _table(reaped: bool = False) -> dict[int, tuple[int, float]]:
    table = {}
    for name in os.listdir("/proc"):
        if name.isdigit() and (stat := _stat(int(name), reaped)) is not None:
            table[int(name)] = stat
    return table


class CpuGroups:
    """Named groups of process trees; :meth:`read` gives each group's CPU seconds so far.

    A pid in ``exclude`` (and its tree) counts in no group, e.g. the benchmark's own helper
    processes when the job's group is rooted at the benchmark's process. ``reaped``: a process
    also counts the children it has waited for, so a tree keeps the time of workers that ended
    and were reaped inside it (the ``local`` target's fork server reaps its workers): readings
    may then span whole job runs."""

    def __init__(self, groups: Mapping[str, Iterable[int]], exclude: Iterable[int] = (),
                 reaped: bool = False) -> None:  # fmt: skip
        self.groups = {name: tuple(pids) for name, pids in groups.items()}
        self.exclude = set(exclude)
        self.reaped = reaped

    def read(self) -> dict[str, float]:
        table = _table(self.reaped)
        children: dict[int, list[int]] = defaultdict(list)
        for pid, (parent, _) in table.items():
            children[parent].append(pid)
        owner: dict[int, str] = {}
        for name, roots in self.groups.items():  # a tree claimed by an earlier group stays there
            stack = [r for r in roots if r not in self.exclude]
            while stack:
                pid = stack.pop()
                if pid in owner or pid in self.exclude:
                    continue
                owner[pid] = name
                stack.extend(children.get(pid, ()))
        seconds = dict.fromkeys(self.groups, 0.0)
        for pid, name in owner.items():
            if pid in table:
                seconds[name] += table[pid][1]
        return seconds


def per_record_us(before: Mapping[str, float], after: Mapping[str, float],
                  records: int) -> dict[str, float]:  # fmt: skip
    """Microseconds of CPU per record of each group between two readings."""
    return {name: (after[name] - before[name]) / max(1, records) * 1e6 for name in before}


def _schedstat(pid: int) -> tuple[float, float] | None:
    """(seconds run, seconds waited on a run queue) of all threads of ``pid``; None if gone."""
    ran = waited = 0
    try:
        for tid in os.listdir(f"/proc/{pid}/task"):
            with open(f"/proc/{pid}/task/{tid}/schedstat") as f:
                fields = f.read().split()
            ran, waited = ran + int(fields[0]), waited + int(fields[1])
    except OSError:
        return None
    return ran / 1e9, waited / 1e9


def _main_thread_schedstat(pid: int) -> tuple[float, float] | None:
    """(seconds run, seconds waited on a run queue) of the main thread of ``pid`` only."""
    try:
        with open(f"/proc/{pid}/task/{pid}/schedstat") as f:
            fields = f.read().split()
    except OSError:
        return None
    return int(fields[0]) / 1e9, int(fields[1]) / 1e9


@dataclass(frozen=True)
class ThreadLife:
    """What one thread did between two readings ``seconds`` apart: it ran ``ran_s``, waited
    ``waited_s`` on a run queue (runnable, another process held the core), and slept the rest
    (:attr:`slept_s`: blocked in a system call, e.g. an event loop waiting for input, credit or
    a timer). ``parent``: the process's parent pid."""

    parent: int
    seconds: float
    ran_s: float
    waited_s: float

    @property
    def slept_s(self) -> float:
        return max(0.0, self.seconds - self.ran_s - self.waited_s)

    def share(self, part: float) -> float:
        """``part`` seconds as a share of the thread's time between the readings."""
        return part / self.seconds if self.seconds > 0 else 0.0


def thread_life(
    parent: int, first: tuple[float, float, float], last: tuple[float, float, float]
) -> ThreadLife:
    """The :class:`ThreadLife` between two ``(monotonic time, ran, waited)`` readings."""
    return ThreadLife(parent, last[0] - first[0], last[1] - first[1], last[2] - first[2])


CPU_CGROUPS = "/sys/fs/cgroup/cpu"


def weighted_neighbours(root: str = CPU_CGROUPS) -> set[str]:
    """Names of the ``cpu`` cgroups (cgroup v1, one level under ``root``) above the default
    weight (1024 shares) that hold a task, other than this process's own: other benchmarks run
    ``--weighted``, which take an equal share from a weighted job and nearly all of the CPU from
    an unweighted one. Empty where there are no such cgroups."""
    own = ""
    try:
        with open("/proc/self/cgroup") as f:
            for line in f:
                _, controllers, path = line.rstrip("\n").split(":", 2)
                if "cpu" in controllers.split(","):
                    own = path.strip("/")
    except OSError:
        pass
    found = set()
    try:
        names = os.listdir(root)
    except OSError:
        return found
    for name in names:
        group = os.path.join(root, name)
        if name == own or not os.path.isdir(group):
            continue
        try:
            with open(os.path.join(group, "cpu.shares")) as f:
                shares = int(f.read())
            with open(os.path.join(group, "tasks")) as f:
                busy = bool(f.read().split())
        except (OSError, ValueError):
            continue
        if shares > 1024 and busy:
            found.add(name)
    return found


def cores(ran_s: float, waited_s: float, seconds: float, neighbours: Iterable[str] = ()) -> str:
    """``ran X waited Y cores``: seconds run and waited on a run queue over ``seconds`` of
    wall-clock time (a job short of CPU waits about as long as it runs, or longer), then
    ``, beside weighted cgroup(s) A, B`` when :func:`weighted_neighbours` found any."""
    text = f"ran {ran_s / seconds:.2f} waited {waited_s / seconds:.2f} cores"
    names = sorted(neighbours)
    return text + (f", beside weighted cgroup(s) {', '.join(names)}" if names else "")


class RunQueueWait:
    """Seconds the descendants of ``root`` ran and waited to run (runnable, on a run queue)
    while the ``with`` block ran: whether a job was short of CPU (the machine's other work
    held its cores) or idle (waiting for input or output).

    A thread reads ``/proc/<pid>/task/*/schedstat`` of every descendant every ``period``
    seconds and keeps each process's first and last reading; a process loses its time before
    its first reading and after its last (at most ``period`` each). Threads the scheduler accounts
    separately (the kernel's, the hypervisor's steal) are not seen. Enter and leave on one
    thread; the figures are valid after the block.

    :attr:`samples` keeps, per reading, ``(time.time(), seconds run, seconds waited)`` summed
    over the processes seen so far (each from its first reading): the difference of two samples
    is the tree's run and wait over that stretch, for a timeline of where a slow run's time went.
    :attr:`neighbours` gathers the :func:`weighted_neighbours` seen at any reading.
    :meth:`main_threads` splits each process's main thread's time between its first and last
    reading into run, queued and slept (:class:`ThreadLife`): where a worker's event loop
    sleeps, not only how long it queued.
    """

    def __init__(self, root: int, period: float = 0.05) -> None:
        self.root, self.period = root, period
        self.ran_s = self.waited_s = 0.0
        self._stop = threading.Event()
        self._first: dict[int, tuple[float, float]] = {}
        self._last: dict[int, tuple[float, float]] = {}
        self._parents: dict[int, int] = {}
        self._main_first: dict[int, tuple[float, float, float]] = {}
        self._main_last: dict[int, tuple[float, float, float]] = {}
        self.samples: list[tuple[float, float, float]] = []
        self.neighbours: set[str] = set()
        self._thread = threading.Thread(target=self._sample, name="run-queue-wait", daemon=True)

    def _descendants(self) -> list[int]:
        children: dict[int, list[int]] = defaultdict(list)
        for pid, (parent, _) in _table().items():
            children[parent].append(pid)
        found, stack = [], list(children.get(self.root, ()))
        while stack:
            pid = stack.pop()
            found.append(pid)
            for child in children.get(pid, ()):
                self._parents[child] = pid
                stack.append(child)
        return found

    def _sample(self) -> None:
        while True:
            for pid in self._descendants():
                if (reading := _schedstat(pid)) is not None:
                    self._first.setdefault(pid, reading)
                    self._last[pid] = reading
                if (main := _main_thread_schedstat(pid)) is not None:
                    self._main_first.setdefault(pid, (time.monotonic(), *main))
                    self._main_last[pid] = (time.monotonic(), *main)
            self.samples.append((time.time(), *self._totals()))
            self.neighbours |= weighted_neighbours()
            if self._stop.is_set():
                return
            time.sleep(self.period)

    def __enter__(self) -> RunQueueWait:
        self._thread.start()
        return self

    def __exit__(self, kind: type[BaseException] | None, value: BaseException | None,
                 tb: TracebackType | None) -> None:  # fmt: skip
        self._stop.set()
        self._thread.join()
        self.ran_s, self.waited_s = self._totals()

    def _totals(self) -> tuple[float, float]:
        ran = sum(self._last[p][0] - self._first[p][0] for p in self._last)
        return ran, sum(self._last[p][1] - self._first[p][1] for p in self._last)

    def main_threads(self) -> dict[int, ThreadLife]:
        """Per process seen at two readings or more: its main thread's :class:`ThreadLife`
        between its first and last reading (valid after the block)."""
        return {
            pid: thread_life(self._parents.get(pid, self.root), first, self._main_last[pid])
            for pid, first in self._main_first.items()
            if self._main_last[pid][0] > first[0]
        }
