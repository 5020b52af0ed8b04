"""CLAIM reuses the claimed incremental checkpoint's files (FLIP-193, as in Flink; issue 15).

A first job on incremental RocksDB leaves a retained checkpoint (its SST files in its
``shared/``). A second job restores it in CLAIM at the same parallelism, with ``map`` failing
after its third checkpoint:

* the claimed files are adopted into the second job's ``shared/`` under their names (hard
  links), and the first checkpoint after the restore uploads less than the whole state (REST:
  ``checkpointed_size`` < ``state_size``): it references restored SST files instead of
  uploading everything again (before, it was FULL);
* the claimed checkpoint's directory and its original ``shared/`` files are deleted once
  subsumed, while the job runs;
* the failover restores from a checkpoint that references adopted files: the oracle counts no
  loss and no duplicate over both jobs, with both restores evidenced;
* once the job finished, no shared file is left in either job's directory.
"""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from undertow.datastream import JobStatus
from undertow.testing.oracle import FailingMap, OracleResult, OracleSource, build_pipeline

from .conftest import EnvFactory
from .restore_evidence import RestWatcher, assert_restores, evidence
from .test_incremental_checkpoints import (
    KEYS,
    RECORDS_PER_KEY,
    THROTTLED,
    TIMEOUT_S,
    _config,
    _incremental,
    _retained_incremental_checkpoint,
    _wait_for,
)


def scenario_claim_reuses(
    make_env: EnvFactory, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    snapshot = _retained_incremental_checkpoint(make_env, tmp_path)
    old_shared = snapshot.parent / "shared"
    claimed = {p.name for p in old_shared.iterdir()}
    assert claimed, "the retained checkpoint references shared files"
    capsys.readouterr()

    failing = FailingMap(fail_after_checkpoints=[3])
    env = make_env(parallelism=2, config=_config(tmp_path, failing.scheduled_failures, **{
        "execution.state-recovery.path": str(snapshot),
        "execution.state-recovery.claim-mode": "CLAIM",
        "execution.checkpointing.num-retained": "1",
    }))  # fmt: skip
    _incremental(env, tmp_path)
    source = OracleSource(KEYS, RECORDS_PER_KEY, records_per_second=THROTTLED)
    build_pipeline(env, source, failing_map=failing, evidence_dir=tmp_path / "evidence")
    client = env.execute_async("resumed in CLAIM")
    rest = RestWatcher(client)
    new_shared = tmp_path / "checkpoints" / client.get_job_id() / "shared"
    try:
        adopted: set[str] = set()

        def all_adopted() -> bool:  # links are made before the first attempt starts
            if new_shared.is_dir():
                adopted.update(p.name for p in new_shared.iterdir())
            return (
                claimed <= adopted or client.get_job_status().result().is_globally_terminal_state()
            )

        _wait_for(all_adopted, "the adopted files")
        assert claimed <= adopted, "every claimed file is adopted under its name"
        _wait_for(lambda: (not snapshot.exists() and not any(old_shared.iterdir()))
                  or client.get_job_status().result() is JobStatus.FINISHED,
                  "the claimed snapshot's deletion")  # fmt: skip
        assert client.get_job_status().result() is not JobStatus.FINISHED, "deleted by subsumption"
        assert not snapshot.exists() and list(old_shared.iterdir()) == []
        result = client.get_job_execution_result(timeout=TIMEOUT_S)
    finally:
        rest_ids = rest.stop()
        client.cancel()
    sizes = rest.completed_sizes

    first = min(cid for cid in sizes if cid > int(snapshot.name.rsplit("-", 1)[1]))
    checkpointed, state = sizes[first]
    # the restored RocksDB files were carried over: the next checkpoint reuses them
    evidence(checkpointed < state,
             f"checkpoint {first}, the first after the CLAIM restore, uploaded {checkpointed} "
             f"of {state} bytes: it must reuse the claimed SST files, not be full")  # fmt: skip
    oracle = OracleResult.from_job_result(result, KEYS, RECORDS_PER_KEY, tmp_path / "evidence")
    ids = assert_restores(capsys.readouterr().err, rest_ids, restores=2)
    evidence(ids[0] == int(snapshot.name.rsplit("-", 1)[1]) and ids[1] > ids[0], f"{ids}")
    oracle.assert_restored()
    oracle.assert_exactly_once()
    assert oracle.restarts == 1, oracle
    deadline = time.monotonic() + 5  # the JobMaster deletes them as it shuts down
    while any(new_shared.iterdir()) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert list(new_shared.iterdir()) == [], "no shared file is left once the job finished"


@pytest.mark.restores
@pytest.mark.parametrize("target", ["local"])
def test_claim_reuses_the_claimed_files_and_deletes_them_once_unused(
    make_env: EnvFactory, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    scenario_claim_reuses(make_env, tmp_path, capsys)
