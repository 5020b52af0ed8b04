"""The web dashboard's files, shipped inside the package (``undertow/web/static``).

The JobMaster's REST API serves them at ``/`` (see
:mod:`undertow.runtime.master.rest.ui_routes`); the page is plain JavaScript that reads the
REST JSON of the same origin, so nothing is fetched from elsewhere (no CDN). :func:`asset` only
serves files directly inside ``static`` (no subdirectories, no ``..``). Read-only; any thread.
"""

from __future__ import annotations

import re
from importlib import resources

_NAME = re.compile(r"[A-Za-z0-9_-][A-Za-z0-9_.-]*")
_TYPES = {
    ".html": "text/html; charset=UTF-8",
    ".js": "text/javascript; charset=UTF-8",
    ".css": "text/css; charset=UTF-8",
    ".svg": "image/svg+xml",
}


def asset(name: str) -> tuple[bytes, str] | None:
    """The bytes and content type of the static file ``name``, or None if there is none."""
    suffix = name[name.rfind(".") :] if "." in name else ""
    if not _NAME.fullmatch(name) or ".." in name or suffix not in _TYPES:
        return None
    path = resources.files(__name__).joinpath("static").joinpath(name)
    if not path.is_file():
        return None
    return path.read_bytes(), _TYPES[suffix]
