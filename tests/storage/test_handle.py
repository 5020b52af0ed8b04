"""File handles: a handle can only be made for a safe path inside the job directory, with a
size and a sha256 that can verify the file."""

from __future__ import annotations

import hashlib

import pytest

from undertow.storage.handle import FileHandle, check_relative_path

SHA = hashlib.sha256(b"state").hexdigest()


def test_of_records_the_size_and_the_sha256_of_the_data() -> None:
    handle = FileHandle.of("chk-7/map-0.state", b"state")
    assert handle == FileHandle("chk-7/map-0.state", 5, SHA)


@pytest.mark.parametrize(
    "path",
    ["", "/etc/passwd", "chk-1\\x.state", "c:/x", "chk-1//x", "./x", "chk-1/../../x", "a\x00b"],
)
def test_a_path_outside_the_job_directory_is_refused_naming_it(path: str) -> None:
    with pytest.raises(ValueError, match="file path") as caught:
        FileHandle(path, 1, SHA)
    assert repr(path) in str(caught.value) or not path
    with pytest.raises(ValueError):
        check_relative_path(path)


@pytest.mark.parametrize("size", [-1, True, 1.5, "3"])
def test_the_size_is_a_non_negative_int(size: object) -> None:
    with pytest.raises(ValueError, match=f"non-negative int, got {size!r}"):
        FileHandle("chk-1/x.state", size, SHA)  # type: ignore[arg-type]


@pytest.mark.parametrize("sha256", ["", SHA.upper(), SHA[:-1], SHA + "0", None])
def test_the_sha256_is_64_lowercase_hex_digits(sha256: object) -> None:
    with pytest.raises(ValueError, match="64 lowercase hex digits"):
        FileHandle("chk-1/x.state", 1, sha256)  # type: ignore[arg-type]


def test_shared_and_nested_paths_are_accepted() -> None:
    for path in ("shared/abc.sst", "chk-3/op/sub-0.state", "savepoint-ab12cd-4/_metadata"):
        check_relative_path(path)
        assert FileHandle(path, 0, SHA).path == path
