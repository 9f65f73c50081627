"""The tests of tests/unit/test_native_errors.py that start processes (git, a runner, a
supervisor): the integration tier, as the unit tier starts none (tests/conftest.py)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from specialists.native.breaker import breaker_health
from tests.unit.test_native_errors import _FAIL_ONCE


def test_breaker_state_survives_across_processes(tmp_path: Path) -> None:
    src = Path(__file__).resolve().parents[2] / "src"

    def one_cli_run(n: int) -> str:
        proc = subprocess.run(
            [sys.executable, "-c", _FAIL_ONCE, str(tmp_path), str(n)],
            capture_output=True,
            text=True,
            env={"PYTHONPATH": str(src), "PATH": "/usr/bin:/bin"},
            timeout=30,
            check=True,
        )
        return proc.stdout.strip()

    assert one_cli_run(1) == "CALLED"
    assert one_cli_run(2) == "CALLED"
    assert one_cli_run(3) == "REFUSED", "the third process must see the breaker the others opened"
    (health,) = breaker_health(tmp_path)
    assert health["state"] == "open" and "process 2" in health["last_error"]
