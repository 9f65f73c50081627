"""The tests of tests/unit/test_native_tools.py that start processes (git, a runner, a
supervisor): the integration tier, as the unit tier starts none (tests/conftest.py)."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from specialists.events.spill import SpillLimits
from specialists.native.tools import (
    ToolContext,
)
from tests.unit.test_native_tools import (
    ctx,  # noqa: F401 - fixtures
    run,
)


@pytest.mark.parametrize(
    ("permission", "tool", "allowed"),
    [
        ("READ_ONLY", "write", False),
        ("READ_ONLY", "edit", False),
        ("READ_ONLY", "read", True),
        ("BASH_ONLY", "read", False),
        ("BASH_ONLY", "bash", True),
        ("LOW", "write", True),
    ],
)
def test_permission_tiers_gate_tools(
    ctx: ToolContext, permission: str, tool: str, allowed: bool
) -> None:
    (ctx.cwd / "f.txt").write_text("hello\n")
    args = {
        "write": {"path": "g.txt", "content": "x"},
        "edit": {"path": "f.txt", "edits": [{"oldText": "hello", "newText": "bye"}]},
        "read": {"path": "f.txt"},
        "bash": {"command": "true"},
    }[tool]
    result = run(ctx, tool, permission, **args)
    assert (not result.is_error) is allowed
    if not allowed:
        assert "unknown tool" in result.text


def test_bash_output_and_exit_code(ctx: ToolContext) -> None:
    ok = run(ctx, "bash", command="echo out; echo err >&2")
    assert not ok.is_error and "out" in ok.text and "err" in ok.text
    bad = run(ctx, "bash", command="exit 3")
    assert bad.is_error and "[exit code 3]" in bad.text
    assert run(ctx, "bash", command="pwd").text.strip() == str(ctx.cwd)


def test_bash_timeout_kills_the_process_group(ctx: ToolContext, tmp_path: Path) -> None:
    marker = tmp_path / "survivor"
    start = time.monotonic()
    result = run(ctx, "bash", command=f"(sleep 1; touch {marker}) & sleep 30", timeout=0.3)
    elapsed = time.monotonic() - start
    assert result.is_error and "timed out after 0.3 s" in result.text
    assert elapsed < 5
    time.sleep(1.5)
    assert not marker.exists(), "the background child must die with the group"


def test_bash_default_timeout_applies(tmp_path: Path) -> None:
    work = tmp_path / "w"
    work.mkdir()
    ctx = ToolContext(cwd=work, spill_dir=tmp_path / "s", bash_timeout_s=0.3)
    result = run(ctx, "bash", command="sleep 10")
    assert result.is_error and "timed out after 0.3 s" in result.text


def test_bash_output_is_capped_with_head_tail_and_spill(tmp_path: Path) -> None:
    """bash output passes the one result guard as it arrives: head, marker, tail inline, the
    whole output in one spill file (never a second spill of the already bounded text)."""
    work = tmp_path / "w"
    work.mkdir()
    limits = SpillLimits(max_chars=2000, head_chars=400, tail_chars=1600)
    ctx = ToolContext(cwd=work, spill_dir=tmp_path / "s", result_limits=limits)
    result = run(ctx, "bash", command="seq 1 200000")
    assert len(result.text) < 2300 and "characters omitted" in result.text
    assert result.text.startswith("1\n2\n3\n")
    assert result.text.rstrip().endswith("200000")
    (spill,) = list((tmp_path / "s").glob("bash-*.txt"))
    assert spill.read_text().splitlines() == [str(n) for n in range(1, 200001)]


def test_bash_returns_when_background_child_keeps_pipe(ctx: ToolContext) -> None:
    start = time.monotonic()
    result = run(ctx, "bash", command="sleep 20 & echo started")
    assert "started" in result.text
    assert time.monotonic() - start < 3
