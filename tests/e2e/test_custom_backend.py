"""A third keyed state backend, named in ``state.backend.type``, checkpoints and restores
through the runtime unchanged (issue 27, step 4: backends as capabilities).

The test-only :mod:`.dict_backend` brings its own native snapshot format; the exactly-once
oracle runs on it with a failure scheduled in ``map``, and the backend's own counters show
that the task uploaded its native snapshots and the worker downloaded them for the restore.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from undertow.testing.oracle import FailingMap, OracleResult, OracleSource, build_pipeline

from . import dict_backend
from .conftest import EnvFactory
from .restore_evidence import RestWatcher, assert_restores

TIMEOUT_S = 120.0


@pytest.mark.restores
@pytest.mark.parametrize("target", ["local-threads"])
def test_a_third_backend_checkpoints_and_restores_natively(
    make_env: EnvFactory, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    dict_backend.UPLOADS.clear()
    dict_backend.RESTORES.clear()
    failing = FailingMap(fail_after_checkpoints=[2])
    env = make_env(parallelism=2, config={
        "state.backend.type": "e2e.dict_backend.dict_backend",
        "execution.checkpointing.interval": "100 ms",
        "execution.checkpointing.dir": str(tmp_path / "checkpoints"),
        "restart-strategy.type": "fixed-delay",
        "restart-strategy.fixed-delay.attempts": "1",
        "restart-strategy.fixed-delay.delay": "0 ms",
        "rest.port": "0",
    })  # fmt: skip
    assert str(env.get_state_backend()) == "StateBackend(e2e.dict_backend.dict_backend)"
    source = OracleSource(10, 1000, records_per_second=4_000.0)
    evidence = tmp_path / "evidence"
    build_pipeline(env, source, failing_map=failing, evidence_dir=evidence)
    client = env.execute_async("oracle, a third backend")
    rest = RestWatcher(client)
    try:
        result = client.get_job_execution_result(timeout=TIMEOUT_S)
    finally:
        rest_ids = rest.stop()
        client.cancel()
    assert dict_backend.UPLOADS, "the task uploaded the backend's native snapshots"
    oracle = OracleResult.from_job_result(result, source.keys, source.records_per_key, evidence)
    assert_restores(capsys.readouterr().err, rest_ids, restores=1)
    oracle.assert_restored()
    oracle.assert_exactly_once()
    assert oracle.restarts == 1, oracle
    restored = [r for r in dict_backend.RESTORES if r[2] > 0]
    assert restored, f"the worker downloaded and the backend restored them: {dict_backend.RESTORES}"
