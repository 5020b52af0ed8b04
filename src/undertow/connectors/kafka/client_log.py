"""Where librdkafka's own log lines go: Python logging, never the process's stderr.

librdkafka writes its log lines (a broker that went away; "Purging 1 unserved events from
background queue" when an admin client is dropped) to stderr unless its client is given a
``logger``; they then mix with a job's printed output (seen on the spark target, 2026-12-03:
two such lines in the driver's console after every run with an exactly-once Kafka sink).
Every client the Kafka source and sink create takes :data:`CLIENT_LOG` through
:func:`logged`. confluent-kafka hands a client's lines to the logger when the client is
served (``poll``, ``consume``, ``flush``); a line of a client never served again, such as
that purge line at its destruction, is dropped. Any thread; no state.
"""

from __future__ import annotations

import logging
from typing import Any

#: The logger of every librdkafka client of undertow's (level as librdkafka's syslog levels
#: map to Python's: 7 debug, 6 and 5 info, 4 warning, 3 and below error).
CLIENT_LOG = logging.getLogger("undertow.connectors.kafka.librdkafka")


def logged(config: dict[str, Any]) -> dict[str, Any]:
    """``config`` with :data:`CLIENT_LOG` as its ``logger`` (a copy; the caller's unchanged)."""
    return {**config, "logger": CLIENT_LOG}
