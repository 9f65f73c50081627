"""The pi extension's pure logic (core.mjs) under plain node: tests/node/*.test.mjs.

node's own test runner, no npm packages; skipped (with the reason) where node is missing.
"""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from specialists.pi_extension import EXTENSION_DIR, EXTENSION_FILE

NODE_TESTS = Path(__file__).resolve().parents[1] / "node"


def test_the_extension_ships_inside_the_package() -> None:
    """pi loads these from the installed package (`pi -e`, `install --pi`)."""
    assert EXTENSION_FILE.is_file() and EXTENSION_FILE.name == "index.ts"
    assert (EXTENSION_DIR / "core.mjs").is_file() and (EXTENSION_DIR / "delivery.mjs").is_file()
    assert './core.mjs"' in EXTENSION_FILE.read_text()


def test_core_logic_under_node() -> None:
    node = shutil.which("node")
    if node is None:
        pytest.skip("node is not installed (Node.js >= 20 runs tests/node)")
    files = sorted(str(p) for p in NODE_TESTS.glob("*.test.mjs"))
    assert files, "no node tests found"
    proc = subprocess.run(
        [node, "--test", "--test-reporter=tap", *files],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert proc.returncode == 0, proc.stdout[-4000:] + proc.stderr[-2000:]
    assert "# fail 0" in proc.stdout
