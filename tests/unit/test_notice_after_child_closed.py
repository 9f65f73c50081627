"""`told_by_child_closed`: the generic end notice is left out for a thread's parent only when
the child's child_closed is provably in that parent's inbox; anything else (no thread, a
planted FIFO or symlink, a bad key, no inbox) keeps the notice."""

from __future__ import annotations

import json
import os
from pathlib import Path

from specialists.events.told import told_by_child_closed

PARENT = "job-1a2b3c4d"
TID = "t-0123456789abcdef"


def _inbox(state: Path) -> Path:
    path = state / "owners" / PARENT / "events.jsonl"
    path.parent.mkdir(parents=True)
    return path


def test_found_only_when_the_child_closed_is_in_the_parents_inbox(tmp_path: Path) -> None:
    thread = {"id": TID, "parent": PARENT}
    assert told_by_child_closed(tmp_path, thread) is None  # no inbox yet
    path = _inbox(tmp_path)
    path.write_text(json.dumps({"id": "other:child_closed:1"}) + "\n")
    assert told_by_child_closed(tmp_path, thread) is None
    with path.open("a") as f:
        f.write(json.dumps({"id": f"{TID}:child_closed:1", "kind": "child_closed"}) + "\n")
    assert told_by_child_closed(tmp_path, thread) == PARENT
    assert told_by_child_closed(tmp_path, None) is None  # not a thread
    assert told_by_child_closed(tmp_path, {"id": "../x", "parent": PARENT}) is None
    assert told_by_child_closed(tmp_path, {"id": TID, "parent": "../../etc"}) is None


def test_a_planted_fifo_or_symlink_is_never_read(tmp_path: Path) -> None:
    path = _inbox(tmp_path)
    os.mkfifo(path)
    assert told_by_child_closed(tmp_path, {"id": TID, "parent": PARENT}) is None  # no hang
    path.unlink()
    real = tmp_path / "real.jsonl"
    real.write_text(json.dumps({"id": f"{TID}:child_closed:1"}) + "\n")
    path.symlink_to(real)
    assert told_by_child_closed(tmp_path, {"id": TID, "parent": PARENT}) is None
