"""Record what PyFlink prints for each example fixture (the expected outputs of test_examples).

Runs every ``pyflink_examples/*.py`` unchanged with a PyFlink 2.3.0 interpreter and writes its
standard output to ``expected/<name>.out``. PyFlink is never a dependency of undertow; run this
by hand when a fixture changes::

    python tests/conformance/record_expected.py /work/pyflink-venv/bin/python [name ...]
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent


def record(python: str, name: str) -> None:
    script = HERE / "pyflink_examples" / f"{name}.py"
    # PyFlink starts its Python workers as ``python``: it must be the PyFlink interpreter
    env = dict(os.environ, PATH=f"{Path(python).parent}{os.pathsep}{os.environ['PATH']}")
    with tempfile.TemporaryDirectory() as cwd:
        done = subprocess.run(
            [python, str(script)], cwd=cwd, env=env, capture_output=True, text=True, timeout=600
        )
    if done.returncode != 0:
        raise SystemExit(f"{name}: PyFlink exited with {done.returncode}:\n{done.stderr}")
    (HERE / "expected" / f"{name}.out").write_text(done.stdout)
    print(f"{name}: {len(done.stdout.splitlines())} lines")


def main(argv: list[str]) -> None:
    python, names = argv[0], argv[1:]
    if not names:
        names = sorted(p.stem for p in (HERE / "pyflink_examples").glob("*.py"))
    for name in names:
        record(python, name)


if __name__ == "__main__":
    main(sys.argv[1:])
