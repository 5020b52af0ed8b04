"""The options of the JobMaster's REST API and of metrics: port, bind address, the token
that guards requests changing the job, savepoint directories over REST, the checkpoint
history and the metrics report interval. Read into ``RestSettings`` by
``runtime/master/settings.py``. Part of :class:`undertow.core.config.Options`.
"""

from __future__ import annotations

from undertow.core.config_option import (
    bool_option,
    duration_option,
    int_option,
    positive,
    str_option,
)


class RestOptions:
    """REST API and metrics options."""

    REST_PORT = int_option(
        "rest.port",
        8081,
        "port of the JobMaster's REST API; 0 picks a free port, -1 disables the server. Unset "
        "on the local targets (local, local-threads) it means 0, as in Flink's MiniCluster",
        check=lambda port: None if -1 <= port <= 65535 else "must be in [-1, 65535]",
    )
    REST_BIND_ADDRESS = str_option(
        "rest.bind-address",
        "127.0.0.1",
        "address the REST API listens on; off loopback, requests that change the job need the "
        "REST token (rest.token)",
    )
    REST_TOKEN = str_option(
        "rest.token",
        "",
        "token that requests changing the job (stop, savepoint, cancel) must send as "
        "'Authorization: Bearer <token>'; empty: rest.token-file, else a token made per job and "
        "printed where it starts when rest.bind-address is off loopback (none needed on loopback)",
    )
    REST_TOKEN_FILE = str_option(
        "rest.token-file",
        "",
        "local file holding the REST token, created 0600 with a fresh token when missing",
    )
    REST_SAVEPOINT_ANY_DIRECTORY = bool_option(
        "rest.savepoint.allow-any-directory",
        False,
        "while a REST token is required, savepoints requested over REST may go outside "
        "execution.checkpointing.savepoint-dir",
    )
    CHECKPOINTS_HISTORY = int_option(
        "web.checkpoints.history", 10, "checkpoints the REST API remembers", check=positive
    )
    METRICS_REPORT_INTERVAL = duration_option(
        "undertow.metrics.report-interval",
        1000,
        "how often workers send task metrics (records, busy / backpressured / idle time) to "
        "the JobMaster",
        check=positive,
    )
