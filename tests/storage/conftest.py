"""Backends the storage conformance suite runs against: local directory, memory://, s3 (moto).

The s3 backend needs ``moto[server]`` and ``s3fs`` (the ``test`` extra); without them its
cases are skipped. The moto server binds to 127.0.0.1 on a free port, once per session.
"""

from __future__ import annotations

import logging
import posixpath
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import fsspec  # type: ignore[import-untyped]
import pytest

from undertow.storage import CheckpointStorage

BACKENDS = ["local", "memory", "s3"]
_BUCKET = "undertow-test"


@dataclass
class Backend:
    """A fresh root on one kind of file system, and raw access to it for tampering."""

    kind: str
    root_uri: str
    options: dict[str, Any] = field(default_factory=dict)

    def storage(self, job_id: str = "job-1") -> CheckpointStorage:
        return CheckpointStorage(self.root_uri, job_id, storage_options=self.options)

    @property
    def fs(self) -> Any:
        return fsspec.core.url_to_fs(self.root_uri, **self.options)[0]

    def path(self, relative: str) -> str:
        """The file system path of ``relative`` (from the root)."""
        root = fsspec.core.url_to_fs(self.root_uri, **self.options)[1].rstrip("/")
        return f"{root}/{relative}"

    def read(self, relative: str) -> bytes:
        return bytes(self.fs.cat_file(self.path(relative)))

    def write(self, relative: str, data: bytes) -> None:
        path = self.path(relative)
        if self.kind == "local":
            self.fs.makedirs(posixpath.dirname(path), exist_ok=True)
        self.fs.pipe_file(path, data)

    def delete(self, relative: str) -> None:
        self.fs.rm_file(self.path(relative))

    def exists(self, relative: str) -> bool:
        self.fs.invalidate_cache()
        return bool(self.fs.exists(self.path(relative)))


@pytest.fixture(scope="session")
def s3_options() -> Iterator[dict[str, Any]]:
    pytest.importorskip("s3fs")
    server_module = pytest.importorskip("moto.server")
    boto3 = pytest.importorskip("boto3")
    logging.getLogger("werkzeug").setLevel(logging.ERROR)
    server = server_module.ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    server.start()
    try:
        host, port = server.get_host_and_port()
        endpoint = f"http://{host}:{port}"
        credentials = {"aws_access_key_id": "testing", "aws_secret_access_key": "testing"}
        boto3.client(
            "s3", endpoint_url=endpoint, region_name="us-east-1", **credentials
        ).create_bucket(Bucket=_BUCKET)
        yield {
            "key": "testing",
            "secret": "testing",
            "client_kwargs": {"endpoint_url": endpoint, "region_name": "us-east-1"},
        }
    finally:
        server.stop()


@pytest.fixture(params=BACKENDS)
def backend(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Backend]:
    kind = request.param
    if kind == "local":
        yield Backend(kind, str(tmp_path / "checkpoints"))
    elif kind == "memory":
        root = f"memory://undertow-test-{uuid.uuid4().hex}"
        yield Backend(kind, root)
        fs = fsspec.filesystem("memory")
        if fs.exists(root):
            fs.rm(root, recursive=True)
    else:
        options = request.getfixturevalue("s3_options")
        yield Backend(kind, f"s3://{_BUCKET}/{uuid.uuid4().hex}", options)
