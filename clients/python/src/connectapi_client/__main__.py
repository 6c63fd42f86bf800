"""`python -m connectapi_client listen`: the test record's webhook events on your machine
(connectapi_client.listen)."""

from __future__ import annotations

import argparse
import os
import sys

from .listen import listen


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m connectapi_client")
    commands = parser.add_subparsers(dest="command", required=True)
    listening = commands.add_parser(
        "listen", help="forward the test record's webhook events to a local URL, signed")
    listening.add_argument("--api", default=os.environ.get("CONNECTAPI_URL", "http://127.0.0.1:8080"),
                           help="the service (default $CONNECTAPI_URL, else http://127.0.0.1:8080)")
    listening.add_argument("--key", default=os.environ.get("CONNECTAPI_API_KEY"),
                           help="a test key, cak_test_… (default $CONNECTAPI_API_KEY, which keeps it out of ps)")
    listening.add_argument("--forward-to", required=True, help="where to POST each event: http://localhost:4242/…")
    listening.add_argument("--secret", default=None,
                           help="the whsec_… secret to sign with (default: a new one, printed when ready)")
    args = parser.parse_args(argv)
    if not args.key:
        print("connectapi listen: give a test key: --key cak_test_… or CONNECTAPI_API_KEY", file=sys.stderr)
        return 2
    try:
        return listen(api=args.api, key=args.key, forward_to=args.forward_to, secret=args.secret,
                      say=lambda line: print(line, flush=True))
    except KeyboardInterrupt:
        return 0
    except BrokenPipeError:  # `… listen | head`: the reader went away; end quietly
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 1


if __name__ == "__main__":
    sys.exit(main())
