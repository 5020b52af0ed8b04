"""``undertow run`` arguments: Flink's restore flags, their aliases, and how they meet ``-D``.

Pure: the command line is parsed and turned into a configuration; no job runs (the errors are
reported before the script would run, so ``main`` is safe to call in-process for them).
"""

from __future__ import annotations

import pytest

from undertow.cli.main import build_parser, main
from undertow.cli.run import cli_configuration
from undertow.core.config import Configuration
from undertow.core.errors import ConfigurationError

PATH = "execution.state-recovery.path"
CLAIM = "execution.state-recovery.claim-mode"
IGNORE = "execution.state-recovery.ignore-unclaimed-state"


def configure(*argv: str) -> Configuration:
    return cli_configuration(build_parser().parse_args(["run", *argv, "job.py"]))


@pytest.mark.parametrize("flag", ["-s", "--fromSavepoint", "--from-savepoint"])
def test_from_savepoint_sets_the_recovery_path(flag: str) -> None:
    config = configure(flag, "/snapshots/chk-3")
    assert config.get_string(PATH, "") == "/snapshots/chk-3"


@pytest.mark.parametrize("flag", ["--claimMode", "--claim-mode", "--restoreMode"])
@pytest.mark.parametrize(
    ("given", "mode"), [("claim", "CLAIM"), ("NO_CLAIM", "NO_CLAIM"), ("no-claim", "NO_CLAIM")]
)
def test_claim_mode_sets_the_claim_mode(flag: str, given: str, mode: str) -> None:
    assert configure("-s", "/x", flag, given).get_string(CLAIM, "") == mode


@pytest.mark.parametrize("flag", ["-n", "--allowNonRestoredState", "--allow-non-restored-state"])
def test_allow_non_restored_state_sets_ignore_unclaimed_state(flag: str) -> None:
    assert configure(flag).get_string(IGNORE, "") == "true"


def test_flags_unset_leave_the_options_unset() -> None:
    config = configure("-p", "2")
    assert not {PATH, CLAIM, IGNORE} & config.key_set()


def test_flags_equal_their_d_settings() -> None:
    flags = configure("-s", "/snap", "--claim-mode", "claim", "-n")
    defines = configure("-D", f"{PATH}=/snap", "-D", f"{CLAIM}=CLAIM", "-D", f"{IGNORE}=true")
    assert flags == defines


@pytest.mark.parametrize(
    "argv",
    [
        ["-s", "/snap", "-D", f"{PATH}=/snap"],
        ["--claim-mode", "claim", "-D", f"{CLAIM}=Claim"],  # compared as the option parses
        ["-n", "-D", f"{IGNORE}=1"],
        ["-s", "/snap", "-D", "execution.savepoint.path=/snap"],  # a deprecated key
        ["--claimMode", "CLAIM", "--restoreMode", "claim"],
    ],
)
def test_the_same_value_twice_is_fine(argv: list[str]) -> None:
    configure(*argv)


@pytest.mark.parametrize(
    ("argv", "named"),
    [
        (["-s", "/a", "-D", f"{PATH}=/b"], ["-s /a", f"-D {PATH}=/b"]),
        (["--from-savepoint", "/a", "-D", "execution.savepoint.path=/b"],
         ["--from-savepoint /a", "-D execution.savepoint.path=/b", PATH]),
        (["--claim-mode", "claim", "-D", f"{CLAIM}=NO_CLAIM"],
         ["--claim-mode CLAIM", f"-D {CLAIM}=NO_CLAIM"]),
        (["--restoreMode", "CLAIM", "-D", "execution.savepoint-restore-mode=no_claim"],
         ["--restoreMode CLAIM", "-D execution.savepoint-restore-mode=no_claim", CLAIM]),
        (["-n", "-D", f"{IGNORE}=false"], ["-n", f"-D {IGNORE}=false"]),
        (["--claimMode", "CLAIM", "--restoreMode", "NO_CLAIM"],
         ["--claimMode CLAIM", "--restoreMode NO_CLAIM"]),
    ],
)  # fmt: skip
def test_a_flag_and_a_different_d_value_conflict(argv: list[str], named: list[str]) -> None:
    with pytest.raises(ConfigurationError) as caught:
        configure(*argv)
    for text in named:
        assert text in str(caught.value)


def test_a_conflict_fails_before_the_script_runs(capsys: pytest.CaptureFixture[str]) -> None:
    code = main(["run", "-n", "-D", f"{IGNORE}=false", "does-not-exist.py"])
    assert code == 2
    assert f"-n conflicts with -D {IGNORE}=false" in capsys.readouterr().err


@pytest.mark.parametrize("flag", ["--claim-mode", "--claimMode", "--restoreMode"])
def test_a_bad_claim_mode_fails_naming_the_value_and_the_modes(
    flag: str, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as exited:
        main(["run", "-s", "/snap", flag, "sometimes", "does-not-exist.py"])
    assert exited.value.code == 2
    err = capsys.readouterr().err
    assert "'sometimes' is not a claim mode: must be CLAIM or NO_CLAIM" in err


def test_legacy_is_refused_with_the_reason(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        main(["run", "--restoreMode", "LEGACY", "does-not-exist.py"])
    assert "removed in 2.0" in capsys.readouterr().err


def test_a_bad_claim_mode_given_with_d_fails_before_the_script_runs(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert main(["run", "-D", f"{CLAIM}=sometimes", "does-not-exist.py"]) == 2
    err = capsys.readouterr().err
    assert f"option '{CLAIM}' = 'sometimes': must be CLAIM or NO_CLAIM" in err


def test_script_arguments_are_not_flags() -> None:
    args = build_parser().parse_args(["run", "-p", "2", "job.py", "-s", "x", "-n"])
    assert args.script == "job.py" and args.args == ["-s", "x", "-n"]
    assert args.from_savepoint is None and not args.allow_non_restored_state
