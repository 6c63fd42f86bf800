"""The one-file executable's entry point: the `connectapi` command."""

import sys

from connectapi.__main__ import main

if __name__ == "__main__":
    sys.exit(main())
