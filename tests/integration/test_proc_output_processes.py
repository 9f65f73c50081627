"""The tests of tests/unit/test_proc_output.py that start processes (git, a runner, a
supervisor): the integration tier, as the unit tier starts none (tests/conftest.py)."""

from __future__ import annotations

from pathlib import Path

from specialists.procs.feed import OutputFeed
from tests.support.tmpfs import fill, small_tmpfs
from tests.unit.test_proc_output import batcher


def test_a_full_disk_stops_the_log_but_not_the_counts_the_tail_or_the_watch(
    tmp_path: Path,
) -> None:
    """The log stops for good at ENOSPC (no hole in it); lines are still counted and watched,
    and the in-memory tail still has the last output for the job's result and job_exit."""
    with small_tmpfs(tmp_path / "disk") as disk:
        feed = OutputFeed(disk / "output.log", batcher("ERROR"))
        fill(disk)
        batches = feed.add(b"line one\nERROR after the disk filled\n", 0)
        feed.add(b"last words\n", 1)
        assert feed.log_problem == "the disk is full"
        assert feed.lines == 3 and feed.bytes == 48 and feed.logged < feed.bytes
        assert [list(b.lines) for b in batches] == [["ERROR after the disk filled"]]
        assert feed.tail_text().endswith("last words\n")
        feed.close()
