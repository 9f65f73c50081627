"""sandbox/ pure rules: ids, merged-ness (R-S7), git's -z formats with hostile paths, records."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from specialists.base.errors import StoreError
from specialists.features.sandbox.backend import SandboxError, SquashMarker
from specialists.features.sandbox.meta import MetaStore, from_dict
from specialists.features.sandbox.rules import (
    branch_name,
    check_id,
    exclude_pattern,
    id_of_branch,
    merged_state,
    parse_merge_tree,
    parse_numstat,
    parse_status,
    parse_worktrees,
)

A, B, C = "a" * 40, "b" * 40, "c" * 40


@pytest.mark.parametrize("bad", ["", ".", "..", "a/b", "a.b", "a b", "-a", "x" * 65, "ü", 3, None])
def test_ids_outside_the_safe_alphabet_are_refused(bad):
    with pytest.raises(SandboxError, match="invalid sandbox id"):
        check_id(bad)


def test_branch_names_round_trip():
    assert branch_name("t-1") == "sandbox-t-1"
    assert id_of_branch("sandbox-t-1") == "t-1"
    assert id_of_branch("sandbox-a.b") is None and id_of_branch("main") is None


def never(_tip: str) -> bool:
    return False


def always(_tip: str) -> bool:
    return True


@pytest.mark.parametrize(
    ("tip", "base", "markers", "ancestor", "expected"),
    [
        (None, A, (), never, (False, "branch gone")),
        (B, None, (SquashMarker(B, "/t", 1, True),), always, (False, "no record of its base")),
        (
            A,
            A,
            (SquashMarker(A, "/t", 1, True),),
            always,
            (False, "fresh: no commits past its base"),
        ),
        (B, A, (SquashMarker(B, "/t", 1, False),), never, (True, "squashed at this tip")),
        (C, A, (SquashMarker(B, "/t", 1, False),), never, (False, "moved after its squash")),
        (C, A, (SquashMarker(B, "/t", 1, False),), always, (True, "in HEAD's history")),
        (B, A, (), always, (True, "in HEAD's history")),
        (B, A, (), never, (False, "unmerged")),
    ],
)
def test_merged_state_is_r_s7(tip, base, markers, ancestor, expected):
    assert merged_state(tip, base, markers, ancestor) == expected


def test_worktree_records_keep_odd_paths_whole():
    out = (
        b"worktree /repo\0HEAD " + A.encode() + b"\0branch refs/heads/main\0\0"
        b"worktree /repo/odd\nname \xff\0HEAD " + B.encode() + b"\0detached\0prunable gone\0\0"
        b"worktree /bare\0bare\0\0"
    )
    trees = parse_worktrees(out)
    assert [(t.path, t.branch, t.prunable, t.bare) for t in trees] == [
        ("/repo", "refs/heads/main", False, False),
        ("/repo/odd\nname " + os.fsdecode(b"\xff"), None, True, False),
        ("/bare", None, False, True),
    ]


def test_status_entries_skip_the_source_of_a_rename():
    out = b"R  new name.txt\0old name.txt\0 M a\nb\0?? untracked\0!! ignored.log\0"
    assert [(e.code, e.path) for e in parse_status(out)] == [
        ("R ", "new name.txt"),
        (" M", "a\nb"),
        ("??", "untracked"),
        ("!!", "ignored.log"),
    ]
    assert parse_status(b"") == []


def test_numstat_reads_renames_and_binaries():
    out = b"3\t1\tplain.txt\0-\t-\tblob.bin\x000\t0\t\0old.py\0new.py\0"
    assert parse_numstat(out) == [("plain.txt", 3, 1), ("blob.bin", None, None), ("new.py", 0, 0)]


def test_merge_tree_output_gives_the_tree_and_each_conflict_once():
    assert parse_merge_tree(A.encode() + b"\0") == (A, ())
    assert parse_merge_tree(A.encode() + b"\0f\0f\0g\0\0Auto-merging f\0") == (A, ("f", "g"))
    with pytest.raises(SandboxError, match="unexpected output"):
        parse_merge_tree(b"usage: git merge-tree ...")


def test_exclude_patterns_escape_gitignore_syntax():
    assert exclude_pattern(".specialists/sandboxes") == "/.specialists/sandboxes/"
    assert exclude_pattern("#odd [1]/!x*?/.specialists/sandboxes") == (
        r"/\#odd\ \[1\]/\!x\*\?/.specialists/sandboxes/"
    )


def _record(**over):
    data = {
        "schema": 1,
        "id": "t1",
        "branch": "sandbox-t1",
        "base": "HEAD",
        "base_sha": A,
        "origin": "/repo",
        "parent": None,
        "created_at_ms": 5,
        "removed_at_ms": None,
        "squashes": [{"tip": B, "target": "/repo", "at_ms": 6, "committed": False, "commit": None}],
    }
    data.update(over)
    return data


def test_a_record_round_trips_and_its_path_is_derived_not_read(tmp_path):
    sb = from_dict(_record(path="/etc"), tmp_path, "t1")  # a planted path is never used
    assert sb.path == tmp_path / "t1" and sb.squashes[0].tip == B


@pytest.mark.parametrize(
    "over",
    [
        {"schema": 2},
        {"id": "t2"},
        {"branch": "main"},
        {"origin": "relative/path"},
        {"base_sha": "HEAD"},
        {"created_at_ms": True},
        {"created_at_ms": 1.5},
        {"created_at_ms": -1},
        {"parent": "../x"},
        {"squashes": {}},
        {"squashes": [{"tip": B, "target": "/r", "at_ms": 1, "committed": 1}]},
        {"squashes": [None]},
    ],
)
def test_a_record_with_a_wrong_field_is_damaged(tmp_path, over):
    with pytest.raises(StoreError, match="sandbox record"):
        from_dict(_record(**over), tmp_path, "t1")


def test_a_huge_or_fifo_record_is_a_problem_and_does_not_hang(tmp_path):
    store = MetaStore(tmp_path / "sandboxes")
    store.ensure_root()
    (store.root / "big.json").write_text(json.dumps(_record()) + " " * 300_000)
    os.mkfifo(store.root / "fifo.json")
    sandboxes, problems = store.read_all()
    assert sandboxes == []
    assert len(problems) == 2
    assert any("too large" in p.what for p in problems)
    assert any("regular file" in p.what for p in problems)


def test_a_root_that_is_a_file_is_refused(tmp_path):
    (tmp_path / "sandboxes").write_text("not a directory")
    with pytest.raises(SandboxError, match="not a directory"):
        MetaStore(tmp_path / "sandboxes").ensure_root()


def test_records_are_private_and_written_whole(tmp_path):
    store = MetaStore(tmp_path / "sandboxes")
    store.ensure_root()
    sb = from_dict(_record(), store.root, "t1")
    old = os.umask(0)
    try:
        store.write(sb)
    finally:
        os.umask(old)
    path = Path(store.file("t1"))
    assert (path.stat().st_mode & 0o777) == 0o600
    assert store.read("t1") == (sb, None)
    assert [p.name for p in store.root.iterdir()] == ["t1.json"]
