"""Run several job scripts in one process, each as ``undertow run -t TARGET --no-status SCRIPT``.

Usage: ``python corpus_runner.py TARGET SCRIPT...``. For each script it prints a start line,
runs the script through the command line's own ``run`` (:func:`undertow.cli.run.run`: the
script runs as ``__main__`` with ``sys.argv == [SCRIPT]``, exactly as ``undertow run`` runs it),
then prints an end line with the exit code ``undertow run`` would have returned. A script that
raises is reported with exit code 1 and its traceback on stderr; the next script still runs.

Why one process: a job on the ``spark`` target pays Spark's start (several seconds) once per
process; the scripts of one target share it, as jobs of one ``undertow run`` do. Nothing else
is shared that a script could see: every script builds its own environment, and the command
line's defaults are the same for all of them.

The markers are printed on standard output between the scripts' own lines; the test splits
the output on them (see :func:`split_runs`). Standard output is flushed at both markers, so a
script's lines land between its own markers.
"""

from __future__ import annotations

import os
import sys
import time
import traceback

START = "=== corpus: start "
END = "=== corpus: exit "


def run_script(target: str, script: str) -> int:
    """``undertow run -t TARGET --no-status SCRIPT``'s exit code, in this process."""
    from undertow.cli.main import build_parser
    from undertow.cli.run import run

    args = build_parser().parse_args(["run", "-t", target, "--no-status", script])
    try:
        return run(args)
    except SystemExit as exit_:
        return exit_.code if isinstance(exit_.code, int) else 1
    except BaseException:
        traceback.print_exc()
        return 1


def split_runs(stdout: str) -> dict[str, tuple[int | None, list[str]]]:
    """Script name -> (exit code or None if it never ended, the lines it printed)."""
    runs: dict[str, tuple[int | None, list[str]]] = {}
    name: str | None = None
    lines: list[str] = []
    for line in stdout.splitlines():
        if line.startswith(START):
            name, lines = line[len(START) :], []
            runs[name] = (None, lines)
        elif line.startswith(END) and name is not None:
            runs[name] = (int(line[len(END) :]), lines)
            name = None
        elif name is not None:
            lines.append(line)
    return runs


def main(argv: list[str]) -> int:
    target, scripts = argv[0], argv[1:]
    failures = 0
    for script in scripts:
        name = os.path.splitext(os.path.basename(script))[0]
        print(f"{START}{name}", flush=True)
        print(f"--- {name} ---", file=sys.stderr, flush=True)
        started = time.monotonic()
        code = run_script(target, script)
        print(f"--- {name}: exit {code} in {time.monotonic() - started:.1f} s", file=sys.stderr)
        sys.stderr.flush()
        print(f"{END}{code}", flush=True)
        failures += code != 0
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
