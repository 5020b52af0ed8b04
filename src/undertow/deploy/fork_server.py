"""The fork server of the ``local`` target: worker processes without an interpreter's start.

One server process per driver (``python -m undertow.deploy.fork_server``) imports the worker's
modules once and forks each worker, as Spark's Python daemon does; it is single-threaded and
never runs a job, and nothing of the user's script is imported there. A forked worker takes the
driver's environment, working directory, ``sys.path`` and fds 1 and 2 at launch.
Protocol: pickled frozen dataclasses over a ``SOCK_SEQPACKET`` socketpair only the driver and
its server hold (fds with ``SCM_RIGHTS``): :class:`Fork` → :class:`Started`; each reaped child
→ :class:`Exited`; :class:`Kill` hits a child only until it is reaped. A worker is known by its
fork's request number, never by its pid: pids are recycled, and a stale exit must not pass for a
new worker's (a new worker once looked "exited with code 0 before registering").
Lifecycle: started on first use (:func:`fork_server`); on end of file (the driver ended, even by
``kill -9``) the server kills its workers and exits. Threading: the client may be used from any
thread; a reader thread delivers the server's answers. Why: docs/design.md, "Worker processes".
"""

from __future__ import annotations

import dataclasses
import importlib
import os
import pickle
import selectors
import signal
import socket
import subprocess
import sys
import threading
import traceback
from typing import NoReturn

from undertow.deploy.process_name import WORKER_PROCESS_NAME, set_process_name

#: What the server imports once: everything a worker needs before it runs a job.
PRELOAD = (
    "undertow.deploy.worker_process",
    "undertow.state.rocksdb",
    "undertow.datastream",  # what user functions refer to (unpickled as a task deploys)
    "undertow.datastream.connectors",
)
#: Imported too where installed: pyarrow imports pandas at its first array conversion, so each
#: worker paid 0.2-0.3 s of CPU on its first record batch (17% of a worker's samples in an
#: 8 M-row columnar job, inside the latency benchmark's warm-up); the server pays it once.
PRELOAD_IF_INSTALLED = ("pandas", "pyarrow.pandas_compat")
#: Largest message: a worker's arguments (job configuration) and the driver's environment.
MAX_MESSAGE = 4 << 20
START_TIMEOUT_S = 60.0


@dataclasses.dataclass(frozen=True)
class Fork:
    request: int
    arguments: bytes
    env: dict[str, str]
    cwd: str
    path: list[str]


@dataclasses.dataclass(frozen=True)
class Kill:
    request: int


@dataclasses.dataclass(frozen=True)
class Ready:
    pass


@dataclasses.dataclass(frozen=True)
class Started:
    request: int
    pid: int


@dataclasses.dataclass(frozen=True)
class Exited:
    request: int
    code: int  # negative: the signal that ended it


class ForkServerError(RuntimeError):
    """The fork server could not start a worker, or went away."""


class ForkServer:
    """The driver's end: starts the server, forks workers through it, tracks their exits."""

    def __init__(self) -> None:
        ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        for end in (ours, theirs):
            end.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, MAX_MESSAGE)
        env = dict(os.environ, PYTHONPATH=os.pathsep.join(p for p in sys.path if p))
        self._process = subprocess.Popen(
            [sys.executable, "-m", "undertow.deploy.fork_server", str(theirs.fileno())],
            pass_fds=[theirs.fileno()], stdin=subprocess.DEVNULL, env=env,
        )  # fmt: skip
        theirs.close()
        self._socket = ours
        self._send_lock = threading.Lock()
        self._changed = threading.Condition()
        self._ready = False
        self._lost: str | None = None
        self._next_request = 0
        self._started: dict[int, int] = {}
        self._exits: dict[int, int] = {}
        threading.Thread(target=self._read, name="undertow-fork-server", daemon=True).start()
        with self._changed:
            if not self._changed.wait_for(lambda: self._ready or self._lost, START_TIMEOUT_S):
                self._lost = f"no answer within {START_TIMEOUT_S:.0f} s"
        if self._lost:
            raise ForkServerError(f"the fork server did not start: {self._lost}")

    @property
    def alive(self) -> bool:
        return self._lost is None

    def fork(self, arguments: bytes) -> tuple[int, int]:
        """A new worker running ``worker_process.run(arguments)``: its request number (what
        :meth:`exit_code` and :meth:`kill` take) and its pid (for people)."""
        with self._changed:
            request = self._next_request
            self._next_request += 1
        message = Fork(request, arguments, dict(os.environ), os.getcwd(), list(sys.path))
        self._send(message, fds=[1, 2])
        with self._changed:
            self._changed.wait_for(lambda: request in self._started or self._lost,
                                   START_TIMEOUT_S)  # fmt: skip
            if request not in self._started:
                raise ForkServerError(f"the fork server started no worker: {self._lost}")
            return request, self._started.pop(request)

    def exit_code(self, request: int, timeout: float | None = 0.0) -> int | None:
        """The exit code of the worker of fork ``request`` once the server reaped it (waits up
        to ``timeout``)."""
        with self._changed:
            self._changed.wait_for(lambda: request in self._exits or self._lost, timeout)
            return self._exits.get(request, -signal.SIGKILL if self._lost else None)

    def kill(self, request: int) -> None:
        if self._lost is None:
            self._send(Kill(request))

    def _send(self, message: Fork | Kill, fds: list[int] | None = None) -> None:
        data = pickle.dumps(message)
        if len(data) > MAX_MESSAGE:
            raise ForkServerError(
                f"a worker's arguments and environment take {len(data)} bytes, more than the "
                f"fork server takes ({MAX_MESSAGE}); set execution.local.fork-server: false"
            )
        with self._send_lock:
            try:
                socket.send_fds(self._socket, [data], fds or [])
            except OSError as err:
                self._lose(f"sending to it failed: {err}")
                raise ForkServerError(f"the fork server is gone: {err}") from err

    def _read(self) -> None:
        while True:
            try:
                data = self._socket.recv(MAX_MESSAGE)
            except OSError as err:
                return self._lose(f"reading from it failed: {err}")
            if not data:
                code = self._process.wait()
                return self._lose(f"it ended with exit code {code}")
            try:
                message = pickle.loads(data)
            except Exception as err:
                return self._lose(f"it sent what cannot be read: {err!r}")
            with self._changed:
                if isinstance(message, Ready):
                    self._ready = True
                elif isinstance(message, Started):
                    self._started[message.request] = message.pid
                elif isinstance(message, Exited):
                    self._exits[message.request] = message.code
                self._changed.notify_all()

    def _lose(self, why: str) -> None:
        with self._changed:
            self._lost = why
            self._changed.notify_all()


_server: ForkServer | None = None
_server_lock = threading.Lock()


def fork_server() -> ForkServer:
    """The driver's fork server, started (and waited for) on first use or after it died."""
    global _server
    with _server_lock:
        if _server is None or not _server.alive:
            _server = ForkServer()
        return _server


# -- the server process ----------------------------------------------------------------------


def serve(channel: socket.socket) -> None:
    """Fork workers on request until the driver closes the channel, then kill the rest."""
    for name in PRELOAD:
        importlib.import_module(name)
    for name in PRELOAD_IF_INSTALLED:
        try:
            importlib.import_module(name)
        except ImportError:
            pass  # an optional dependency: its users import it themselves
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # ^C reaches the driver and workers, not us
    wake_read, wake_write = os.pipe()
    os.set_blocking(wake_write, False)
    signal.set_wakeup_fd(wake_write)
    signal.signal(signal.SIGCHLD, lambda *_: None)
    children: dict[int, int] = {}  # pid -> request, until reaped
    selector = selectors.DefaultSelector()
    selector.register(channel, selectors.EVENT_READ)
    selector.register(wake_read, selectors.EVENT_READ)
    _answer(channel, Ready())
    while True:
        for key, _ in selector.select():
            if key.fileobj is channel:
                data, fds, _, _ = socket.recv_fds(channel, MAX_MESSAGE, 2)
                if not data:
                    return _end(children)
                message = pickle.loads(data)
                if isinstance(message, Fork):
                    pid = os.fork()
                    if pid == 0:
                        _become_worker(message, fds, channel, wake_read, wake_write)
                    children[pid] = message.request
                    _answer(channel, Started(message.request, pid))
                elif isinstance(message, Kill):
                    for pid, request in children.items():
                        if request == message.request:
                            os.kill(pid, signal.SIGKILL)
                for fd in fds:
                    os.close(fd)
            else:
                os.read(wake_read, 4096)
        _reap(channel, children)


def _answer(channel: socket.socket, message: Ready | Started | Exited) -> None:
    channel.send(pickle.dumps(message))


def _reap(channel: socket.socket, children: dict[int, int]) -> None:
    while children:
        pid, status = os.waitpid(-1, os.WNOHANG)
        if pid == 0:
            return
        request = children.pop(pid)
        _answer(channel, Exited(request, os.waitstatus_to_exitcode(status)))


def _end(children: dict[int, int]) -> None:
    for pid in children:
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
    for pid in children:
        os.waitpid(pid, 0)


def _become_worker(message: Fork, fds: list[int], *inherited: socket.socket | int) -> NoReturn:
    """In the forked child: take the driver's state at launch, run the worker, exit."""
    code = 1
    try:
        signal.set_wakeup_fd(-1)
        signal.signal(signal.SIGCHLD, signal.SIG_DFL)
        signal.signal(signal.SIGINT, signal.default_int_handler)
        for held in inherited:
            held.close() if isinstance(held, socket.socket) else os.close(held)
        for fd, target in zip(fds, (1, 2), strict=True):
            os.dup2(fd, target)
            os.close(fd)
        set_process_name(WORKER_PROCESS_NAME)
        os.environ.clear()
        os.environ.update(message.env)
        os.chdir(message.cwd)
        sys.path[:] = message.path
        from undertow.deploy import worker_process

        code = worker_process.run(message.arguments)
    except BaseException:
        traceback.print_exc()
    finally:
        for stream in (sys.stdout, sys.stderr):
            try:
                stream.flush()
            except (OSError, ValueError):
                pass
        os._exit(code)


if __name__ == "__main__":  # the messages must pickle under this module's name, not __main__
    from undertow.deploy.fork_server import serve as serve_as_module

    serve_as_module(socket.socket(fileno=int(sys.argv[1])))
