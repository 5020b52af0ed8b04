"""Makes a job's Python dependencies (``python.files``, ``.archives``, ``.requirements``,
``.executable``, cached files; :mod:`undertow.common.python_dependencies`) real for its workers.

* On the driver, for the ``spark`` target, :func:`ship_to_spark` hands every path to Spark
  (``addPyFile`` for ``.py``/``.zip``/``.egg``, ``addFile`` for the rest, directories
  recursively); executors find them with ``SparkFiles.get(name)``.
* In a worker with a process of its own (``local``, ``spark``), :class:`WorkerEnvironment`
  exports ``os.environ["python"]`` (as PyFlink's workers) and builds a private working
  directory: Python files on ``sys.path``, archives unpacked under their target directory,
  cached files by name, requirements pip-installed; the process works in that directory while
  the worker runs, then ``sys.path``, the directory and the variable are restored.
* ``local-threads`` workers share the driver's process: :func:`prepare_driver` puts files and
  requirements on the driver's ``sys.path`` for the rest of the process; archives, cached files
  and another executable are refused by :func:`check_target`. More: docs/design.md.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import stat
import subprocess
import sys
import tempfile
import threading
from collections.abc import Callable
from types import TracebackType
from typing import TYPE_CHECKING

from undertow.common.python_dependencies import PythonDependencies
from undertow.core.errors import DeploymentError

if TYPE_CHECKING:
    from pyspark import SparkContext

#: Where a worker finds a dependency's local copy, given the path the driver configured.
Locator = Callable[[str], str]

_PY_FILE_SUFFIXES = (".py", ".zip", ".egg")
_SHIPPED: dict[str, set[str]] = {}  # Spark application id -> paths already added
_LOCK = threading.Lock()
_DRIVER_PREPARED: set[PythonDependencies] = set()


def same_place(path: str) -> str:
    """Locator for workers on the driver's machine: the configured path itself."""
    return path


def spark_files(path: str) -> str:
    """Locator for Spark executors: the copy Spark fetched (:func:`ship_to_spark`)."""
    from pyspark import SparkFiles

    local = SparkFiles.get(os.path.basename(path.rstrip("/")))
    if not os.path.exists(local):
        raise DeploymentError(f"{path} was not shipped to this executor (looked at {local})")
    return local


def check_target(deps: PythonDependencies, target: str) -> None:
    """Refuse what ``target`` cannot honour, before anything starts."""
    if target != "local-threads":
        return
    if deps.archives or deps.cached_files:
        what = "python.archives" if deps.archives else "register_cached_file"
        raise DeploymentError(
            f"{what} needs workers with a working directory of their own; execution.target "
            "'local-threads' runs them as threads of the driver: use 'local' or 'spark'"
        )
    if deps.executable and not _same_file(deps.executable, sys.executable):
        raise DeploymentError(
            f"python.executable {deps.executable!r}: 'local-threads' workers run in the driver's "
            f"interpreter ({sys.executable}); use 'local' or 'spark'"
        )


def ship_to_spark(sc: SparkContext, deps: PythonDependencies) -> None:
    """Add every dependency to the Spark application once; two different paths with the same
    file name are refused (executors see files by name)."""
    app = str(sc.applicationId)
    with _LOCK:
        shipped = _SHIPPED.setdefault(app, set())
        names = {os.path.basename(p.rstrip("/")): p for p in shipped}
        for path in deps.shipped_paths():
            if path in shipped:
                continue
            name = os.path.basename(path.rstrip("/"))
            if name in names:
                raise DeploymentError(
                    f"cannot ship {path} to Spark: {names[name]} was shipped under the same "
                    f"name {name!r} (executors find files by name); rename one of them"
                )
            if os.path.isfile(path) and path.endswith(_PY_FILE_SUFFIXES) and path in deps.files:
                sc.addPyFile(path)
            else:
                sc.addFile(path, recursive=os.path.isdir(path))
            shipped.add(path)
            names[name] = path


def prepare_driver(deps: PythonDependencies) -> None:
    """For ``local-threads``: files and requirements on the driver's ``sys.path`` (kept for
    the life of the process, once per set of dependencies)."""
    with _LOCK:
        if deps in _DRIVER_PREPARED:
            return
        folder = tempfile.mkdtemp(prefix="undertow-pyfiles-")
        entries = _python_path(deps, same_place, folder)
        sys.path[:0] = [e for e in entries if e not in sys.path]
        _DRIVER_PREPARED.add(deps)


#: The variable naming a worker's interpreter (PyFlink's name, in lower case).
PYTHON_VARIABLE = "python"


class WorkerEnvironment:
    """The context a worker process runs in (module docstring). Enter and exit on the same
    thread; not reentrant."""

    def __init__(self, deps: PythonDependencies, locate: Locator) -> None:
        self._deps = deps
        self._locate = locate
        self._old_path: list[str] = []
        self._old_cwd = ""
        self._old_python: str | None = None
        self._folder = ""

    def __enter__(self) -> WorkerEnvironment:
        deps = self._deps
        if deps.executable and not _same_file(deps.executable, sys.executable):
            raise DeploymentError(
                f"python.executable is {deps.executable!r} but this worker runs "
                f"{sys.executable}: on Spark, set spark.pyspark.python before the SparkContext "
                "starts (undertow does so when it builds the context)"
            )
        self._old_path = list(sys.path)
        self._old_cwd = os.getcwd()
        # PyFlink's workers export their interpreter as os.environ["python"].
        self._old_python = os.environ.get(PYTHON_VARIABLE)
        os.environ[PYTHON_VARIABLE] = deps.executable or sys.executable
        if deps.is_empty():
            return self
        self._folder = tempfile.mkdtemp(prefix="undertow-worker-env-")
        try:
            entries = _python_path(deps, self._locate, os.path.join(self._folder, "python-files"))
            for archive in deps.archives:
                source = self._locate(archive.path)
                target = os.path.join(self._folder, archive.target_dir)
                try:
                    shutil.unpack_archive(source, target)
                except (shutil.ReadError, ValueError, OSError) as err:
                    raise DeploymentError(
                        f"python.archives: cannot unpack {archive.path} into "
                        f"{archive.target_dir}: {err}"
                    ) from err
            for cached in deps.cached_files:
                target = os.path.join(self._folder, cached.name)
                _copy(self._locate(cached.path), target)
                if cached.executable:
                    os.chmod(target, os.stat(target).st_mode | stat.S_IXUSR | stat.S_IXGRP)
        except BaseException:
            shutil.rmtree(self._folder, ignore_errors=True)
            raise
        sys.path[:0] = [e for e in entries if e not in sys.path]
        os.chdir(self._folder)
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:  # fmt: skip
        sys.path[:] = self._old_path
        if self._old_python is None:
            os.environ.pop(PYTHON_VARIABLE, None)
        else:
            os.environ[PYTHON_VARIABLE] = self._old_python
        if self._folder:
            os.chdir(self._old_cwd)
            shutil.rmtree(self._folder, ignore_errors=True)
            self._folder = ""


def _python_path(deps: PythonDependencies, locate: Locator, files_dir: str) -> list[str]:
    """``sys.path`` entries for ``python.files`` (``.py`` files copied into ``files_dir``,
    directories and archives as they are) and the installed requirements."""
    entries: list[str] = []
    for path in deps.files:
        local = locate(path)
        if os.path.isfile(local) and local.endswith(".py"):
            os.makedirs(files_dir, exist_ok=True)
            shutil.copy2(local, os.path.join(files_dir, os.path.basename(local)))
            if files_dir not in entries:
                entries.append(files_dir)
        else:
            entries.append(local)
    if deps.requirements:
        cache = locate(deps.requirements_cache_dir) if deps.requirements_cache_dir else None
        entries.append(_install_requirements(locate(deps.requirements), cache))
    return entries


def _install_requirements(requirements: str, cache_dir: str | None) -> str:
    digest = hashlib.sha256(open(requirements, "rb").read())  # noqa: SIM115
    if cache_dir:
        digest.update(repr(sorted(os.listdir(cache_dir))).encode())
    root = os.path.join(tempfile.gettempdir(), "undertow-requirements")
    target = os.path.join(root, digest.hexdigest()[:24])
    if os.path.isdir(target):
        return target
    os.makedirs(root, exist_ok=True)
    staging = tempfile.mkdtemp(prefix="staging-", dir=root)
    command = [sys.executable, "-m", "pip", "install", "--disable-pip-version-check",
               "--no-input", "--quiet", "--target", staging, "-r", requirements]  # fmt: skip
    if cache_dir:
        command += ["--no-index", "--find-links", cache_dir]
    done = subprocess.run(command, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        shutil.rmtree(staging, ignore_errors=True)
        tail = "\n".join((done.stderr or done.stdout).strip().splitlines()[-5:])
        raise DeploymentError(
            f"python.requirements: pip could not install {requirements}"
            + (f" from {cache_dir} (no index)" if cache_dir else "")
            + f": {tail}"
        )
    try:
        os.rename(staging, target)
    except OSError:  # another worker finished first: use its copy
        shutil.rmtree(staging, ignore_errors=True)
    return target


def _copy(source: str, target: str) -> None:
    if os.path.isdir(source):
        shutil.copytree(source, target)
    else:
        shutil.copy2(source, target)


def _same_file(a: str, b: str) -> bool:
    return a == b or os.path.realpath(a) == os.path.realpath(b)
