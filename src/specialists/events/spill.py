"""Oversized bodies go to a file; readers get head, tail and the path (P8, R-E2, R-O1..R-O3).

Only size decides: a body that already contains a spill marker is still bounded (R-O3), error
bodies are treated like any other (R-O2), and a zero tail keeps no tail, never the whole
body (R-E2). `bound_stream` does the same for a body that arrives in pieces (a 100 MB log):
it is written to the spill file as it comes and never held whole in memory.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterable

from specialists.base.tuples import NamedTuple
from specialists.store.atomic import rename_over, write_all, write_atomic

TYPE_CHECKING = False
if TYPE_CHECKING:
    from pathlib import Path


class SpillLimits(NamedTuple):
    max_chars: int = 40_000
    head_chars: int = 6_000
    tail_chars: int = 2_000


# Event bodies are smaller than tool results: they land in the model's context uninvited.
EVENT_LIMITS = SpillLimits(max_chars=4_000, head_chars=2_400, tail_chars=1_000)


def _safe_label(label: str) -> str:
    return "".join(c if c.isalnum() or c in "-_" else "_" for c in label)[:40] or "output"


def spill_text(text: str, spill_dir: Path, label: str = "output") -> Path:
    """Write `text` to spill_dir/<label>-<hash>.txt (atomic, 0600; same body, same file)."""
    data = text.encode("utf-8", "surrogatepass")
    import hashlib  # OpenSSL costs ~8 ms to load: only a body that is spilled pays it

    digest = hashlib.sha256(data).hexdigest()[:16]
    _make_private_dir(spill_dir)
    path = spill_dir / f"{_safe_label(label)}-{digest}.txt"
    if not path.exists():
        write_atomic(path, data)
        os.chmod(path, 0o600)
    return path


def bound_body(
    text: str, spill_dir: Path, label: str = "output", limits: SpillLimits | None = None
) -> str:
    """`text` unchanged when small enough, else head + marker naming the file + tail."""
    limits = limits or SpillLimits()
    if len(text) <= limits.max_chars:
        return text
    return shorten(text, spill_text(text, spill_dir, label), limits)


def bound_stream(
    pieces: Iterable[str],
    spill_dir: Path,
    label: str = "output",
    limits: SpillLimits | None = None,
) -> str:
    """`bound_body` for a body that arrives in pieces, holding at most head + tail in memory."""
    limits = limits or SpillLimits()
    kept: list[str] = []  # everything, while the body is still small enough to return whole
    kept_len = 0
    head = ""
    tail = ""
    total = 0
    import hashlib

    digest = hashlib.sha256()
    tmp: Path | None = None
    fd = -1
    try:
        for piece in pieces:
            if not piece:
                continue
            total += len(piece)
            data = piece.encode("utf-8", "surrogatepass")
            digest.update(data)
            if fd < 0:
                kept.append(piece)
                kept_len += len(piece)
                if kept_len <= limits.max_chars:
                    continue
                # Too big to return whole: from here on the body goes to a file.
                _make_private_dir(spill_dir)
                tmp = spill_dir / f".{_safe_label(label)}-{os.getpid()}-{id(kept)}.tmp"
                fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW, 0o600)
                so_far = "".join(kept)
                kept = []
                head = so_far[: limits.head_chars]
                tail = so_far[-limits.tail_chars :] if limits.tail_chars > 0 else ""
                write_all(fd, so_far.encode("utf-8", "surrogatepass"))
                continue
            write_all(fd, data)
            if limits.tail_chars > 0:
                tail = (tail + piece)[-limits.tail_chars :]
        if fd < 0:
            return "".join(kept)
        os.close(fd)
        fd = -1
        assert tmp is not None
        path = spill_dir / f"{_safe_label(label)}-{digest.hexdigest()[:16]}.txt"
        rename_over(tmp, path)
        tmp = None
        return _marked(head, tail, total, path)
    finally:
        if fd >= 0:
            os.close(fd)
        if tmp is not None:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(tmp)


def add_part(path: Path, text: str) -> None:
    """Append one piece of a body that arrives in parts (the pi sidecar's) to `path`, a
    hidden file in a spill directory that `bound_stream` reads back."""
    _make_private_dir(path.parent)
    fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
    try:
        write_all(fd, text.encode("utf-8", "surrogatepass"))
    finally:
        os.close(fd)


def shorten(text: str, path: Path, limits: SpillLimits) -> str:
    head = text[: limits.head_chars]
    tail = text[-limits.tail_chars :] if limits.tail_chars > 0 else ""
    return _marked(head, tail, len(text), path)


def _marked(head: str, tail: str, total: int, path: Path) -> str:
    omitted = total - len(head) - len(tail)
    marker = (
        f"\n[... {omitted} of {total} characters omitted; the full text is in {path}. "
        "Use the read tool with offset and limit on that path to see the rest ...]\n"
    )
    return head + marker + tail


def _make_private_dir(path: Path) -> None:
    path.mkdir(parents=True, exist_ok=True, mode=0o700)
