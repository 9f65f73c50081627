"""The native tools: tiers, path confinement, bash limits. Runs real bash processes."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from specialists.events.spill import SpillLimits
from specialists.native.messages import ToolCall
from specialists.native.tools import (
    ALL_TOOLS,
    TIER_TOOLS,
    ToolContext,
    ToolFailure,
    execute,
    tools_for_permission,
)


@pytest.fixture
def ctx(tmp_path: Path) -> ToolContext:
    work = tmp_path / "work"
    work.mkdir()
    return ToolContext(cwd=work, spill_dir=tmp_path / "spill", bash_timeout_s=10)


def run(ctx: ToolContext, name: str, permission: str = "MEDIUM", **args: object):  # type: ignore[no-untyped-def]
    return execute(ToolCall("c1", name, args), tools_for_permission(permission), ctx)


def test_tier_table_matches_pi() -> None:
    assert TIER_TOOLS["READ_ONLY"] == ("read", "bash", "grep", "find", "ls")
    assert TIER_TOOLS["BASH_ONLY"] == ("bash",)
    for tier in ("LOW", "MEDIUM", "HIGH"):
        assert set(tools_for_permission(tier)) == set(ALL_TOOLS)
    assert set(tools_for_permission("read_only")) == {"read", "bash", "grep", "find", "ls"}
    with pytest.raises(ToolFailure, match="unknown permission tier"):
        tools_for_permission("ROOT")


@pytest.mark.parametrize("tool", ["read", "write", "edit", "ls", "grep", "find"])
def test_paths_outside_cwd_are_refused(ctx: ToolContext, tool: str) -> None:
    outside = ctx.cwd.parent / "secret.txt"
    outside.write_text("secret")
    args: dict[str, object] = {"path": str(outside)}
    if tool == "write":
        args["content"] = "x"
    if tool == "edit":
        args["edits"] = [{"oldText": "secret", "newText": "leak"}]
    if tool in ("grep", "find"):
        args = {"pattern": "secret", "path": "../"}
    result = run(ctx, tool, **args)
    assert result.is_error and "outside the working directory" in result.text
    assert outside.read_text() == "secret"


def test_symlink_escape_is_refused(ctx: ToolContext) -> None:
    (ctx.cwd.parent / "target").mkdir()
    os.symlink(ctx.cwd.parent / "target", ctx.cwd / "link")
    result = run(ctx, "write", path="link/x.txt", content="x")
    assert result.is_error and "outside" in result.text


def test_read_window_and_continuation_hint(ctx: ToolContext) -> None:
    (ctx.cwd / "f.txt").write_text("".join(f"line {n}\n" for n in range(1, 11)))
    result = run(ctx, "read", path="f.txt", offset=3, limit=2)
    assert result.text.startswith("line 3\nline 4\n")
    assert "Use offset=5 to continue" in result.text
    assert run(ctx, "read", path="f.txt", offset=50).is_error
    assert "binary" in _binary_read(ctx)


def _binary_read(ctx: ToolContext) -> str:
    (ctx.cwd / "b.bin").write_bytes(b"\x00\x01\x02")
    return run(ctx, "read", path="b.bin").text


def test_read_may_open_spill_files(ctx: ToolContext) -> None:
    ctx.spill_dir.mkdir()
    (ctx.spill_dir / "s.txt").write_text("spilled body")
    assert run(ctx, "read", path=str(ctx.spill_dir / "s.txt")).text == "spilled body"
    assert run(ctx, "write", path=str(ctx.spill_dir / "s.txt"), content="x").is_error


def test_write_then_edit(ctx: ToolContext) -> None:
    assert not run(ctx, "write", path="d/a.py", content="x = 1\ny = 2\n").is_error
    result = run(
        ctx,
        "edit",
        path="d/a.py",
        edits=[
            {"oldText": "x = 1", "newText": "x = 10"},
            {"oldText": "y = 2", "newText": "y = 20"},
        ],
    )
    assert not result.is_error, result.text
    assert (ctx.cwd / "d/a.py").read_text() == "x = 10\ny = 20\n"
    missing = run(ctx, "edit", path="d/a.py", edits=[{"oldText": "nope", "newText": ""}])
    assert missing.is_error and "not found" in missing.text
    (ctx.cwd / "dup.txt").write_text("a a")
    dup = run(ctx, "edit", path="dup.txt", edits=[{"oldText": "a", "newText": "b"}])
    assert dup.is_error and "2 places" in dup.text


def test_grep_find_ls(ctx: ToolContext) -> None:
    (ctx.cwd / "src").mkdir()
    (ctx.cwd / "src" / "a.py").write_text("def alpha():\n    return 1\n")
    (ctx.cwd / "src" / "b.txt").write_text("alpha beta\n")
    (ctx.cwd / ".git").mkdir()
    (ctx.cwd / ".git" / "x.py").write_text("alpha\n")
    grep = run(ctx, "grep", pattern="alpha", glob="*.py")
    assert grep.text == "src/a.py:1: def alpha():"
    assert "No matches" in run(ctx, "grep", pattern="zeta").text
    assert run(ctx, "grep", pattern="(").is_error
    assert run(ctx, "find", pattern="*.py").text == "src/a.py"
    assert run(ctx, "find", pattern="src/**/*.txt").text == "src/b.txt"
    assert run(ctx, "ls").text.splitlines() == [".git/", "src/"]


def test_guard_spills_every_tool_but_read(ctx: ToolContext) -> None:
    big = "yyyyyyyyyyyyyyyyyyyy\n" * 200
    (ctx.cwd / "big.txt").write_text(big)
    limits = SpillLimits(max_chars=1000, head_chars=100, tail_chars=0)
    tools = tools_for_permission("MEDIUM")
    grep = execute(ToolCall("g", "grep", {"pattern": "y"}), tools, ctx, limits)
    assert "characters omitted" in grep.text and len(grep.text) < 1000
    assert grep.text.endswith("...]\n"), "zero tail keeps no tail"
    read = execute(ToolCall("r", "read", {"path": "big.txt"}), tools, ctx, limits)
    assert read.text == big
