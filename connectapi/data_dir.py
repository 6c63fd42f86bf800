"""The data dir and the operator token kept in it: ours alone, and never reached through a link.

The token file is made with O_EXCL|O_NOFOLLOW, so a file or link someone planted at its
name is refused instead of written through; it is read with O_NOFOLLOW for the same reason.
"""

from __future__ import annotations

import errno
import logging
import os
import stat
from pathlib import Path

log = logging.getLogger("connectapi")

DIR_MODE = 0o700
TOKEN_MODE = 0o600
# Group search alone may stay on the data dir (0710): it is how the embedded server's own
# user reaches its pgdata when we run as root (storage/embedded.py). More is given away.
_GIVEN_AWAY = 0o067


class UnsafePath(Exception):
    """A path in the data dir is not what we made (a link, not a regular file)."""


def secure_data_dir(path: Path) -> None:
    """Make the data dir for us alone (0700), or take back what an existing one gives away."""
    path.mkdir(mode=DIR_MODE, parents=True, exist_ok=True)
    mode = stat.S_IMODE(path.stat().st_mode)
    if mode & _GIVEN_AWAY:
        path.chmod(DIR_MODE)
        log.warning("the data dir %s was mode %o; tightened to %o", path, mode, DIR_MODE)


def read_token_file(path: Path) -> str | None:
    """The token in `path`, or None when there is no file; a looser file is tightened to 0600."""
    try:
        # O_NONBLOCK: a FIFO planted at the name must not hang the start.
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    except FileNotFoundError:
        return None
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise UnsafePath(f"{path} is a symbolic link; the operator token is never read or written "
                             "through one: remove it (a new token is made at the next start)") from None
        raise
    with os.fdopen(fd) as handle:
        found = os.fstat(fd)
        if not stat.S_ISREG(found.st_mode):
            raise UnsafePath(f"{path} is not a regular file; remove it (a new token is made at the next start)")
        mode = stat.S_IMODE(found.st_mode)
        if mode != TOKEN_MODE and found.st_uid == os.geteuid():  # another user's CLI only reads it
            os.fchmod(fd, TOKEN_MODE)
            log.warning("the operator token file %s was mode %o; tightened to %o", path, mode, TOKEN_MODE)
        return handle.read().strip()


def create_token_file(path: Path, token: str) -> None:
    """Write a new token file, 0600; refuses when anything, a link included, holds the name."""
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, TOKEN_MODE)
    except FileExistsError:
        raise UnsafePath(f"{path} appeared while the operator token was being made; start again") from None
    with os.fdopen(fd, "w") as handle:
        handle.write(token + "\n")
