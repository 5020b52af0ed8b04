"""An S3 store for tests: moto's server on loopback, which a test may take down and bring back.

``with MotoS3("bucket") as s3:`` starts the server on a free port of 127.0.0.1 and creates the
bucket. ``s3.environment`` holds the ``AWS_*`` variables through which a job reaches it as a
user's job reaches S3 (fsspec's ``s3://`` through botocore, ``AWS_ENDPOINT_URL`` naming the
server); ``s3.storage_options`` are the same settings for an fsspec call. ``s3.down()`` stops
the server: requests then fail to connect (after botocore's retries, about 7 s each);
``s3.up()`` starts it again on the same port, with what it held (moto keeps its state in
this process). Requires the ``test`` extra (``moto[server]``, ``s3fs``).

Threading: the server runs on its own thread; ``down``/``up`` from one thread at a time.
"""

from __future__ import annotations

import logging
from types import TracebackType
from typing import Any

_CREDENTIALS = {"AWS_ACCESS_KEY_ID": "testing", "AWS_SECRET_ACCESS_KEY": "testing"}
_REGION = "us-east-1"


class MotoS3:
    """A moto S3 server holding ``bucket`` (see the module doc)."""

    def __init__(self, bucket: str) -> None:
        self.bucket = bucket
        self.port = 0
        self._server: Any = None

    @property
    def endpoint(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def environment(self) -> dict[str, str]:
        return {**_CREDENTIALS, "AWS_ENDPOINT_URL": self.endpoint, "AWS_DEFAULT_REGION": _REGION}

    @property
    def storage_options(self) -> dict[str, Any]:
        return {
            "key": _CREDENTIALS["AWS_ACCESS_KEY_ID"],
            "secret": _CREDENTIALS["AWS_SECRET_ACCESS_KEY"],
            "client_kwargs": {"endpoint_url": self.endpoint, "region_name": _REGION},
        }

    @property
    def is_up(self) -> bool:
        return self._server is not None

    def up(self) -> None:
        """Start the server (on the port it had, after the first start)."""
        if self._server is not None:
            return
        from moto.server import ThreadedMotoServer

        logging.getLogger("werkzeug").setLevel(logging.ERROR)
        server = ThreadedMotoServer(ip_address="127.0.0.1", port=self.port, verbose=False)
        server.start()
        self.port = server.get_host_and_port()[1]
        self._server = server

    def down(self) -> None:
        """Stop the server: the store is unreachable until :meth:`up`."""
        server, self._server = self._server, None
        if server is not None:
            server.stop()

    def __enter__(self) -> MotoS3:
        self.up()
        import fsspec  # type: ignore[import-untyped]

        options = {**self.storage_options, "client_kwargs": {"endpoint_url": self.endpoint}}
        fs = fsspec.filesystem("s3", skip_instance_cache=True, **options)
        if not fs.exists(self.bucket):  # moto keeps buckets across servers of one process
            fs.mkdir(self.bucket)
        return self

    def __exit__(self, kind: type[BaseException] | None, error: BaseException | None,
                 trace: TracebackType | None) -> None:  # fmt: skip
        self.down()
