"""The tests of tests/unit/test_store_damage.py that start processes (git, a runner, a
supervisor): the integration tier, as the unit tier starts none (tests/conftest.py)."""

from __future__ import annotations

import pytest

from tests.unit.test_store_damage import _status_text, cli, finished, root, store  # noqa: F401 - fixtures

pytestmark = pytest.mark.timeout(60)


def test_a_damaged_status_does_not_stop_run(capsys, store, root):
    """`run` starts with gc over every job: a damaged one must not stop it."""
    bad = finished(store, root)
    (store.job_dir(bad) / "status.json").write_text(_status_text(bad, tokens={"input": "x"}))
    code, out, err = cli(capsys, "run", "echo", "--prompt", "hello")
    assert code == 0, err
    assert out.strip() == "hello"


def test_records_module_stays_cheap_to_import():
    import subprocess
    import sys

    out = subprocess.run(
        [sys.executable, "-X", "importtime", "-c", "import specialists.jobs.store"],
        capture_output=True,
        text=True,
        check=True,
    )
    loaded = {line.rsplit("|", 1)[-1].strip() for line in out.stderr.splitlines()}
    assert "dataclasses" not in loaded and "inspect" not in loaded
