"""`connectapi listen`: the client library's listener (connectapi_client.listen), from the
service's command: one implementation, in the package an integrator installs without a
checkout (`python -m connectapi_client listen` is the same)."""

from __future__ import annotations

import argparse
import os
import sys

from .config import Settings


def run_listen(args: argparse.Namespace, settings: Settings) -> int:
    if not args.key:
        print("connectapi listen: give a test key: --key cak_test_… or CONNECTAPI_API_KEY", file=sys.stderr)
        return 2
    try:
        from connectapi_client import listen
    except ImportError:
        print("connectapi listen: it needs the Python client library: pip install clients/python (make install "
              "does), or run it from the library itself: python -m connectapi_client listen", file=sys.stderr)
        return 2
    api = args.api or os.environ.get("CONNECTAPI_URL") or f"http://127.0.0.1:{settings.port}"
    try:
        return listen(api=api, key=args.key, forward_to=args.forward_to, secret=args.secret,
                      say=lambda line: print(line, flush=True))
    except KeyboardInterrupt:
        return 0
