"""Oversized bodies go to a file; the model gets head, tail and the path (P8, R-O1..R-O3).

The guard looks only at size: a body that already contains a spill marker is still guarded
(R-O3), error bodies are treated like any other (R-O2), and a zero tail keeps no tail, never
the whole body.
"""

from __future__ import annotations

import hashlib
import os
import tempfile
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class SpillLimits:
    max_chars: int = 40_000
    head_chars: int = 6_000
    tail_chars: int = 2_000


def spill_text(text: str, spill_dir: Path, label: str = "output") -> Path:
    """Write `text` to spill_dir/<label>-<hash>.txt (atomic; same body, same file)."""
    digest = hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()[:16]
    safe_label = "".join(c if c.isalnum() or c in "-_" else "_" for c in label)[:40] or "output"
    spill_dir.mkdir(parents=True, exist_ok=True)
    path = spill_dir / f"{safe_label}-{digest}.txt"
    if not path.exists():
        fd, tmp = tempfile.mkstemp(dir=spill_dir, prefix=".tmp-")
        with os.fdopen(fd, "w", encoding="utf-8", errors="surrogateescape") as fh:
            fh.write(text)
        os.replace(tmp, path)
    return path


def guard(
    text: str, spill_dir: Path, label: str = "output", limits: SpillLimits | None = None
) -> str:
    """`text` unchanged when small enough, else head + marker with path + tail."""
    limits = limits or SpillLimits()
    if len(text) <= limits.max_chars:
        return text
    path = spill_text(text, spill_dir, label)
    return shorten(text, path, limits)


def shorten(text: str, path: Path, limits: SpillLimits) -> str:
    head = text[: limits.head_chars]
    tail = text[-limits.tail_chars :] if limits.tail_chars > 0 else ""
    omitted = len(text) - len(head) - len(tail)
    marker = (
        f"\n[... {omitted} of {len(text)} characters omitted; the full text is in {path}. "
        "Use the read tool with offset and limit on that path to see the rest ...]\n"
    )
    return head + marker + tail
