"""``undertow run -s DIR [--claim-mode claim] [-n]``: a job script resumes from a checkpoint.

Each run is ``undertow run -t local-threads`` in a process of its own (``CLI_DEFAULTS`` is
process-wide), on ``jobs/counting_job.py``: a first run retains a checkpoint on cancellation,
a second resumes from it with the restore flags. What a user sees is checked: the restore line
on stderr, the counts that go on from the checkpoint's, the claimed directory deleted by
subsumption while the job runs, and the refusal (or, with ``-n``, the start) of a job without
one of the checkpoint's operators.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from collections import defaultdict
from pathlib import Path

import pytest

from undertow.testing.restore_control import evidence

JOB = Path(__file__).parent / "jobs" / "counting_job.py"
PER_KEY = 1000  # RECORDS // KEYS of the job
RESTORED = re.compile(r"\[undertow\] restoring job \w+ from checkpoint (\d+) at (\S+) \((\w+)\)")
COUNT = re.compile(r"^(?:\d+> )?\((\d+), (\d+)\)$", re.M)


def undertow_run(cwd: Path, *argv: str) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(p for p in sys.path if p))
    return subprocess.run(
        [sys.executable, "-m", "undertow.cli.main", "run", "-t", "local-threads", *argv],
        env=env, capture_output=True, text=True, timeout=180, cwd=cwd,
    )  # fmt: skip


def checkpointing(tmp_path: Path, interval: bool = True) -> list[str]:
    """One checkpoint root for both runs: its key file authenticates what the first wrote."""
    root = ["-D", f"execution.checkpointing.dir={tmp_path / 'checkpoints'}"]
    if not interval:
        return root
    return [*root, "-D", "execution.checkpointing.interval=100 ms",
            "-D", "execution.checkpointing.num-retained=1"]  # fmt: skip


def leave_a_checkpoint(tmp_path: Path, *job_args: str) -> Path:
    retain = "execution.checkpointing.externalized-checkpoint-retention=RETAIN_ON_CANCELLATION"
    left = undertow_run(tmp_path, *checkpointing(tmp_path), "-D", retain, str(JOB),
                        "leave", *job_args)  # fmt: skip
    assert left.returncode == 0, left.stderr[-3000:]
    match = re.search(r"^RETAINED (.+)$", left.stdout, re.M)
    assert match is not None, left.stdout[-3000:]
    checkpoint = Path(match.group(1))
    assert (checkpoint / "_metadata").is_file()
    return checkpoint


def counts(stdout: str) -> dict[int, list[int]]:
    """key -> the counts printed for it, in order."""
    printed: dict[int, list[int]] = defaultdict(list)
    for key, count in COUNT.findall(stdout):
        printed[int(key)].append(int(count))
    return dict(printed)


def assert_went_on_from_the_checkpoint(stdout: str) -> None:
    """The state came back (raising RestoreEvidenceMissing if not), then every key counted on
    to the end, once each."""
    printed = counts(stdout)
    evidence(
        any(min(seen) > 100 for seen in printed.values()),
        f"every key counted from the start: the state was not restored: {printed}",
    )
    assert sorted(printed) == list(range(6)), stdout[-3000:]
    for key, seen in printed.items():
        assert seen[-1] == PER_KEY, f"key {key} did not reach {PER_KEY}: {seen}"
        assert len(seen) == len(set(seen)), f"key {key} counted twice: {seen}"


@pytest.mark.restores(catches=["keyed-state"])
def test_resume_with_claim_mode_claim_and_delete_the_claimed_checkpoint(tmp_path: Path) -> None:
    checkpoint = leave_a_checkpoint(tmp_path)
    checkpoint_id = int(checkpoint.name.removeprefix("chk-"))

    flags = ["-s", str(checkpoint), "--claim-mode", "claim"]
    resumed = undertow_run(tmp_path, *checkpointing(tmp_path), *flags, str(JOB), "resume",
                           str(checkpoint))  # fmt: skip

    assert resumed.returncode == 0, resumed.stderr[-3000:]
    restored = RESTORED.search(resumed.stderr)
    evidence(restored is not None, resumed.stderr[-3000:])
    assert restored is not None
    evidence(
        restored.groups() == (str(checkpoint_id), str(checkpoint), "CLAIM"),
        f"restored {restored.groups()}, not checkpoint {checkpoint_id} at {checkpoint}",
    )
    assert_went_on_from_the_checkpoint(resumed.stdout)
    assert "CLAIMED GONE WHILE RUNNING" in resumed.stdout, "deleted by subsumption"
    assert not checkpoint.exists()
    newer = [int(n) for n in re.findall(r"\[undertow\] checkpoint (\d+) completed", resumed.stderr)]
    assert newer and min(newer) == checkpoint_id + 1


@pytest.mark.restores
def test_allow_non_restored_state_starts_a_job_without_an_old_operator(tmp_path: Path) -> None:
    checkpoint = leave_a_checkpoint(tmp_path, "--extra")

    root = checkpointing(tmp_path, interval=False)
    refused = undertow_run(tmp_path, *root, "--from-savepoint", str(checkpoint), str(JOB), "resume")
    assert refused.returncode == 1, refused.stderr[-3000:]
    assert "extra-gen" in refused.stderr and "extra-sum" in refused.stderr, refused.stderr[-3000:]
    line = refused.stderr.strip().splitlines()[-1]  # the refusal, as one line
    assert line.startswith(f"undertow: cannot restore from {checkpoint}: checkpoint "), line
    assert "state of operators this job does not have: " in line
    assert "'extra-gen', 'extra-sum'" in line and "ignore-unclaimed-state: true" in line
    assert not counts(refused.stdout)

    started = undertow_run(tmp_path, *root, "-s", str(checkpoint), "-n", str(JOB), "resume")
    assert started.returncode == 0, started.stderr[-3000:]
    restored = RESTORED.search(started.stderr)
    evidence(restored is not None and restored.group(3) == "NO_CLAIM", started.stderr[-3000:])
    assert_went_on_from_the_checkpoint(started.stdout)
    assert (checkpoint / "_metadata").is_file(), "NO_CLAIM: the snapshot stays the user's"


def test_a_changed_max_parallelism_is_refused_in_one_line_before_the_job_runs(
    tmp_path: Path,
) -> None:
    """Not marked ``restores``: the refusal comes before anything is restored (the conftest
    fails an unmarked test that restored)."""
    checkpoint = leave_a_checkpoint(tmp_path)  # max parallelism 128, the default

    root = checkpointing(tmp_path, interval=False)
    refused = undertow_run(tmp_path, *root, "-D", "pipeline.max-parallelism=256", "-s",
                           str(checkpoint), str(JOB), "resume")  # fmt: skip
    assert refused.returncode == 1, refused.stderr[-3000:]
    assert not counts(refused.stdout), "the job must not run"
    line = refused.stderr.strip().splitlines()[-1]
    assert re.fullmatch(
        rf"undertow: cannot restore from {re.escape(str(checkpoint))}: operator '[^']+' "
        r"\(uid '(gen|sum)'\) was checkpointed with max parallelism 128, and this job gives it "
        r"max parallelism 256\. .*set it back to 128 .*",
        line,
    ), line
