"""A worker's stdout forwarders: whole lines, per writing thread, leftovers at the end; a worker
thread routes only its own writes."""

from __future__ import annotations

import io
import sys
import threading

from undertow.runtime.worker.stdout_forwarding import (
    LineForwarder,
    ThreadRoutedStdout,
    forward_stdout,
    forward_thread_stdout,
)


def test_print_becomes_whole_lines() -> None:
    sent: list[list[str]] = []
    out = LineForwarder(sent.append)
    print("a", 1, file=out)
    print("b", end="", file=out)
    print("c\nd", file=out)
    out.write("e\nf\n")
    assert sent == [["a 1"], ["bc"], ["d"], ["e", "f"]]


def test_threads_never_mix_inside_a_line() -> None:
    sent: list[str] = []
    out = LineForwarder(sent.extend)
    barrier = threading.Barrier(2)

    def half_lines(name: str) -> None:
        for i in range(200):
            out.write(f"{name}{i}-")
            if i == 0:
                barrier.wait()
            out.write("end\n")

    threads = [threading.Thread(target=half_lines, args=(n,)) for n in "xy"]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert sorted(sent) == sorted(f"{n}{i}-end" for n in "xy" for i in range(200))


def test_forward_stdout_installs_and_restores_and_emits_leftovers() -> None:
    sent: list[list[str]] = []
    before = sys.stdout
    with forward_stdout(sent.append):
        print("seen 1")
        print("no newline", end="")
        assert sys.stdout is not before
    assert sys.stdout is before
    assert sent == [["seen 1"], ["no newline"]]


class _Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_a_worker_thread_routes_its_own_writes_and_no_other_threads() -> None:
    before = sys.stdout
    sys.stdout = driver = _Terminal()  # the driver's stdout
    try:
        worker_lines: list[str] = []
        started, printed = threading.Event(), threading.Event()

        def worker() -> None:
            with forward_thread_stdout(worker_lines.extend):
                started.set()
                print("from", "the", "worker")
                printed.wait(5)
                print("unterminated", end="")

        thread = threading.Thread(target=worker)
        thread.start()
        started.wait(5)
        assert isinstance(sys.stdout, ThreadRoutedStdout)
        assert sys.stdout.isatty()  # the driver's stream's answer
        print("from the driver")
        printed.set()
        thread.join()
        assert sys.stdout is driver  # the last routed thread put it back
        assert worker_lines == ["from the worker", "unterminated"]
        assert driver.getvalue() == "from the driver\n"
    finally:
        sys.stdout = before


def test_the_router_stays_while_another_worker_thread_prints_and_leaves_a_replacement() -> None:
    before = sys.stdout
    sys.stdout = io.StringIO()
    try:
        first: list[str] = []
        second: list[str] = []
        inside, go_on, printed, leave = (threading.Event() for _ in range(4))

        def long_worker() -> None:
            with forward_thread_stdout(second.extend):
                inside.set()
                go_on.wait(5)
                print("second, after the first left")
                printed.set()
                leave.wait(5)

        thread = threading.Thread(target=long_worker)
        thread.start()
        inside.wait(5)
        router = sys.stdout
        with forward_thread_stdout(first.extend):
            assert sys.stdout is router  # one router for every worker thread
            print("first")
        assert sys.stdout is router  # the other worker still prints through it
        go_on.set()
        printed.wait(5)
        sys.stdout = replaced = io.StringIO()  # e.g. a test's capture, installed meanwhile
        leave.set()
        thread.join()
        assert sys.stdout is replaced  # not undone by the last worker thread
        assert first == ["first"] and second == ["second, after the first left"]
    finally:
        sys.stdout = before
