"""Record what PyFlink 2.3 prints for each corpus program (the facts the corpus test compares with).

Runs every ``tests/conformance/corpus/*.py`` unchanged, as ``python program.py`` with the PyFlink
venv's interpreter (:mod:`pyflink_venv`; Java 17 on PATH), and writes its standard output to
``tests/conformance/corpus_expected/<name>.out`` under one header line naming the PyFlink version
and the date. Lines PyFlink's Python worker prints about itself (Beam and Cython diagnostics) are
not output of the program and are left out. undertow never depends on PyFlink: run this by hand
when a program changes::

    python benchmarks/peers/record_corpus.py [name ...]

A program that fails on PyFlink is an error here: the corpus holds only programs PyFlink runs.
"""

from __future__ import annotations

import argparse
import concurrent.futures
import datetime
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import pyflink_venv

ROOT = Path(__file__).resolve().parents[2]
CORPUS = ROOT / "tests" / "conformance" / "corpus"
EXPECTED = ROOT / "tests" / "conformance" / "corpus_expected"
TIMEOUT_S = 600
#: Lines PyFlink's Python worker (Beam) prints about its environment, not the program's output.
PYFLINK_NOISE = (
    re.compile(r"^Using Any for unsupported type: "),
    re.compile(r"^No module named google\.cloud\.bigquery_storage_v1\. "),
    re.compile(r"^PYFLINK_CYTHON_ENABLED: "),
)


def header() -> str:
    """The first line of a recording; the corpus test recognises and skips it."""
    today = datetime.datetime.now(datetime.UTC).date().isoformat()
    return f"# recorded with apache-flink {pyflink_venv.PYFLINK_VERSION} on {today}"


def record(python: Path, env: dict[str, str], name: str) -> bool:
    """Record one program; False (with PyFlink's stderr printed) if PyFlink failed to run it."""
    script = CORPUS / f"{name}.py"
    started = time.monotonic()
    with tempfile.TemporaryDirectory() as cwd:
        done = subprocess.run([str(python), str(script)], cwd=cwd, env=env, capture_output=True,
                              text=True, timeout=TIMEOUT_S)  # fmt: skip
    if done.returncode != 0:
        print(f"{name}: PyFlink exited with {done.returncode}:\n{done.stderr[-6000:]}", flush=True)
        return False
    lines = [
        line
        for line in done.stdout.splitlines()
        if not any(pattern.match(line) for pattern in PYFLINK_NOISE)
    ]
    (EXPECTED / f"{name}.out").write_text("\n".join([header(), *lines]) + "\n")
    print(f"{name}: {len(lines)} lines in {time.monotonic() - started:.1f} s", flush=True)
    return True


def main(argv: list[str]) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("names", nargs="*", help="programs to record (default: all)")
    parser.add_argument("-j", "--jobs", type=int, default=1, help="programs run at once")
    args = parser.parse_args(argv)
    python = pyflink_venv.ensure_pyflink()
    env = pyflink_venv.pyflink_environment(python)
    EXPECTED.mkdir(exist_ok=True)
    names = args.names or sorted(p.stem for p in CORPUS.glob("*.py"))
    with concurrent.futures.ThreadPoolExecutor(args.jobs) as pool:
        recorded = list(pool.map(lambda name: record(python, env, name), names))
    failed = [name for name, ok in zip(names, recorded) if not ok]
    if failed:
        raise SystemExit(f"PyFlink failed to run: {', '.join(failed)}")


if __name__ == "__main__":
    main(sys.argv[1:])
