"""The one executable lookup: a name or path -> a runnable file, or AgentUnavailable.

Checked before anything is spawned, so a missing agent is one clear line and no job state:
the name on PATH (or the path given), a regular file with the x bit (not a directory, FIFO or
device), and for a script, its interpreter (`#!/usr/bin/env node` needs `node` on PATH).
"""

from __future__ import annotations

import os
import stat

from specialists.base.errors import AgentUnavailable

_SHEBANG_MAX = 256


def which(name: str, path: str | None = None) -> str | None:
    """`shutil.which` as it is on POSIX, without shutil (which loads bz2 and lzma: some 5 ms
    of CPU on every run and `status`): the first `name` on `path` (default: $PATH) that is
    executable and not a directory. A name with a slash is checked as it is."""
    if os.sep in name:
        return name if _runnable(name) else None
    if path is None:
        path = os.environ.get("PATH", os.defpath)
    for directory in dict.fromkeys(path.split(os.pathsep)) if path else ():
        candidate = os.path.join(directory, name)
        if _runnable(candidate):
            return candidate
    return None


def _runnable(path: str) -> bool:
    return os.access(path, os.X_OK) and os.path.exists(path) and not os.path.isdir(path)


def find_executable(
    name: str,
    *,
    path: str | None,
    not_installed: str,
    hint: str | None = None,
    configured: bool = False,
) -> str:
    """Resolve `name` (a path when it holds a slash, else searched on `path`).

    `not_installed` is the message when it is missing ("claude is not installed: npm ...");
    `configured` means a person named this binary, so the message names it too.
    """
    found = name if os.sep in name else which(name, path)
    if found is None:
        if configured:
            raise AgentUnavailable(f"{not_installed} ({name!r} is not on PATH)", hint=hint)
        raise AgentUnavailable(not_installed, hint=hint)
    problem = file_problem(found)
    if problem is not None:
        raise AgentUnavailable(f"{not_installed} ({found!r} {problem})", hint=hint)
    interpreter = _missing_interpreter(found, path)
    if interpreter is not None:
        raise AgentUnavailable(
            f"{found} needs `{interpreter}` to run, and it is not on PATH",
            hint=f"install {interpreter}, or put it on PATH",
        )
    return found


def file_problem(path: str) -> str | None:
    """Why `path` cannot be executed, or None when it can."""
    try:
        st = os.stat(path)
    except FileNotFoundError:
        return "is not an executable file (it does not exist)"
    except OSError as exc:
        return f"is not an executable file ({exc.strerror or exc})"
    if stat.S_ISDIR(st.st_mode):
        return "is not an executable file (it is a directory)"
    if not stat.S_ISREG(st.st_mode):
        return "is not an executable file (it is a FIFO, socket or device)"
    if not os.access(path, os.X_OK):
        return "is not an executable file (no execute permission)"
    return None


def _missing_interpreter(script: str, path: str | None) -> str | None:
    """The interpreter a `#!` script names, when it cannot be found; None when fine."""
    try:
        with open(script, "rb") as f:
            first = f.read(_SHEBANG_MAX).split(b"\n", 1)[0]
    except OSError:
        return None  # exec will say what is wrong
    if not first.startswith(b"#!"):
        return None
    words = first[2:].decode("utf-8", "replace").split()
    if not words:
        return None
    if os.path.basename(words[0]) == "env":
        names = [w for w in words[1:] if not w.startswith("-") and "=" not in w]
        if not names:
            return None
        return None if which(names[0], path) else names[0]
    return words[0] if file_problem(words[0]) else None
