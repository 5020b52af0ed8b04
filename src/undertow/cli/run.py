"""``undertow run [OPTIONS] JOB.py [ARGS...]``: run a job script with command-line defaults.

The script runs as ``__main__``; every ``StreamExecutionEnvironment`` it creates starts from
the options given here (``-p``, ``-t``, ``--master``, ``--workers``, ``-D KEY=VALUE`` and
Flink's restore flags ``-s``, ``--claimMode``, ``-n``), and the script's own settings win, as
in Flink. Every option, and that the script can be opened, is checked before it runs (exit
2, one line); a job that fails exits 1; Ctrl-C cancels the job and exits 130.

Lifecycle: :func:`run` writes the options into the process-wide
:data:`~undertow.datastream.stream_execution_environment.CLI_DEFAULTS` once, then runs the
script; it is meant to be called once per process (the command line), from the main thread.
:func:`cli_configuration` is pure (no global state), for tests and other front ends.

The longer story: docs/design.md, "Module notes", under this module's name.
"""

from __future__ import annotations

import argparse
import os
import runpy
import sys
from dataclasses import dataclass
from typing import Any

from undertow.cli.console import StatusConsole
from undertow.core.config import ConfigOption, Configuration, Options
from undertow.core.errors import ConfigurationError, UndertowError
from undertow.datastream.stream_execution_environment import CLI_DEFAULTS

CLAIM_MODES = ("CLAIM", "NO_CLAIM")
#: How a task's failure (``JobExecutionError``) begins; the CLI's own prefix replaces it.
JOB_FAILED = "job failed: "


def _define(text: str) -> tuple[str, str]:
    key, sep, value = text.partition("=")
    if not sep or not key:
        raise argparse.ArgumentTypeError(f"expected key=value, got {text!r}")
    return key.strip(), value.strip()


def _claim_mode(text: str) -> str:
    """A claim mode as ``execution.state-recovery.claim-mode`` parses it (``claim``,
    ``no-claim``, ``NO_CLAIM``, ...), or an argparse error naming the value."""
    option = Options.RECOVERY_CLAIM_MODE
    mode = option.parse(text)
    problem = option.check(mode) if option.check is not None else None
    if problem:
        raise argparse.ArgumentTypeError(f"{text!r} is not a claim mode: {problem}")
    return str(mode)


class _Spelled(argparse.Action):
    """Store the value like ``store`` (or ``const`` with ``nargs=0``, like ``store_true``) and
    remember how the user spelled the flag in ``namespace.spelled[dest]``, so that an error
    can quote it."""

    def __call__(
        self, parser: argparse.ArgumentParser, namespace: argparse.Namespace, values: Any,
        option_string: str | None = None,
    ) -> None:  # fmt: skip
        setattr(namespace, self.dest, self.const if self.nargs == 0 else values)
        spelled = dict(getattr(namespace, "spelled", None) or {})
        spelled[self.dest] = option_string or self.dest
        namespace.spelled = spelled


def add_arguments(run: argparse.ArgumentParser) -> None:
    """The ``run`` sub-command's arguments (see the module docstring)."""
    run.add_argument("script", help="the Python file that defines and executes the job")
    run.add_argument("args", nargs=argparse.REMAINDER, help="arguments passed to the script")
    run.add_argument("-p", "--parallelism", type=int, help="default parallelism")
    run.add_argument("-t", "--target", choices=["spark", "local", "local-threads"],
                     help="where the job runs (execution.target, default spark)")  # fmt: skip
    run.add_argument("--master", help="Spark master (spark.master, default local[*]): "
                     "local[N], spark://HOST:PORT, yarn, k8s://...")  # fmt: skip
    run.add_argument("--workers", type=int,
                     help="number of workers (undertow.workers; default: one per task slot "
                          "Spark offers, at most the job's parallelism)")  # fmt: skip
    run.add_argument("--no-status", dest="status", action="store_false",
                     help="do not show the jobs' status (records/s, backpressure, last "
                          "checkpoint, restarts) while the script runs")  # fmt: skip
    run.add_argument("-D", dest="defines", action="append", type=_define, default=[],
                     metavar="KEY=VALUE", help="set any configuration option")  # fmt: skip
    restore = run.add_argument_group("restore (Flink's flink run flags)")
    restore.add_argument("-s", "--fromSavepoint", "--from-savepoint", dest="from_savepoint",
                         action=_Spelled, metavar="PATH",
                         help="start from this savepoint or retained checkpoint "
                              "(execution.state-recovery.path)")  # fmt: skip
    restore.add_argument("--claimMode", "--claim-mode", dest="claim_mode", type=_claim_mode,
                         action=_Spelled,
                         metavar="CLAIM|NO_CLAIM",
                         help="who owns the snapshot of --fromSavepoint: NO_CLAIM (default; the "
                              "user, never deleted) or CLAIM (the job, deleted once subsumed) "
                              "(execution.state-recovery.claim-mode)")  # fmt: skip
    restore.add_argument("--restoreMode", dest="restore_mode", type=_claim_mode,
                         action=_Spelled,
                         metavar="CLAIM|NO_CLAIM",
                         help="deprecated alias of --claimMode (as in Flink)")  # fmt: skip
    restore.add_argument("-n", "--allowNonRestoredState", "--allow-non-restored-state",
                         dest="allow_non_restored_state", action=_Spelled, nargs=0,
                         const=True, default=False,
                         help="start even if the snapshot has state of operators the job no "
                              "longer has; that state is dropped "
                              "(execution.state-recovery.ignore-unclaimed-state)")  # fmt: skip


@dataclass(frozen=True, slots=True)
class _Flag:
    """A restore flag as given: how the user spelled it (``-s``, ``--claim-mode``) and the
    value it sets."""

    option: ConfigOption[Any]
    #: the flag as an error quotes it: ``-s /some/path``, ``--claim-mode CLAIM``, ``-n``
    given: str
    value: str


def _restore_flags(args: argparse.Namespace) -> list[_Flag]:
    spelled: dict[str, str] = getattr(args, "spelled", None) or {}
    flags: list[_Flag] = []
    if args.from_savepoint is not None:
        path = args.from_savepoint
        flags.append(_Flag(Options.RECOVERY_PATH, f"{spelled['from_savepoint']} {path}", path))
    claim, restore = args.claim_mode, args.restore_mode
    if claim is not None and restore is not None and claim != restore:
        raise ConfigurationError(
            f"{spelled['claim_mode']} {claim} conflicts with --restoreMode {restore} (its "
            f"deprecated alias); give only {spelled['claim_mode']}"
        )
    if claim is not None:
        given = f"{spelled['claim_mode']} {claim}"
        flags.append(_Flag(Options.RECOVERY_CLAIM_MODE, given, claim))
    elif restore is not None:
        flags.append(_Flag(Options.RECOVERY_CLAIM_MODE, f"--restoreMode {restore}", restore))
    if args.allow_non_restored_state:
        flags.append(
            _Flag(Options.IGNORE_UNCLAIMED_STATE, spelled["allow_non_restored_state"], "true")
        )
    return flags


def _check_no_conflict(flag: _Flag, defines: dict[str, str]) -> None:
    """Raise if a ``-D`` sets ``flag``'s option (any of its keys) to a different value.

    Values are compared as the option parses them (``claim`` equals ``CLAIM``, ``1`` equals
    ``true``); a ``-D`` value that does not parse is left to the check of every option.
    """
    option = flag.option
    wanted = option.read({option.key: flag.value})
    for key in (option.key, *option.deprecated_keys):
        if key not in defines:
            continue
        try:
            given = option.read({key: defines[key]})
        except ConfigurationError:
            continue
        if given != wanted:
            raise ConfigurationError(
                f"{flag.given} conflicts with -D {key}={defines[key]}: both "
                f"set {option.key}; give one of them"
            )


def cli_configuration(args: argparse.Namespace) -> Configuration:
    """The options of a parsed ``run`` command line, checked: ``-D`` settings, then the flags.

    Raises :class:`ConfigurationError` for a restore flag that contradicts a ``-D`` of the same
    option, or any option with a bad value (naming the key and the value). Pure.
    """
    defines = dict(args.defines)
    config = Configuration(defines)
    for flag in _restore_flags(args):
        _check_no_conflict(flag, defines)
        config.set(flag.option, flag.value)
    if args.parallelism is not None:
        config.set(Options.PARALLELISM, args.parallelism)
    if args.target is not None:
        config.set(Options.TARGET, args.target)
    if args.master is not None:
        config.set(Options.SPARK_MASTER, args.master)
    if args.workers is not None:
        config.set(Options.WORKERS, args.workers)
    values = config.to_dict()
    for option in Options.all():
        option.read(values)
    return config


def _unreadable(script: str) -> str | None:
    """Why ``script`` cannot be run, worded as Python's own ``can't open file '<abs path>':
    [Errno 2] No such file or directory``; None when it can be opened (or is a directory,
    which runs its ``__main__.py``). Checked before the script runs, so an ``OSError`` the
    script itself raises is never mistaken for it."""
    try:
        with open(script, "rb"):
            return None
    except IsADirectoryError:
        return None
    except OSError as err:
        return f"can't open file {os.path.abspath(script)!r}: [Errno {err.errno}] {err.strerror}"


def run(args: argparse.Namespace) -> int:
    """Run the job script of a parsed ``run`` command line; the process's exit code."""
    try:
        config = cli_configuration(args)
    except UndertowError as err:
        print(f"undertow: {err}", file=sys.stderr)
        return 2
    problem = _unreadable(args.script)
    if problem is not None:
        print(f"undertow run: {problem}", file=sys.stderr)
        return 2
    if args.restore_mode is not None:
        print("undertow: --restoreMode is deprecated; use --claimMode", file=sys.stderr)
    CLI_DEFAULTS.add_all(config)
    sys.argv = [args.script, *args.args]
    status = StatusConsole() if getattr(args, "status", True) else None
    if status is not None:
        status.start()
    try:
        runpy.run_path(args.script, run_name="__main__")
    except UndertowError as err:
        # a task's failure already says "job failed: operator ..."; say it once
        print(f"undertow: job failed: {str(err).removeprefix(JOB_FAILED)}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print("undertow: interrupted; the job was cancelled", file=sys.stderr)
        return 130
    finally:
        if status is not None:
            status.stop()
    return 0
