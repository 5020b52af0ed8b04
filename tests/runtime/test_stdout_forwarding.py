"""A worker process's stdout forwarder: whole lines, per writing thread, leftovers at the end."""

from __future__ import annotations

import sys
import threading

from undertow.runtime.worker.stdout_forwarding import LineForwarder, forward_stdout


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
