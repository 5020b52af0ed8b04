"""The one exception hierarchy of undertow.

Messages name the operator, subtask, checkpoint, file and offending value where they are known,
and chain the cause (``raise ... from err``).

The longer story: docs/design.md, "Module notes", under this module's name.
"""

from __future__ import annotations

from typing import Any


class UndertowError(Exception):
    """Base class of every error raised by undertow."""


class ConfigurationError(UndertowError, ValueError):
    """An option has an unknown key or a value of the wrong type or range."""


class GraphBuildError(UndertowError, ValueError):
    """The job graph cannot be built from what the program declared."""


class SerializationError(GraphBuildError):
    """A user function or record cannot be serialized."""


class BatchError(UndertowError, ValueError):
    """A batch stream met a batch it cannot take: a function returned something other than a
    ``pyarrow.RecordBatch`` or a batch of the wrong schema, or a key column holds nulls. The
    message names the operator and subtask."""


class KeyTypeError(UndertowError, TypeError):
    """A key (what a ``key_by`` selector returned) has no bytes that are the same in every
    process: an object of a class defined in the job script, or one that does not pickle. Key
    groups could not be assigned to it, so the job fails; the message names the key and its
    type. Also a key that does not fit the ``key_type`` declared in ``key_by`` (PyFlink's key
    serializer refuses it), named with its type and the declared type."""


class OutputTypeError(UndertowError, TypeError):
    """A function returned a value that does not fit the ``output_type`` declared for it
    (``map(f, output_type=Types.STRING())`` returning an ``int``), where PyFlink's serializer
    of that type would refuse it. The message names the operator, subtask, value, its type
    and the declared type."""


class KeySelectorError(UndertowError, RuntimeError):
    """A ``key_by`` key selector raised on a record (Flink's "Could not extract key"). The
    message names the selector, the record and the selector's own error, which is the cause;
    a job's failure names the key_by as the operator (:attr:`OPERATOR`), as PyFlink's names
    the operator that runs the selector, not the operator before the key_by."""

    #: PyFlink's name of the operator that runs a key_by's selector (``AddKey``).
    OPERATOR = "_stream_key_by_map_operator"


class RecordFieldError(UndertowError, LookupError):
    """A built-in aggregation (``sum``, ``min``, ``max``, ``min_by``, ``max_by``) met a record
    without the field it names. The message names the aggregation, the field and the record's
    shape; the task's failure names the operator."""


class StateError(UndertowError, RuntimeError):
    """State was used in a way its contract does not allow."""


class StateTypeError(StateError, TypeError):
    """A value written to keyed state does not fit the type its descriptor declared
    (``ValueStateDescriptor("n", Types.INT())`` updated with a ``str``), where PyFlink's
    serializer of that type would refuse it. The message names the state, the declared type,
    the value and its type; the task's failure names the operator and subtask."""


class RestoreError(StateError):
    """A checkpoint cannot be restored into this job: it holds state of operators the job does
    not have (see ``execution.state-recovery.ignore-unclaimed-state``), or an operator with
    state has another max parallelism than when it was taken. Restarting cannot fix it, so the
    job fails. ``reason`` says why; ``path``, when known, is the snapshot's (``str()`` is then
    ``cannot restore from PATH: REASON``); a refusal on a worker carries its
    ``remote_traceback`` (not in ``str()``: the reason is one line)."""

    def __init__(
        self, reason: str, *, path: str | None = None, remote_traceback: str | None = None
    ) -> None:
        super().__init__(reason)
        self.reason = reason
        self.path = path
        self.remote_traceback = remote_traceback

    def __str__(self) -> str:
        return f"cannot restore from {self.path}: {self.reason}" if self.path else self.reason

    def __reduce__(self) -> tuple[Any, ...]:  # keep path and traceback across pickling
        return (_restore_error, (self.reason, self.path, self.remote_traceback))

    def at(self, path: str) -> RestoreError:
        """This refusal, of the snapshot at ``path`` (its own path, if it has one, is kept)."""
        if self.path is not None:
            return self
        return RestoreError(self.reason, path=path, remote_traceback=self.remote_traceback)


def _restore_error(reason: str, path: str | None, remote_traceback: str | None) -> RestoreError:
    return RestoreError(reason, path=path, remote_traceback=remote_traceback)


class NetworkError(UndertowError, ConnectionError):
    """A connection failed or a peer sent something the protocol does not allow."""


class AuthenticationError(NetworkError):
    """A peer did not prove knowledge of the job secret."""


class DeploymentError(UndertowError, RuntimeError):
    """The job's workers cannot be started on the configured target (Spark will not start,
    too few task slots, Python versions differ)."""


class JobExecutionError(UndertowError, RuntimeError):
    """A job failed. ``operator`` and ``subtask`` say where; ``remote_traceback`` says how;
    ``exception_name`` is the class of the error raised on the worker (``ValueError``),
    when the failure came from one."""

    def __init__(
        self,
        message: str,
        *,
        operator: str | None = None,
        subtask: int | None = None,
        remote_traceback: str | None = None,
        exception_name: str | None = None,
    ) -> None:
        super().__init__(message)
        self.operator = operator
        self.subtask = subtask
        self.remote_traceback = remote_traceback
        self.exception_name = exception_name

    def __str__(self) -> str:
        text = super().__str__()
        if self.remote_traceback:
            text += "\n\nRemote traceback:\n" + self.remote_traceback.rstrip()
        return text


class JobCancelledError(UndertowError, RuntimeError):
    """The job was cancelled."""


def note_record(err: BaseException, record: object) -> None:
    """Adds ``on the record <repr>`` to ``err`` as a note (PEP 678: ``__notes__``, which
    tracebacks print on Python 3.11+), leaving its type and message as the user's function
    raised them. Called by an operator whose function raised on ``record``; a record whose
    ``repr`` raises is named by its type. Cost: only on failure."""
    note_context(err, f"on the record {shown_value(record)}")


def note_context(err: BaseException, note: str) -> None:
    """Adds ``note`` to ``err`` as :func:`note_record` does: where the user's function was
    when it raised (``in on_timer(1000) of an event-time timer of the key 'a'``, ``firing the
    window ...``). Cost: only on failure."""
    vars(err).setdefault("__notes__", []).append(note)


def shown_value(value: object) -> str:
    """``repr(value)`` cut to 200 characters, or its type if its ``repr`` raises."""
    try:
        return f"{value!r:.200}"
    except Exception:
        return f"<a {type(value).__name__} whose repr() raised>"


def describe(err: BaseException) -> str:
    """``Type: message``, then the notes of ``err`` (:func:`note_record`'s among them) in
    parentheses: one line for a failure report."""
    text = f"{type(err).__name__}: {err}"
    notes = vars(err).get("__notes__")
    if isinstance(notes, list):
        text += "".join(f" ({note})" for note in notes if isinstance(note, str))
    return text
