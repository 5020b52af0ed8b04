"""The oracle job on a Spark standalone cluster of test hosts (run by test_spark_hosts.py).

``python oracle_job.py SETTINGS_JSON`` runs the oracle pipeline (docs/testing.md) at
parallelism 2 on the Spark master and driver address the settings name, prints
``REST <url> <job id>`` once the job runs (the test injects its faults through that), then
``ORACLE <counts>`` and exits 0 only if lost = duplicated = out-of-order = corrupt = 0.
"""

from __future__ import annotations

import json
import sys

from cluster_job import start_on_the_cluster  # this script's folder: run as a script

from undertow.testing.oracle import OracleResult, OracleSource, build_pipeline


def main() -> int:
    settings = json.loads(sys.argv[1])
    keys, per_key = settings.pop("keys"), settings.pop("records_per_key")
    source = OracleSource(keys, per_key, records_per_second=settings.pop("records_per_second"))
    client = start_on_the_cluster(
        settings, "oracle across hosts", lambda env: build_pipeline(env, source)
    )
    result = client.get_job_execution_result(timeout=400)
    oracle = OracleResult.from_job_result(result, keys, per_key)
    print(f"ORACLE {oracle}", flush=True)
    oracle.assert_exactly_once()
    return 0


if __name__ == "__main__":
    sys.exit(main())
