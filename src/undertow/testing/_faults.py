"""Fault injection for the oracle (docs/testing.md, "Faults"): scheduled failures and random kills.

Scheduled failures follow Flink's ``UnalignedCheckpointITCase`` recipe: each failure is tied to
an attempt and a completed-checkpoint count, so it lands at a protocol-relevant point and
happens exactly once. Entry ``i`` of ``fail_after_checkpoints`` fires in attempt
``first_attempt + i`` (the runtime context's attempt number: 0 at the first deployment, +1 per
restart), on subtask ``subtask`` only, as soon as a checkpoint with id ``>= k`` completed in that
attempt (checkpoint ids count the job's checkpoints over all attempts). :class:`FailingMap` also
waits for a completed checkpoint whose barrier reached it after a record: a checkpoint taken
before any record flowed restores nothing, and could not prove a restore. So a run with the
schedule ``[2, 5]`` fails twice and finishes in attempt 2; a missing failure shows as fewer
restarts, an unexpected one as more (or as a job failure, with exactly as many restarts
allowed as failures scheduled).

The longer story: docs/design.md, "Module notes", under this module's name.
"""

from __future__ import annotations

import json
import os
import random
import signal
import threading
import time
import urllib.request
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from typing import Any, Protocol

from undertow.api.functions import MapFunction, RuntimeContext
from undertow.runtime.master.restore_hook import set_restore_filter
from undertow.state.descriptors import ValueStateDescriptor
from undertow.testing.gates import CheckpointGate

WORKER_MODULE = "undertow.deploy.worker_process"
SEED_ENV = "UNDERTOW_TEST_SEED"
#: The former name of :data:`SEED_ENV`, still read.
LEGACY_SEED_ENV = "UNDERTOW_ORACLE_SEED"
#: The process name of a process hosting a worker: a Spark Python worker while its task runs,
#: or a worker forked by the ``local`` target's fork server (deploy.process_name).
WORKER_PROCESS_NAME = "undertow-worker"


class InjectedFailure(Exception):
    """A failure raised on purpose by the oracle's fault injection."""


class _ScheduledFailures:
    """Which failure (if any) this subtask owes in this attempt, and when it is due."""

    def __init__(self, what: str, fail_after_checkpoints: Sequence[int], first_attempt: int,
                 subtask: int, gate: CheckpointGate | None = None) -> None:  # fmt: skip
        schedule = [int(k) for k in fail_after_checkpoints]
        if any(k < 1 for k in schedule) or first_attempt < 0 or subtask < 0:
            raise ValueError(
                f"{what}: checkpoint counts must be >= 1, first_attempt and subtask >= 0; got "
                f"{schedule}, {first_attempt}, {subtask}"
            )
        self.what = what
        self.schedule = tuple(schedule)
        self.first_attempt = first_attempt
        self.subtask = subtask
        #: With a gate, a failure also waits until the checkpoint told complete is admitted.
        self.gate = gate
        self.due_after: int | None = None
        self.latest_completed = 0
        self.attempt = 0
        self.index = 0
        #: With ``after_records``: whether a record went through, and the first checkpoint whose
        #: barrier came after one (None: none yet); without it the gate is open from the start.
        self.saw_record = False
        self.first_after_records: int | None = None

    def open(self, runtime_context: RuntimeContext) -> None:
        self.attempt = runtime_context.get_attempt_number()
        self.index = runtime_context.get_index_of_this_subtask()
        parallelism = runtime_context.get_number_of_parallel_subtasks()
        entry = self.attempt - self.first_attempt
        mine = self.index == self.subtask % parallelism
        self.due_after = self.schedule[entry] if mine and 0 <= entry < len(self.schedule) else None
        self.latest_completed = 0
        self.saw_record = False
        self.first_after_records = None

    def notify_checkpoint_complete(self, checkpoint_id: int) -> None:
        self.latest_completed = max(self.latest_completed, checkpoint_id)

    def barrier(self, checkpoint_id: int) -> None:
        """The barrier of ``checkpoint_id`` reached the operator."""
        if self.saw_record and self.first_after_records is None:
            self.first_after_records = checkpoint_id

    def fire_if_due(self, after_records: bool = False) -> None:
        due = self.due_after
        if due is None or self.latest_completed < due:
            return
        if after_records and (self.first_after_records is None
                              or self.latest_completed < self.first_after_records):  # fmt: skip
            return
        if self.gate is not None and not self.gate.admits(self.latest_completed):
            return
        self.due_after = None
        entry = self.attempt - self.first_attempt
        raise InjectedFailure(
            f"{self.what}: scheduled failure {entry + 1} of {len(self.schedule)} (attempt "
            f"{self.attempt}, subtask {self.index}, checkpoint {self.latest_completed} completed,"
            f" due after {due})"
        )


class FailingMap(MapFunction):
    """Identity map that raises :class:`InjectedFailure` per the schedule (module doc); with
    ``gate``, each failure also waits until the gate admits the latest checkpoint the map was
    told completed (:class:`~undertow.testing.gates.CheckpointGate`)."""

    def __init__(self, fail_after_checkpoints: Sequence[int], first_attempt: int = 0,
                 subtask: int = 0, gate: CheckpointGate | None = None) -> None:  # fmt: skip
        self._failures = _ScheduledFailures("FailingMap.map", fail_after_checkpoints,
                                            first_attempt, subtask, gate)  # fmt: skip

    @property
    def scheduled_failures(self) -> int:
        return len(self._failures.schedule)

    def open(self, runtime_context: RuntimeContext) -> None:
        self._failures.open(runtime_context)

    def notify_checkpoint_complete(self, checkpoint_id: int) -> None:
        self._failures.notify_checkpoint_complete(checkpoint_id)

    def prepare_snapshot_pre_barrier(self, checkpoint_id: int) -> None:
        self._failures.barrier(checkpoint_id)

    def map(self, value: Any) -> Any:
        self._failures.fire_if_due(after_records=True)
        self._failures.saw_record = True
        return value


class _SnapshotTrap:
    """A keyed-state value whose pickling (the operator's synchronous snapshot) may raise."""

    __slots__ = ("owner",)

    def __init__(self, owner: _ScheduledFailures | None) -> None:
        self.owner = owner

    def __reduce__(self) -> tuple[Any, tuple[()]]:
        if self.owner is not None:
            self.owner.fire_if_due()
        return _inert_trap, ()


def _inert_trap() -> _SnapshotTrap:
    return _SnapshotTrap(None)


class FailingSnapshot(MapFunction):
    """Identity map for a keyed stream whose operator's snapshot raises :class:`InjectedFailure`
    per the schedule (module doc): the first snapshot taken once the failure is due fails.

    It needs keyed state: use it on a ``KeyedStream`` or hand it to
    :class:`~undertow.testing.oracle.OracleStatefulFunction`, which calls ``open``,
    ``notify_checkpoint_complete`` and ``map`` on it."""

    def __init__(self, fail_after_checkpoints: Sequence[int], first_attempt: int = 0,
                 subtask: int = 0) -> None:  # fmt: skip
        self._failures = _ScheduledFailures("FailingSnapshot.snapshot", fail_after_checkpoints,
                                            first_attempt, subtask)  # fmt: skip
        self._armed = False

    @property
    def scheduled_failures(self) -> int:
        return len(self._failures.schedule)

    def open(self, runtime_context: RuntimeContext) -> None:
        self._failures.open(runtime_context)
        self._state = runtime_context.get_state(ValueStateDescriptor("oracle-failing-snapshot"))
        self._armed = False

    def notify_checkpoint_complete(self, checkpoint_id: int) -> None:
        self._failures.notify_checkpoint_complete(checkpoint_id)

    def map(self, value: Any) -> Any:
        if not self._armed and self._failures.due_after is not None:
            self._state.update(_SnapshotTrap(self._failures))  # under the current key
            self._armed = True
        return value


# --- random kills (target ``local``) ------------------------------------------------------------


def oracle_seed() -> int:
    """The seed of a randomized run: ``$UNDERTOW_TEST_SEED`` (or the older
    ``$UNDERTOW_ORACLE_SEED``) if set, to replay a run, else random. Printed either way, with
    how to replay it."""
    configured = os.environ.get(SEED_ENV) or os.environ.get(LEGACY_SEED_ENV)
    seed = int(configured) if configured else random.SystemRandom().randrange(2**32)
    print(f"[oracle] seed {seed} (replay: {SEED_ENV}={seed})")
    return seed


def worker_process_pids() -> list[int]:
    """Pids of live worker processes of this process, found through ``/proc``; sorted: children
    running ``python -m undertow.deploy.worker_process`` (``local`` without its fork server)
    and descendants named ``undertow-worker`` (forked ``local`` workers, Spark Python workers
    hosting a worker)."""
    me = os.getpid()
    table: dict[int, tuple[str, int, str, str]] = {}  # pid -> (state, parent, name, cmdline)
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/cmdline", "rb") as raw:
                cmdline = raw.read().replace(b"\0", b" ").decode(errors="replace")
            with open(f"/proc/{entry}/stat") as text:
                stat = text.read()
        except OSError:
            continue  # exited meanwhile
        name = stat[stat.find("(") + 1 : stat.rfind(")")]
        after_name = stat.rsplit(")", 1)[1].split()
        if len(after_name) < 2:
            continue
        table[int(entry)] = (after_name[0], int(after_name[1]), name, cmdline)

    def descends_from_me(pid: int) -> bool:
        seen = 0
        while pid in table and seen < 64:
            pid, seen = table[pid][1], seen + 1
            if pid == me:
                return True
        return False

    found = []
    for pid, (state, parent, name, cmdline) in table.items():
        if state in ("Z", "X"):
            continue
        local_worker = WORKER_MODULE in cmdline and parent == me
        named_worker = name == WORKER_PROCESS_NAME and descends_from_me(pid)
        if local_worker or named_worker:
            found.append(pid)
    return sorted(found)


#: The pids a kill may choose from, asked at the moment of the kill.
Candidates = Callable[[], Sequence[int]]


class RestAddressed(Protocol):
    """A running job's handle that knows its REST API (``JobClient``)."""

    def get_rest_address(self) -> str | None: ...


#: How long :func:`live_workers_of` keeps asking the REST API (each call, retries included):
#: a loaded machine answers late (5 s was too short at load 70), and the e2e kills allow 15 s
#: past the kill's moment.
REST_ANSWER_WITHIN_S = 12.0
#: The pause between two of its attempts.
REST_RETRY_PAUSE_S = 0.2


class CandidatesUnknown(Exception):
    """The job's live workers could not be read (its REST API did not answer in time, or it
    has none): unlike an answer that lists no busy worker, this says nothing of the job."""


def live_workers_of(
    job: RestAddressed, answer_within_s: float = REST_ANSWER_WITHIN_S
) -> Candidates:
    """The pids of ``job``'s workers worth killing, read from its REST API (``GET
    /taskmanagers``) at each call: registered in the current attempt, control connection
    open, and at least one slot busy (a subtask in it has not finished); empty when the API
    answered with none (the job's subtasks all finished). A call that gets no answer (time-out,
    refused connection, a broken body) asks again until ``answer_within_s`` passed, then raises
    :class:`CandidatesUnknown` naming the address, the tries and the last error; so does a
    job without a REST API (``rest.port`` -1). Blocking; call it from the test's threads."""

    def pids() -> list[int]:
        address = job.get_rest_address()
        if address is None:
            raise CandidatesUnknown("the job has no REST API (rest.port -1) to list its workers")
        url = f"{address}/taskmanagers"
        started = time.monotonic()
        deadline = started + answer_within_s
        tries = 0
        while True:
            tries += 1
            try:
                wait_s = max(deadline - time.monotonic(), REST_RETRY_PAUSE_S)
                with urllib.request.urlopen(url, timeout=wait_s) as response:
                    body = json.loads(response.read())
                return busy_worker_pids(body)
            except (OSError, ValueError) as err:
                last = err
            if time.monotonic() + REST_RETRY_PAUSE_S >= deadline:
                raise CandidatesUnknown(
                    f"GET {url} did not answer within {answer_within_s:g} s ({tries} "
                    f"tries in {time.monotonic() - started:.1f} s; last: {last!r})"
                )
            time.sleep(REST_RETRY_PAUSE_S)

    return pids


def busy_worker_pids(taskmanagers: dict[str, Any]) -> list[int]:
    """The pids in a ``GET /taskmanagers`` body of the workers with a busy slot (fewer
    ``freeSlots`` than ``slotsNumber``): a worker whose subtasks all finished is left out."""
    workers = taskmanagers.get("taskmanagers", [])
    return sorted(int(w["pid"]) for w in workers if w["freeSlots"] < w["slotsNumber"])


def kill_candidates(candidates: Candidates | None = None) -> tuple[list[int], str]:
    """The pids a kill chooses from, and where they came from (for the kill's report):
    without ``candidates``, every worker process of this process
    (:func:`worker_process_pids`); with it, those of its pids that are also one of them (a
    job on ``local-threads`` registers this very process's pid: never a candidate). The
    report tells a job whose REST API listed no busy worker from one whose list could not be
    read (:class:`CandidatesUnknown`: none then, and its cause)."""
    if candidates is None:
        ours = worker_process_pids()
        return ours, f"worker processes of this process {ours}"
    try:
        listed = sorted(candidates())
        job = f"the job's live workers {listed}" if listed else "the job lists no busy worker"
    except CandidatesUnknown as err:
        listed, job = [], f"the job's live workers are unknown: {err}"
    ours = worker_process_pids()
    return [pid for pid in listed if pid in ours], f"{job}, worker processes of this process {ours}"


def kill_worker_process(seed: int, candidates: Candidates | None = None) -> int | None:
    """``kill -9`` one worker process, chosen by ``seed`` among :func:`kill_candidates`;
    returns its pid, or ``None`` if there is none. Prints the seed, the pid and the candidates
    (replay with the same seed)."""
    pid, line = _kill(seed, candidates)
    print(line)
    return pid


def _kill(seed: int, candidates: Candidates | None) -> tuple[int | None, str]:
    pids, where = kill_candidates(candidates)
    what = f"[oracle] kill_worker_process(seed={seed})"
    if not pids:
        return None, f"{what}: no worker process to kill ({where})"
    pid = random.Random(seed).choice(pids)
    try:
        os.kill(pid, signal.SIGKILL)
    except ProcessLookupError:
        return None, f"{what}: worker pid {pid} of {pids} had exited ({where})"
    return pid, f"{what}: kill -9 worker pid {pid} of {pids} ({where})"


class WorkerKiller:
    """Kills one worker process (:func:`kill_worker_process`, among ``candidates``) after a
    delay drawn from ``[earliest_s, latest_s]`` by ``seed``, on a daemon thread; ``start``
    then ``join``. :attr:`report` keeps the lines it printed, for a failure message."""

    def __init__(self, seed: int, earliest_s: float, latest_s: float,
                 candidates: Candidates | None = None) -> None:  # fmt: skip
        if not 0 <= earliest_s <= latest_s:
            raise ValueError(f"need 0 <= earliest_s <= latest_s, got {earliest_s}, {latest_s}")
        self.seed = seed
        self.delay_s = random.Random(seed).uniform(earliest_s, latest_s)
        self.candidates = candidates
        self.killed_pid: int | None = None
        self.report = [f"[oracle] WorkerKiller(seed={seed}): kill -9 a worker after "
                       f"{self.delay_s:.3f} s"]  # fmt: skip
        self._cancel = threading.Event()
        self._thread = threading.Thread(target=self._run, name="oracle-worker-killer",
                                        daemon=True)  # fmt: skip
        print(self.report[0])

    def _run(self) -> None:
        if not self._cancel.wait(self.delay_s):
            self.killed_pid, line = _kill(self.seed, self.candidates)
            self.report.append(line)
            print(line)

    def start(self) -> WorkerKiller:
        self._thread.start()
        return self

    def cancel(self) -> None:
        self._cancel.set()

    def join(self, timeout: float | None = None) -> int | None:
        """Wait for the kill; the killed pid, or ``None`` if none was killed."""
        self._thread.join(timeout)
        return self.killed_pid


# --- the no-restore control -----------------------------------------------------------------


@contextmanager
def no_restore() -> Iterator[list[int]]:
    """Test-only fault: while active, every restore of a job run from this process (failover
    or ``execution.state-recovery.path``) ignores its snapshot: keyed and operator state,
    source positions (reader splits and enumerator) and channel state all start empty, while
    the JobMaster still reports the restore (console line, REST ``latest.restored``). A restore
    test that passes under it cannot tell a restore from a rerun.

    Yields the list of checkpoint ids whose snapshots were ignored (filled as it happens).
    Hooked at :func:`undertow.runtime.master.restore_hook.plan_to_apply`, the one place a
    restore plan reaches a deployment; the JobMaster runs in the driver process on every
    target, so this works for ``local-threads``, ``local`` and ``spark`` alike."""
    ignored: list[int] = []

    def ignore(plan: Any) -> None:
        checkpoint_id = int(plan.metadata.checkpoint_id)
        ignored.append(checkpoint_id)
        print(f"[oracle] no-restore control: ignoring the snapshot of checkpoint {checkpoint_id}")

    set_restore_filter(ignore)
    try:
        yield ignored
    finally:
        set_restore_filter(None)


# --- crashes at a sink's named protocol points ----------------------------------------------------


class ScheduledCrash:
    """Crashes a sink subtask at named points of its commit protocol (the Kafka sink's
    ``CRASH_POINTS``; hand it to ``KafkaSink.with_crash_injector``): in attempt
    ``first_attempt + i``, on subtask ``subtask``, the ``nth`` time ``points[i]`` is reached. So
    a run with ``k`` points restarts ``k`` times. ``hard`` ends the worker process at once
    (``os._exit``, like a kill: nothing after the point runs, not even ``close``; use it on
    ``local``); otherwise it raises :class:`InjectedFailure`."""

    def __init__(self, points: Sequence[str], nth: int = 1, first_attempt: int = 0,
                 subtask: int = 0, hard: bool = True) -> None:  # fmt: skip
        if nth < 1 or not points:
            raise ValueError(f"ScheduledCrash({points!r}): needs points and nth >= 1, got {nth}")
        self.points, self.nth, self.first_attempt = tuple(points), nth, first_attempt
        self.subtask, self.hard = subtask, hard
        self._seen = 0

    def reached(self, point: str, checkpoint_id: int, attempt: int, subtask: int) -> None:
        entry = attempt - self.first_attempt
        if subtask != self.subtask or not 0 <= entry < len(self.points):
            return
        if point != self.points[entry]:
            return
        self._seen += 1
        if self._seen != self.nth:
            return
        what = (f"ScheduledCrash: {point} (time {self.nth}, checkpoint {checkpoint_id}, attempt "
                f"{attempt}, subtask {subtask})")  # fmt: skip
        print(f"[oracle] {what}", flush=True)
        if self.hard:
            os._exit(86)
        raise InjectedFailure(what)
