"""The ``undertow`` command line: one subcommand per module.

``undertow run`` runs a job script with command-line defaults (:mod:`undertow.cli.run`);
``undertow checkpoints`` lists and verifies the completed checkpoints under a directory
(:mod:`undertow.cli.checkpoints`); ``undertow stop`` stops a running job with a savepoint
(:mod:`undertow.cli.stop`); ``undertow list``, ``cancel`` and ``savepoint`` are Flink's
commands against a REST address (:mod:`undertow.cli.jobs`).

The longer story: docs/design.md, "Module notes", under this module's name.
"""

from __future__ import annotations

import argparse
import sys
from typing import Any

from undertow.cli import checkpoints, jobs, stop
from undertow.cli import run as run_command
from undertow.core.errors import UndertowError


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="undertow", description="Run undertow jobs.")
    sub = parser.add_subparsers(dest="command", required=True)
    run_command.add_arguments(sub.add_parser("run", help="run a job script"))
    listing = sub.add_parser(
        "checkpoints", help="list the checkpoints under a directory and verify them"
    )
    listing.add_argument("directory", help="checkpoint directory (execution.checkpointing.dir)")
    listing.add_argument("--job", metavar="JOB_ID", help="only this job's checkpoints")
    listing.add_argument("--key", metavar="KEY",
                         help="metadata key (hex or text, as undertow.checkpointing.hmac-key); "
                              "default: $XDG_CONFIG_HOME/undertow/checkpoint.key")  # fmt: skip
    stopping = sub.add_parser("stop", help="stop a running job with a savepoint")
    stopping.add_argument(
        "job",
        metavar="JOB_ID_OR_REST_URL",
        help="the job id, or the job's REST URL (http://127.0.0.1:PORT)",
    )
    stopping.add_argument(
        "--savepoint-path",
        "-p",
        metavar="DIR",
        help="directory the savepoint goes into (default: the job's "
        "execution.checkpointing.savepoint-dir)",
    )
    stopping.add_argument(
        "--drain",
        "-d",
        action="store_true",
        help="send MAX_WATERMARK first: event-time timers fire, operators finish",
    )
    stopping.add_argument("--unaligned", "-u", action="store_true", help=_UNALIGNED_HELP)
    _add_format_type(stopping)
    stopping.add_argument(
        "--rest-address",
        default=stop.DEFAULT_REST_ADDRESS,
        metavar="URL",
        help="REST API of the job given by id (default %(default)s)",
    )
    stopping.add_argument(
        "--timeout",
        type=float,
        default=600.0,
        metavar="SECONDS",
        help="give up waiting for the savepoint after this long",
    )
    _add_job_verbs(sub)
    return parser


_UNALIGNED_HELP = (
    "take the savepoint with unaligned barriers: in-flight data is kept in the savepoint "
    "instead of waiting for the backlog (needs execution.checkpointing.unaligned.enabled)"
)


def _add_format_type(verb: Any) -> None:
    """Flink's ``--type canonical|native`` (``-t``) of ``flink stop`` and ``flink savepoint``."""
    verb.add_argument(
        "--type",
        "-t",
        dest="format_type",
        type=str.lower,
        choices=("canonical", "native"),
        default="canonical",
        help="savepoint format: canonical (any state backend restores it; default) or native "
        "(the backend's own files: faster, restores only into the same backend)",
    )


def _add_job_verbs(sub: Any) -> None:
    """``list``, ``cancel`` and ``savepoint`` (see :mod:`undertow.cli.jobs`)."""
    listing = sub.add_parser("list", help="list the jobs of a REST address")
    listing.add_argument(
        "rest_url",
        nargs="?",
        metavar="REST_URL",
        help=f"the REST address (default {stop.DEFAULT_REST_ADDRESS})",
    )
    cancelling = sub.add_parser("cancel", help="cancel a running job")
    cancelling.add_argument("job", metavar="JOB_ID_OR_REST_URL")
    saving = sub.add_parser("savepoint", help="take a savepoint of a running job")
    saving.add_argument("job", metavar="JOB_ID_OR_REST_URL")
    saving.add_argument(
        "directory",
        nargs="?",
        metavar="DIR",
        help="directory the savepoint goes into (default: the job's "
        "execution.checkpointing.savepoint-dir)",
    )
    saving.add_argument("--unaligned", "-u", action="store_true", help=_UNALIGNED_HELP)
    _add_format_type(saving)
    for verb in (cancelling, saving):
        verb.add_argument(
            "--rest-address",
            default=stop.DEFAULT_REST_ADDRESS,
            metavar="URL",
            help="REST API of the job given by id (default %(default)s)",
        )


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    if args.command == "stop":
        if args.drain and args.unaligned:
            print("undertow stop: --drain and --unaligned exclude each other", file=sys.stderr)
            return 2
        return stop.run(args.job, args.savepoint_path, args.drain, args.rest_address,
                        args.timeout, unaligned=args.unaligned,
                        format_type=args.format_type)  # fmt: skip
    if args.command == "list":
        return jobs.list_jobs(args.rest_url or stop.DEFAULT_REST_ADDRESS)
    if args.command == "cancel":
        return jobs.cancel(args.job, args.rest_address)
    if args.command == "savepoint":
        return jobs.savepoint(args.job, args.directory, args.rest_address,
                              unaligned=args.unaligned, format_type=args.format_type)  # fmt: skip
    if args.command == "checkpoints":
        try:
            return checkpoints.run(args.directory, args.job, args.key)
        except UndertowError as err:
            print(f"undertow: {err}", file=sys.stderr)
            return 2
    return run_command.run(args)


if __name__ == "__main__":
    sys.exit(main())
