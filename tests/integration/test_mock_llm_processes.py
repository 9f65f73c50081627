"""The tests of tests/unit/test_mock_llm.py that start processes (git, a runner, a
supervisor): the integration tier, as the unit tier starts none (tests/conftest.py)."""

from __future__ import annotations

from typing import Any


def test_isolated_env_hides_real_home(isolated_env: Any) -> None:
    import os
    import subprocess
    from pathlib import Path

    assert Path(os.environ["HOME"]) == isolated_env.home
    root = Path(os.environ["SPECIALISTS_PROJECT_ROOT"])
    head = subprocess.run(
        ["git", "rev-parse", "--abbrev-ref", "HEAD"], cwd=root, capture_output=True, text=True
    )
    assert head.stdout.strip() == "main"
    assert os.environ["ANTHROPIC_API_KEY"] == "dummy"
    assert not any(k.lower() in ("http_proxy", "https_proxy") for k in os.environ)
