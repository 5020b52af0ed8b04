"""Who may change a job over REST, and where its savepoints may go (ARCHITECTURE §7).

Bound to loopback, the REST API trusts the machine; bound anywhere else (or with
``rest.token`` / ``rest.token-file`` set), every request that changes the job must carry the
job's token (``Authorization: Bearer``, compared in constant time; 401 without, 403 wrong),
and a savepoint's target directory must lie inside ``execution.checkpointing.savepoint-dir``
unless ``rest.savepoint.allow-any-directory`` is true.

Pure code: :func:`resolve_access` reads the REST settings (and the token file) once when the
endpoint starts; :meth:`RestAccess.token_problem` and :meth:`RestAccess.directory_problem`
decide per request on the JobMaster's loop and never raise.

The longer story: docs/design.md, "Module notes", under this module's name.
"""

from __future__ import annotations

import hmac
import ipaddress
import os
import posixpath
import secrets
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlsplit

from undertow.core.config import Options
from undertow.core.errors import ConfigurationError
from undertow.runtime.master.settings import RestSettings

#: The HTTP header and scheme the token travels in.
AUTHORIZATION = "authorization"
SCHEME = "Bearer"
#: Where command-line tools (``undertow stop``, ``cancel``, ``savepoint``) read the token.
TOKEN_ENV = "UNDERTOW_REST_TOKEN"


@dataclass(frozen=True, slots=True)
class Refusal:
    """A request refused before it reached the job: HTTP status and the error message."""

    status: int
    message: str


@dataclass(frozen=True, slots=True)
class RestAccess:
    """The access rules of one REST endpoint (immutable for the endpoint's life).

    ``token`` None: no token is required (loopback, none configured). ``generated``: the token
    was made for this job and must be shown once to the person who started it.
    ``savepoint_root``: the only directory tree savepoints may go to while a token is required
    ('' = none configured: then every explicit target is refused); None = any directory."""

    token: str | None
    generated: bool = False
    savepoint_root: str | None = None

    def console_note(self) -> str:
        """What the console line announcing the endpoint adds: the token if it was made for
        this job (shown once, to whoever started it), else whether one is needed."""
        if self.token is None:
            return ""
        if self.generated:
            return (
                f" (requests that change the job need 'Authorization: {SCHEME} "
                f"{self.token}'; command-line tools read it from ${TOKEN_ENV})"
            )
        return " (requests that change the job need the token of rest.token / rest.token-file)"

    def token_problem(self, headers: dict[str, str]) -> Refusal | None:
        """None if the request (its lower-cased headers) may change the job."""
        if self.token is None:
            return None
        scheme, _, given = headers.get(AUTHORIZATION, "").partition(" ")
        if scheme.lower() != SCHEME.lower() or not given.strip():
            return Refusal(
                401,
                "this request changes the job and needs the job's REST token: "
                f"send 'Authorization: {SCHEME} <token>' (the token was printed "
                "where the job started, or is rest.token / rest.token-file)",
            )
        if not hmac.compare_digest(given.strip().encode("utf-8"), self.token.encode("utf-8")):
            return Refusal(403, "the REST token does not match this job's")
        return None

    def directory_problem(self, directory: str | None) -> Refusal | None:
        """None if a savepoint may be written to ``directory`` (None: the job's configured
        savepoint directory, always allowed)."""
        if directory is None or self.savepoint_root is None:
            return None
        if not self.savepoint_root:
            return Refusal(
                403,
                f"savepoint target {directory!r} refused: while the REST API "
                "needs a token, savepoints go only below "
                "execution.checkpointing.savepoint-dir, which is not set; set it, "
                "or rest.savepoint.allow-any-directory: true",
            )
        if not within(directory, self.savepoint_root):
            return Refusal(
                403,
                f"savepoint target {directory!r} is outside the job's savepoint "
                f"directory {self.savepoint_root!r} "
                "(execution.checkpointing.savepoint-dir); set "
                "rest.savepoint.allow-any-directory: true to allow others",
            )
        return None


def is_loopback(host: str) -> bool:
    """Whether a bind address only accepts connections from this machine."""
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def within(directory: str, root: str) -> bool:
    """Whether ``directory`` names ``root`` or a directory below it: same scheme and authority
    (``file`` for plain paths), and a normalised path (``..`` resolved, local symlinks
    followed) that starts with the root's."""
    a, b = _split(directory), _split(root)
    if a[:2] != b[:2]:
        return False
    path, base = a[2], b[2]
    return path == base or path.startswith(base.rstrip("/") + "/")


def _split(location: str) -> tuple[str, str, str]:
    parts = urlsplit(location)
    if parts.scheme in ("", "file") and not parts.netloc:
        local = parts.path if parts.scheme else location
        return "file", "", os.path.realpath(os.path.abspath(local))
    return parts.scheme, parts.netloc, posixpath.normpath("/" + parts.path.lstrip("/"))


def resolve_access(settings: RestSettings) -> RestAccess:
    """The access rules for an endpoint bound to ``settings.bind_address``. Raises
    :class:`ConfigurationError` naming the option when the token file cannot be read or made,
    or holds no token."""
    token = settings.token
    generated = False
    token_file = settings.token_file
    host = settings.bind_address
    if not token and token_file:
        token = _read_or_create(Path(token_file).expanduser())
    if not token:
        if is_loopback(host):
            return RestAccess(None)
        token, generated = secrets.token_urlsafe(32), True
    if settings.savepoint_any_directory:
        return RestAccess(token, generated, None)
    return RestAccess(token, generated, settings.savepoint_dir)


def _read_or_create(path: Path) -> str:
    option = Options.REST_TOKEN_FILE.key
    try:
        if not path.exists():
            path.parent.mkdir(parents=True, exist_ok=True)
            descriptor = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
            with os.fdopen(descriptor, "w") as out:
                out.write(secrets.token_urlsafe(32) + "\n")
        token = path.read_text("utf-8").strip()
    except OSError as err:
        raise ConfigurationError(f"option '{option}': cannot read or create {path}: "
                                 f"{err.strerror or err}") from err  # fmt: skip
    if not token or any(c.isspace() for c in token):
        raise ConfigurationError(f"option '{option}': {path} must hold one token (no spaces)")
    return token
