"""The Delta sink's global committer: one table commit per checkpoint with every writer's data
files, idempotent through a Delta app transaction.

Each commit carries a ``txn`` action ``(appId = committer id, version = checkpoint id)``
written atomically with its ``add`` actions (Delta's own mechanism for exactly-once streaming
writers; Spark Structured Streaming's ``txnAppId``/``txnVersion``). Before committing, the
committer reads the table's latest version for the committer id: if it is ``>=`` the
checkpoint id, the request was committed before (a replay after a failure) and nothing is
done (:func:`~undertow.connectors.global_committer.is_already_committed`). Concurrent
appends by other writers are retried by ``deltalake`` (``max_commit_retries``).

The table is created, empty, when the committer starts and finds no table at the URI; an
existing table must have the sink's columns (names and types) and partition columns.

Threading: the committer subtask's loop thread; commits block on storage I/O.
"""

from __future__ import annotations

from typing import Any

import fsspec  # type: ignore[import-untyped]
import pyarrow as pa
from deltalake import CommitProperties, DeltaTable, Transaction
from deltalake.transaction import AddAction, RemoveAction

from undertow.connectors.delta.committable import DeltaCommittable, DeltaSinkError
from undertow.connectors.global_committer import (
    CommitOutcome,
    GlobalCommitRequest,
    GlobalCommitter,
    GlobalCommitterContext,
    is_already_committed,
)

#: Keys of the commit's ``commitInfo`` naming who committed what.
CHECKPOINT_KEY = "undertow.checkpoint-id"
COMMITTER_KEY = "undertow.committer-id"


def ensure_table(
    table_uri: str,
    schema: pa.Schema,
    partition_columns: tuple[str, ...],
    storage_options: dict[str, str],
) -> DeltaTable:
    """Open the table at ``table_uri``, creating it (empty) if there is none; check that an
    existing table matches ``schema`` and ``partition_columns``."""
    try:
        if not DeltaTable.is_deltatable(table_uri, storage_options):
            return DeltaTable.create(table_uri, schema, mode="ignore",
                                     partition_by=list(partition_columns) or None,
                                     storage_options=storage_options)  # fmt: skip
        table = DeltaTable(table_uri, storage_options=storage_options)
    except Exception as err:
        raise DeltaSinkError(f"Delta table {table_uri}: cannot open or create it: {err}") from err
    existing = pa.schema(table.schema().to_arrow())
    have = {f.name: f.type for f in existing}
    wrong = [f"{f.name} ({f.type}, table has {have.get(f.name, 'no such column')})"
             for f in schema if have.get(f.name) != f.type]  # fmt: skip
    if wrong:
        raise DeltaSinkError(
            f"Delta table {table_uri}: the sink's columns do not match the table's: "
            f"{', '.join(wrong)}"
        )
    if tuple(table.metadata().partition_columns) != partition_columns:
        raise DeltaSinkError(
            f"Delta table {table_uri} is partitioned by "
            f"{list(table.metadata().partition_columns)}, the sink by {list(partition_columns)}"
        )
    return table


class DeltaGlobalCommitter(GlobalCommitter):
    def __init__(
        self,
        context: GlobalCommitterContext,
        table_uri: str,
        schema: pa.Schema,
        partition_columns: tuple[str, ...],
        storage_options: dict[str, str],
        fsspec_options: dict[str, Any],
    ) -> None:
        self.context = context
        self.table_uri = table_uri.rstrip("/")
        self.partition_columns = partition_columns
        self.table = ensure_table(self.table_uri, schema, partition_columns, storage_options)
        self.fs, self.root = fsspec.core.url_to_fs(self.table_uri, **fsspec_options)

    def _where(self, request: GlobalCommitRequest) -> str:
        return f"Delta table {self.table_uri}, {request.describe()}"

    def last_committed(self, committer_id: str) -> int | None:
        """The highest checkpoint id committed under ``committer_id`` (``None``: none)."""
        self.table.update_incremental()
        return self.table.transaction_version(committer_id)

    def commit(self, request: GlobalCommitRequest) -> CommitOutcome:
        if is_already_committed(self.last_committed(request.committer_id),
                                request.checkpoint_id):  # fmt: skip
            return CommitOutcome.ALREADY_COMMITTED
        actions: list[AddAction | RemoveAction] = []
        for c in request.committables:
            if not isinstance(c, DeltaCommittable):
                raise DeltaSinkError(f"{self._where(request)}: not a Delta committable: {c!r}")
            if not self.fs.exists(f"{self.root}/{c.path}"):
                raise DeltaSinkError(
                    f"{self._where(request)}: data file {c.path} (written by subtask "
                    f"{c.subtask}) is missing; it was deleted before its checkpoint was committed"
                )
            actions.append(AddAction(c.path, c.size, dict(c.partition_values),
                                     c.modification_time, True, c.stats_json()))  # fmt: skip
        properties = CommitProperties(
            custom_metadata={CHECKPOINT_KEY: request.checkpoint_id,
                             COMMITTER_KEY: request.committer_id},
            app_transactions=[Transaction(request.committer_id, request.checkpoint_id)],
        )  # fmt: skip
        try:
            self.table.create_write_transaction(
                actions, mode="append", schema=self.table.schema(),
                partition_by=list(self.partition_columns) or None,
                commit_properties=properties,
            )  # fmt: skip
        except Exception as err:
            raise DeltaSinkError(
                f"{self._where(request)}: commit of {len(actions)} files failed: {err}"
            ) from err
        return CommitOutcome.COMMITTED
