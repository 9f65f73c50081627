"""The tests of tests/unit/test_procs_cores.py that start processes (git, a runner, a
supervisor): the integration tier, as the unit tier starts none (tests/conftest.py)."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from specialists.errors import UserError
from specialists.procs.isolate import bwrap_argv, check_isolation, find_bwrap
from tests.unit.test_procs_cores import needs_bwrap


def test_a_broken_bwrap_fails_closed(tmp_path: Path) -> None:
    fake = tmp_path / "bwrap"
    fake.write_text("#!/bin/sh\necho 'bwrap: No permissions to create new namespace' >&2\nexit 1\n")
    fake.chmod(0o755)
    with pytest.raises(UserError, match=r"cannot build a sandbox here \(bwrap: No permissions"):
        check_isolation(str(fake), tmp_path)


@needs_bwrap
def test_writes_inside_cwd_work_and_outside_fail(tmp_path: Path) -> None:
    work = tmp_path / "work"
    work.mkdir()
    outside = tmp_path / "outside"
    outside.mkdir()
    (work / "escape").symlink_to(outside)
    bwrap = find_bwrap()
    check_isolation(bwrap, work)
    script = (
        "echo in > inside.txt && echo tmp > /tmp/t && "
        f"(echo out > {outside}/x.txt 2>/dev/null && echo WROTE-OUT || echo blocked) && "
        "(echo out > escape/y.txt 2>/dev/null && echo WROTE-LINK || echo link-blocked)"
    )
    done = subprocess.run(
        bwrap_argv(bwrap, work, ["/bin/sh", "-c", script]),
        capture_output=True,
        text=True,
        timeout=30,
        cwd=work,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["blocked", "link-blocked"]
    assert (work / "inside.txt").read_text() == "in\n"
    assert list(outside.iterdir()) == []
    assert not Path("/tmp/t").exists() or Path("/tmp/t").read_text() != "tmp\n"
