"""The layout of a job's checkpoints (:mod:`undertow.storage.layout`), without I/O: what a
directory name is, what a pointer names, which files are a checkpoint's or shared."""

from __future__ import annotations

import pytest

from undertow.storage.layout import (
    SnapshotDirectory,
    check_segment,
    checkpoint_dir_name,
    checkpoint_id_of,
    is_checkpoint_file,
    is_shared_file,
    is_snapshot_dir_name,
    savepoint_name,
    snapshot_directory,
)


@pytest.mark.parametrize(
    ("path", "found"),
    [
        ("/cp/job-1/chk-7", SnapshotDirectory("/cp/job-1/chk-7", "/cp", "job-1", 7, False)),
        ("/cp/job-1/chk-7/", SnapshotDirectory("/cp/job-1/chk-7", "/cp", "job-1", 7, False)),
        ("/cp/job-1/chk-0/_metadata",
         SnapshotDirectory("/cp/job-1/chk-0", "/cp", "job-1", 0, False)),
        ("/job-1/chk-3", SnapshotDirectory("/job-1/chk-3", "/", "job-1", 3, False)),
        ("/sp/savepoint-abcdef-12",
         SnapshotDirectory("/sp/savepoint-abcdef-12", "/sp", "savepoint-abcdef-12", 12, True)),
        ("/sp/savepoint-abcdef-12/_metadata",
         SnapshotDirectory("/sp/savepoint-abcdef-12", "/sp", "savepoint-abcdef-12", 12, True)),
        ("chk-7", None),  # no job directory
        ("/cp/job-1/chk-07", None),
        ("/cp/job-1/shared", None),
        ("/cp/job-1", None),
        ("/sp/savepoint-toolongid-1", None),
    ],
)  # fmt: skip
def test_a_pointer_names_a_checkpoint_or_savepoint_directory(
    path: str, found: SnapshotDirectory | None
) -> None:
    assert snapshot_directory(path) == found


def test_directory_names() -> None:
    assert checkpoint_dir_name(12) == "chk-12"
    assert checkpoint_id_of("chk-12") == 12
    assert checkpoint_id_of("chk-012") is None and checkpoint_id_of("chk-") is None
    assert savepoint_name("0123456789", 4) == "savepoint-012345-4"
    assert is_snapshot_dir_name(savepoint_name("0123456789", 4))
    assert is_snapshot_dir_name("chk-4") and not is_snapshot_dir_name("taskowned")


@pytest.mark.parametrize("checkpoint_id", [-1, True, 1.0, "3"])
def test_a_checkpoint_id_is_an_int_from_zero(checkpoint_id: object) -> None:
    with pytest.raises((TypeError, ValueError), match="checkpoint id"):
        checkpoint_dir_name(checkpoint_id)  # type: ignore[arg-type]


def test_which_directory_a_file_is_in() -> None:
    assert is_shared_file("/cp/job/shared/a.sst") and not is_shared_file("/cp/job/chk-1/a")
    assert is_checkpoint_file("/cp/job/chk-1/a") and not is_checkpoint_file("/cp/job/shared/a")
    assert not is_checkpoint_file("chk-1/a")  # no job directory


@pytest.mark.parametrize("value", ["", "a/b", "_metadata", ".hidden", "a\\b", "a\x00"])
def test_a_segment_is_one_plain_name(value: str) -> None:
    with pytest.raises(ValueError, match="file name"):
        check_segment("file name", value)
    check_segment("file name", "map-0.state")
