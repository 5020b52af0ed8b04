"""The version 1 ``_metadata`` body (:mod:`undertow.runtime.checkpoint.metadata_json`), still
read so that a job upgrades from a checkpoint an earlier undertow wrote."""

from __future__ import annotations

import hashlib
import json

import pytest

from undertow.runtime.checkpoint.metadata_json import metadata_from_bytes, metadata_to_bytes
from undertow.runtime.checkpoint.metadata_model import CheckpointMetadata, VertexMetadata
from undertow.storage import FileHandle

STATE = FileHandle("v1-0", 5, hashlib.sha256(b"v1-0").hexdigest())
META = CheckpointMetadata(
    job_id="j" * 32,
    checkpoint_id=3,
    trigger_timestamp=10,
    completion_timestamp=20,
    is_savepoint=True,
    vertices=(VertexMetadata(1, "source", ("src",), 1, 128, subtasks={0: STATE}),),
    coordinators={1: None},
    properties={"savepoint_format": "CANONICAL"},
)


def test_a_version_1_body_reads_back_as_it_was_written() -> None:
    body = metadata_to_bytes(META)
    assert body == body.decode("ascii").encode("ascii")  # ASCII JSON, sorted keys
    assert list(json.loads(body)) == sorted(json.loads(body))
    assert metadata_from_bytes(body) == META


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (lambda d: d.update(checkpoint_id=True), "checkpoint_id must be an integer"),
        (lambda d: d["vertices"][0].update(subtasks={"01": d["vertices"][0]["subtasks"]["0"]}),
         "subtask index must be a decimal integer"),
        (lambda d: d.update(vertices={}), "vertices must be a JSON array"),
    ],
)  # fmt: skip
def test_a_malformed_body_names_the_field(change: object, message: str) -> None:
    document = json.loads(metadata_to_bytes(META))
    change(document)  # type: ignore[operator]
    with pytest.raises((TypeError, ValueError), match=message):
        metadata_from_bytes(json.dumps(document).encode("ascii"))


def test_a_non_finite_number_is_refused() -> None:
    with pytest.raises(ValueError, match="non-finite number NaN"):
        metadata_from_bytes(b'{"checkpoint_id": NaN}')
