"""Append-only logs under $XDG_STATE_HOME/specialists/ (hooks.log, errors.log).

The last resort for problems nobody is there to read (a hook's host, a crashed command):
each log is rotated to `<name>.1` past LOG_MAX_BYTES, so it never grows without bound.
Standard library only, and text paths (no `pathlib`): the hooks write here.
"""

from __future__ import annotations

import os

from specialists.store.atomic import rename_over
from specialists.store.paths import user_state_dir

LOG_MAX_BYTES = 512 * 1024  # then <name> is rotated to <name>.1 (one old log kept)


def log_path(name: str) -> str:
    return os.path.join(user_state_dir(), name)


def append(name: str, text: str) -> str:
    """Append `text` (ending in a newline) to the log `name`; returns its path.

    Raises OSError when the log cannot be written: the caller decides what is left to do.
    """
    path = log_path(name)
    os.makedirs(os.path.dirname(path), mode=0o700, exist_ok=True)
    try:
        size = os.stat(path).st_size
    except FileNotFoundError:
        size = 0  # no log yet
    if size > LOG_MAX_BYTES:
        rename_over(path, path + ".1")
    fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_NOFOLLOW, 0o600)
    with os.fdopen(fd, "a", encoding="utf-8", errors="backslashreplace") as f:
        f.write(text if text.endswith("\n") else text + "\n")
    return path
