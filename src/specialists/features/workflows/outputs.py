"""A workflow child's `output` file (seed 004 "File-only output mode"): its final answer,
written to a path in the project when the child ends done, so later steps and people can
open a report that outlives the workflow.

Where: a path relative to the project root, or an absolute one inside it. Refused, each with
one line naming the key: a path that leaves the project (`..`, another absolute directory),
one into `.specialists/` (job state) or into a `.git/` (any repository's, in any case),
text with control characters or over 4,096 characters, two keys of one run naming the same
file. The lexical checks run when the options are read (before any child launches); the
containment of an absolute path when the child is launched (before it runs).

How: the directories are walked from the project root one at a time without following a
symbolic link (a `reports -> /elsewhere` link is refused, not written through) and created
when missing; the file is written to a temp name beside it and renamed into place, so a
reader never sees half of it. What already stands at the name must be a regular file: a
symlink, a FIFO, a directory or a device there is refused and left alone. At most
MAX_OUTPUT_BYTES are written: a longer answer is refused (it stays in the job's result).
A refused write fails the child, with the reason.
"""

from __future__ import annotations

import errno
import os
import stat
from pathlib import Path

from specialists.base.errors import UserError
from specialists.store.atomic import write_atomic

MAX_OUTPUT_BYTES = 16 * 1024 * 1024
MAX_PATH_CHARS = 4096
_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
_KINDS = {stat.S_IFLNK: "a symbolic link", stat.S_IFIFO: "a FIFO", stat.S_IFDIR: "a directory"}


def check_output(raw: object, where: str) -> str | None:
    """The `output` option as given (None for none: absent or false), checked lexically."""
    if raw is None or raw is False:
        return None
    if not isinstance(raw, str) or not raw.strip():
        raise UserError(f"{where}: output must be a file path in the project, or false")
    if len(raw) > MAX_PATH_CHARS or not raw.isprintable():
        raise UserError(f"{where}: output holds control characters or is over 4,096 characters")
    if not os.path.isabs(raw):
        relative_parts(raw, where)
    elif ".." in Path(raw).parts:
        raise UserError(f"{where}: output {raw!r} leaves its directory ('..'); give a plain path")
    return raw


def relative_parts(raw: str, where: str, project: Path | None = None) -> tuple[str, ...]:
    """The path's parts below the project root; UserError when it is not below it."""
    path = Path(raw)
    if path.is_absolute():
        inside = _inside(path, project) if project is not None else None
        if inside is None:
            raise UserError(
                f"{where}: output {raw!r} is outside the project",
                hint="give a path relative to the project root, or an absolute one inside it",
            )
        path = inside
    parts = tuple(p for p in path.parts if p not in ("", "."))
    if not parts or ".." in parts:
        raise UserError(
            f"{where}: output {raw!r} leaves the project ('..')",
            hint="give a path relative to the project root, e.g. reports/review.md",
        )
    # Compared case-folded: on a case-insensitive disk (macOS) `.GIT/config` is `.git/config`.
    # A `.git` anywhere: a nested repository's config (core.fsmonitor) is a command git runs.
    folded = [p.casefold() for p in parts]
    state = next((parts[i] for i, p in enumerate(folded) if p == ".git"), None)
    if folded[0] == ".specialists" or state is not None:
        raise UserError(
            f"{where}: output {raw!r} is inside {state or parts[0]}/; give another path"
        )
    return parts


def _inside(path: Path, project: Path) -> Path | None:
    for root in dict.fromkeys((project, project.resolve())):
        try:
            return path.relative_to(root)
        except ValueError:
            continue
    return None


def write_output(project: Path, raw: str, text: str, where: str) -> Path:
    """Write `text` to the output path; the path written. UserError (one line) when it is
    refused; the file and what stands at its name are then as they were."""
    parts = relative_parts(raw, where, project)
    data = text.encode("utf-8", "replace")
    shown = "/".join(parts)
    if len(data) > MAX_OUTPUT_BYTES:
        raise UserError(
            f"{where}: output {shown}: the answer is {len(data):,} bytes, over the "
            f"{MAX_OUTPUT_BYTES // (1024 * 1024)} MiB an output file may hold; not written"
        )
    fd = os.open(project, _DIR_FLAGS)
    try:
        for i, part in enumerate(parts[:-1]):
            child = _enter(fd, part, "/".join(parts[: i + 1]), where)
            os.close(fd)
            fd = child
        _check_target(fd, parts[-1], shown, where)
        try:
            write_atomic(parts[-1], data, dir_fd=fd, mode=0o644)
        except OSError as exc:
            raise UserError(f"{where}: output {shown} not written: {exc.strerror or exc}") from None
    finally:
        os.close(fd)
    return project.joinpath(*parts)


def _enter(fd: int, name: str, shown: str, where: str) -> int:
    """An fd on the directory `name` under `fd` (made if missing), never through a link."""
    try:
        try:
            return os.open(name, _DIR_FLAGS, dir_fd=fd)
        except FileNotFoundError:
            try:
                os.mkdir(name, 0o755, dir_fd=fd)
            except FileExistsError:
                pass  # another writer made it meanwhile: opened below like any directory
            return os.open(name, _DIR_FLAGS, dir_fd=fd)
    except OSError as exc:
        if exc.errno in (errno.ELOOP, errno.ENOTDIR):
            raise UserError(
                f"{where}: output directory {shown} is a symbolic link or not a directory; "
                "not followed (output files stay inside the project)"
            ) from None
        raise UserError(f"{where}: output directory {shown}: {exc.strerror or exc}") from None


def _check_target(fd: int, name: str, shown: str, where: str) -> None:
    try:
        st = os.lstat(name, dir_fd=fd)
    except FileNotFoundError:
        return
    if stat.S_ISREG(st.st_mode):
        return
    what = _KINDS.get(stat.S_IFMT(st.st_mode), "not a regular file")
    raise UserError(f"{where}: output {shown} is {what}; not replaced and not written")
