"""The ``undertow`` command line.

``undertow run [-p N] [-t spark|local|local-threads] [--master URL] [--workers W]
[-D key=value ...] [-s PATH [--claimMode CLAIM|NO_CLAIM] [-n]] JOB.py [ARGS...]`` runs a job
script as ``__main__`` with those options as defaults of every ``StreamExecutionEnvironment``
it creates (the script's own settings win, as in Flink); ``-s`` / ``--claimMode`` / ``-n`` are
Flink's restore flags. The default target is ``spark`` on master ``local[*]``; Ctrl-C cancels
the job (a graceful stop of the workers first, then Spark's job-group cancel) and exits with
130 (see :mod:`undertow.cli.run`).

``undertow checkpoints DIR [--job JOB_ID] [--key KEY]`` lists the completed checkpoints under a
checkpoint directory (job id, checkpoint id, completion time, size, whether it verifies and
why not) and exits with 1 if any does not verify (see :mod:`undertow.cli.checkpoints`).

``undertow stop JOB_ID_OR_REST_URL [--savepoint-path DIR] [--drain] [--rest-address URL]``
stops a running job with a savepoint through its REST API and prints the savepoint's path;
without ``--savepoint-path`` the job's ``execution.checkpointing.savepoint-dir`` is used (see
:mod:`undertow.cli.stop`).
"""

from __future__ import annotations

import argparse
import sys

from undertow.cli import checkpoints, stop
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
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    if args.command == "stop":
        return stop.run(args.job, args.savepoint_path, args.drain, args.rest_address,
                        args.timeout)  # fmt: skip
    if args.command == "checkpoints":
        try:
            return checkpoints.run(args.directory, args.job, args.key)
        except UndertowError as err:
            print(f"undertow: {err}", file=sys.stderr)
            return 2
    return run_command.run(args)


if __name__ == "__main__":
    sys.exit(main())
