"""The job's Python dependencies as configuration (PyFlink's ``python.*`` keys).

* ``python.files``: comma-separated Python files, package directories, zips, eggs or wheels,
  put on every worker's ``sys.path``;
* ``python.archives``: comma-separated ``path`` or ``path#target_dir``; every worker unpacks
  each into ``target_dir`` (default: the archive's file name) of its working directory;
* ``python.requirements``: ``requirements.txt`` or ``requirements.txt#cache_dir``; every
  worker pip-installs them (only from ``cache_dir`` when given) before the job's code runs;
* ``python.executable``: the interpreter of the workers;
* ``undertow.cached-files``: ``path#name`` or ``path#name#x`` (executable), Flink's
  distributed cache: the file appears as ``name`` in every worker's working directory.

Pure encoding and decoding, with checks on the driver (a missing file is named when it is
added, not when a worker starts). Shipping and unpacking live in :mod:`undertow.deploy`.
"""

from __future__ import annotations

import os
from dataclasses import dataclass

from undertow.core.config import Configuration
from undertow.core.errors import ConfigurationError

PYTHON_FILES = "python.files"
PYTHON_ARCHIVES = "python.archives"
PYTHON_REQUIREMENTS = "python.requirements"
PYTHON_EXECUTABLE = "python.executable"
CACHED_FILES = "undertow.cached-files"
_FILES_SEP = ","
_PARAM_SEP = "#"


@dataclass(frozen=True, slots=True)
class Archive:
    path: str
    target_dir: str


@dataclass(frozen=True, slots=True)
class CachedFile:
    path: str
    name: str
    executable: bool


@dataclass(frozen=True, slots=True)
class PythonDependencies:
    """What a job's workers need besides its pickled functions (all paths absolute)."""

    files: tuple[str, ...] = ()
    archives: tuple[Archive, ...] = ()
    requirements: str | None = None
    requirements_cache_dir: str | None = None
    executable: str | None = None
    cached_files: tuple[CachedFile, ...] = ()

    def is_empty(self) -> bool:
        return self == PythonDependencies(executable=self.executable)

    def shipped_paths(self) -> list[str]:
        """Every local path a remote worker needs a copy of."""
        paths = [
            *self.files,
            *(a.path for a in self.archives),
            *(c.path for c in self.cached_files),
        ]
        if self.requirements:
            paths.append(self.requirements)
        if self.requirements_cache_dir:
            paths.append(self.requirements_cache_dir)
        return paths


def _split(value: str) -> list[str]:
    return [p for p in (s.strip() for s in value.split(_FILES_SEP)) if p]


def read(config: Configuration | dict[str, str]) -> PythonDependencies:
    """Decode the keys above (from a Configuration or a worker's configuration dict)."""
    get = config.to_dict() if isinstance(config, Configuration) else config
    archives = []
    for item in _split(str(get.get(PYTHON_ARCHIVES, ""))):
        path, _, target = item.partition(_PARAM_SEP)
        archives.append(Archive(path, target or os.path.basename(path)))
    cached = []
    for item in _split(str(get.get(CACHED_FILES, ""))):
        parts = item.split(_PARAM_SEP)
        if len(parts) not in (2, 3) or not parts[1]:
            raise ConfigurationError(f"{CACHED_FILES}: expected 'path#name[#x]', got {item!r}")
        cached.append(CachedFile(parts[0], parts[1], len(parts) == 3 and parts[2] == "x"))
    requirements = str(get.get(PYTHON_REQUIREMENTS, "")).strip()
    req_file, _, cache_dir = requirements.partition(_PARAM_SEP)
    return PythonDependencies(
        files=tuple(_split(str(get.get(PYTHON_FILES, "")))),
        archives=tuple(archives),
        requirements=req_file or None,
        requirements_cache_dir=cache_dir or None,
        executable=str(get.get(PYTHON_EXECUTABLE, "")).strip() or None,
        cached_files=tuple(cached),
    )


def _existing(key: str, path: str) -> str:
    full = os.path.abspath(os.path.expanduser(str(path)))
    if not os.path.exists(full):
        raise ConfigurationError(f"{key}: {path!r} does not exist ({full})")
    if _FILES_SEP in full or _PARAM_SEP in full:
        raise ConfigurationError(
            f"{key}: {full!r} contains ',' or '#', which separate entries of {key}"
        )
    return full


def _append(config: Configuration, key: str, item: str) -> None:
    current = config.get_string(key, "")
    config.set_string(key, f"{current}{_FILES_SEP}{item}" if current else item)


def add_python_file(config: Configuration, file_path: str) -> None:
    _append(config, PYTHON_FILES, _existing(PYTHON_FILES, file_path))


def add_python_archive(config: Configuration, archive_path: str, target_dir: str | None) -> None:
    full = _existing(PYTHON_ARCHIVES, archive_path)
    if target_dir is not None:
        if not target_dir or os.path.isabs(target_dir) or ".." in target_dir.split("/"):
            raise ConfigurationError(
                f"{PYTHON_ARCHIVES}: target_dir must be a relative directory name, got "
                f"{target_dir!r} (archive {full})"
            )
        full = f"{full}{_PARAM_SEP}{target_dir}"
    _append(config, PYTHON_ARCHIVES, full)


def set_python_requirements(
    config: Configuration, requirements_file_path: str, requirements_cache_dir: str | None
) -> None:
    value = _existing(PYTHON_REQUIREMENTS, requirements_file_path)
    if requirements_cache_dir is not None:
        value += _PARAM_SEP + _existing(PYTHON_REQUIREMENTS, requirements_cache_dir)
    config.set_string(PYTHON_REQUIREMENTS, value)


def register_cached_file(
    config: Configuration, file_path: str, name: str, executable: bool
) -> None:
    if not name or "/" in name or name in (".", ".."):
        raise ConfigurationError(
            f"register_cached_file: name must be a plain file name, got {name!r} ({file_path})"
        )
    if any(c.name == name for c in read(config).cached_files):
        raise ConfigurationError(f"register_cached_file: name {name!r} is already registered")
    full = _existing(CACHED_FILES, file_path)
    _append(
        config, CACHED_FILES, f"{full}{_PARAM_SEP}{name}" + (f"{_PARAM_SEP}x" if executable else "")
    )
