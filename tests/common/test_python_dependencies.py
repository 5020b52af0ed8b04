"""PyFlink's python.* keys: how the environment records dependencies, and what it refuses."""

from __future__ import annotations

from pathlib import Path

import pytest

from undertow.common import Configuration
from undertow.common import python_dependencies as deps
from undertow.core.errors import ConfigurationError
from undertow.datastream import StreamExecutionEnvironment


def test_keys_are_pyflinks_and_read_back(tmp_path: Path) -> None:
    for name in ("a.py", "b.zip", "req.txt", "data.tar.gz", "words.txt"):
        (tmp_path / name).write_text("x")
    (tmp_path / "cache").mkdir()
    env = StreamExecutionEnvironment()
    env.add_python_file(str(tmp_path / "a.py"))
    env.add_python_file(str(tmp_path / "b.zip"))
    env.add_python_archive(str(tmp_path / "data.tar.gz"), "data")
    env.add_python_archive(str(tmp_path / "b.zip"))
    env.set_python_requirements(str(tmp_path / "req.txt"), str(tmp_path / "cache"))
    env.set_python_executable("/usr/bin/python3")
    env.register_cached_file(str(tmp_path / "words.txt"), "words", executable=True)
    settings = env.get_configuration().to_dict()
    assert settings["python.files"] == f"{tmp_path}/a.py,{tmp_path}/b.zip"
    assert settings["python.archives"] == f"{tmp_path}/data.tar.gz#data,{tmp_path}/b.zip"
    assert settings["python.requirements"] == f"{tmp_path}/req.txt#{tmp_path}/cache"
    assert settings["python.executable"] == "/usr/bin/python3"
    read = deps.read(env.get_configuration())
    assert [a.target_dir for a in read.archives] == ["data", "b.zip"]
    assert read.requirements_cache_dir == str(tmp_path / "cache")
    assert read.cached_files == (deps.CachedFile(str(tmp_path / "words.txt"), "words", True),)


def test_missing_paths_and_bad_names_are_refused_when_added(tmp_path: Path) -> None:
    env = StreamExecutionEnvironment()
    with pytest.raises(ConfigurationError, match=r"python\.files: 'nope\.py' does not exist"):
        env.add_python_file("nope.py")
    (tmp_path / "a.zip").write_text("x")
    with pytest.raises(ConfigurationError, match="target_dir must be a relative directory"):
        env.add_python_archive(str(tmp_path / "a.zip"), "../up")
    with pytest.raises(ConfigurationError, match="name must be a plain file name"):
        env.register_cached_file(str(tmp_path / "a.zip"), "dir/name")
    env.register_cached_file(str(tmp_path / "a.zip"), "once")
    with pytest.raises(ConfigurationError, match="'once' is already registered"):
        env.register_cached_file(str(tmp_path / "a.zip"), "once")
    assert deps.read(Configuration()).is_empty()
