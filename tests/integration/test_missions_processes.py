"""The tests of tests/unit/test_missions.py that start processes (git, a runner, a
supervisor): the integration tier, as the unit tier starts none (tests/conftest.py)."""

from __future__ import annotations

import os

import pytest

from specialists.missions import ops
from specialists.missions.launch import (
    Launched,
    choose,
    link_after_launch,
)
from specialists.missions.store import MissionStore
from tests.support.tmpfs import fill, small_tmpfs


def test_a_full_disk_at_create_leaves_nothing_and_a_launch_only_warns(tmp_path):
    root = tmp_path / "disk" / ".specialists"
    with small_tmpfs(tmp_path / "disk", size="64k"):
        store = MissionStore(root, index_dir=tmp_path / "index")
        store.root.mkdir(parents=True)
        fill(store.root)
        with pytest.raises(OSError):
            ops.create(store, title="t", mission_id="m1")
        assert [n for n in os.listdir(store.root) if not n.startswith("filler")] == []
        warnings: list[str] = []
        launched = Launched("0123abcd", "echo", "do it", ("claude-x",))
        assert link_after_launch(root, choose(options=True), launched, warnings) is None
        assert len(warnings) == 1 and "runs without a mission record" in warnings[0]
