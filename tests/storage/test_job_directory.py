"""A job's directory on a file system (:mod:`undertow.storage.job_directory`): its root and
job URIs, normalized per file system; a job id is one path segment."""

from __future__ import annotations

from pathlib import Path

import pytest

from undertow.core.errors import ConfigurationError
from undertow.storage.job_directory import JobDirectory


def test_a_local_root_is_a_plain_path_and_others_are_urls(tmp_path: Path) -> None:
    local = JobDirectory(f"file://{tmp_path}/", "job-1")
    assert (local.root_uri, local.job_uri) == (str(tmp_path), str(tmp_path / "job-1"))
    memory = JobDirectory("memory://undertow-test-root", "job-1")
    assert memory.root_uri == "memory:///undertow-test-root"
    assert memory.job_uri == "memory:///undertow-test-root/job-1"


@pytest.mark.parametrize("job_id", ["", "a/b", "_job", ".job"])
def test_a_job_id_is_one_path_segment(tmp_path: Path, job_id: str) -> None:
    with pytest.raises(ValueError, match="job id"):
        JobDirectory(str(tmp_path), job_id)


def test_create_makes_the_jobs_directory_or_names_it(tmp_path: Path) -> None:
    directory = JobDirectory(str(tmp_path / "root"), "job-1")
    directory.create("a.key")
    directory.create("a.key")  # already there: nothing to do
    assert (tmp_path / "root" / "job-1").is_dir()
    (tmp_path / "file").write_text("not a directory")
    with pytest.raises(ConfigurationError, match=r"a\.key: cannot create the job's directory .*"):
        JobDirectory(str(tmp_path / "file"), "job-2").create("a.key")
