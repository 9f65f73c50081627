"""The tests of tests/unit/test_cli_errors.py that start processes (git, a runner, a
supervisor): the integration tier, as the unit tier starts none (tests/conftest.py)."""

from __future__ import annotations

from tests.unit.test_cli_errors import (
    root,  # noqa: F401 - fixtures
    run_cli,
)


def test_doctor_reports_a_state_dir_that_is_a_file(capsys, root):
    (root / ".specialists").write_text("x")
    code, out, err = run_cli(capsys, "doctor")
    assert code == 1
    assert "store:" in out and "Not a directory" in out
    assert "Traceback" not in err
