"""An agent file's `tools:` is a strict allowlist (seed 004): an unknown name fails the file
with that name, `read, grep, find, ls` gives no shell on any runner, and each runner's own
controls (pi --tools, Claude Code --tools/--allowedTools, Codex, the native set) are narrowed
to it. The tier stays the floor: a listed tool the tier does not grant is never given."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from specialists.base.errors import ConfigError, UserError
from specialists.catalog import load_catalog, load_specialist_file
from specialists.catalog.tools import TABLE_TOOLS, allowlist, canonical
from specialists.runners.tiers import check_runner_tools, claude_controls, pi_tools


def _agent(root: Path, name: str, front: str, where: str = ".pi/agents") -> Path:
    path = root / where / f"{name}.md"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(f"---\nname: {name}\n{front}\n---\nYou look.\n")
    return path


def test_the_table_tools_known_here_are_the_registrys() -> None:
    from specialists.native.agent_table import TOOLS

    assert {t.name for t in TOOLS} == TABLE_TOOLS


def test_read_grep_find_ls_is_read_only_and_adds_no_bash(tmp_path: Path) -> None:
    spec = load_specialist_file(_agent(tmp_path, "scout", "tools: read, grep, find, ls"))
    assert spec.permission == "READ_ONLY" and spec.tools == ("read", "grep", "find", "ls")
    assert pi_tools(spec.permission) == "read,bash,grep,find,ls"  # the tier alone has bash
    assert pi_tools(spec.permission, spec.tools) == "read,grep,find,ls"
    claude = claude_controls(spec.permission, allow=spec.tools)
    assert claude.tools == ("Read", "Grep", "Glob") and "Bash" not in claude.allowed
    for runner in ("pi", "native", "claude"):
        check_runner_tools("scout", runner, spec.tools)
    with pytest.raises(UserError) as info:  # codex reads only through its shell
        check_runner_tools("scout", "codex", spec.tools)
    assert "allows no bash" in info.value.message


def test_claude_names_are_read_as_the_same_tools(tmp_path: Path) -> None:
    text = "tools: Read, Grep, Glob, mcp__specialists__bg_run, spawn_thread"
    spec = load_specialist_file(_agent(tmp_path, "r", text, ".claude/agents"))
    assert spec.tools == ("read", "grep", "find", "bg_run", "spawn_thread")
    assert spec.permission == "READ_ONLY"
    assert claude_controls("READ_ONLY", allow=spec.tools).tools == ("Read", "Grep", "Glob")


@pytest.mark.parametrize(
    ("front", "said"),
    [
        ("tools: read, grpe", "tools[1]: no agent has a tool named 'grpe'"),
        ("tools: [Read, FetchAll]", "tools[1]: no agent has a tool named 'FetchAll'"),
        (
            "tools: read, ./tools/fixture-search.ts",
            "tools[1]: './tools/fixture-search.ts' is a path",
        ),
        ("tools: read, ../../etc/passwd", "is a path"),
        ("tools: Read(src/**)", "a permission rule is only understood on Bash"),
        ("tools: mcp__github__create_issue", "no agent has a tool named 'mcp__github__"),
        ("disallowedTools: Bsh", "disallowedTools[0]: no agent has a tool named 'Bsh'"),
    ],
)
def test_a_tool_no_agent_has_fails_the_file_with_its_name(
    tmp_path: Path, front: str, said: str
) -> None:
    path = _agent(tmp_path, "x", front)
    with pytest.raises(ConfigError) as info:
        load_specialist_file(path)
    line = info.value.one_line()
    assert said in line and "\n" not in line, line


def test_an_unknown_tool_is_one_problem_line_in_list_and_run_refuses_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from specialists.fronts.cli.main import main

    root = Path(os.environ["SPECIALISTS_PROJECT_ROOT"])  # conftest's isolated project
    _agent(root, "typo", "tools: read, grpe")
    assert main(["list"]) == 0
    err = capsys.readouterr().err.strip().splitlines()
    assert [ln for ln in err if "typo.md" in ln] == [
        f"{root / '.pi/agents/typo.md'}: tools[1]: no agent has a tool named 'grpe'"
    ]
    assert main(["agents", "list"]) == 0
    assert "grpe" in capsys.readouterr().err
    assert main(["run", "typo", "--prompt", "hi"]) == 2
    err = capsys.readouterr().err
    assert "no agent has a tool named 'grpe'" in err and len(err.strip().splitlines()) <= 2


def test_yaml_definitions_take_the_same_allowlist(tmp_path: Path) -> None:
    path = tmp_path / "specialists" / "y.specialist.yaml"
    path.parent.mkdir()
    path.write_text(
        "metadata: {name: y}\nexecution: {permission_required: MEDIUM, tools: 'read, edit'}\n"
    )
    spec = load_specialist_file(path)
    assert spec.permission == "MEDIUM" and spec.tools == ("read", "edit")
    assert pi_tools("MEDIUM", spec.tools) == "read,edit"
    path.write_text("metadata: {name: y}\nexecution: {tools: [read, shell]}\n")
    with pytest.raises(ConfigError, match=r"execution.tools\[1\]: no agent has a tool named"):
        load_specialist_file(path)
    path.write_text("metadata: {name: y}\n")
    assert load_specialist_file(path).tools is None  # no list: the tier's tools


def test_disallowed_without_tools_removes_from_every_tool() -> None:
    allowed = allowlist(None, ["Bash"])
    assert allowed is not None and "bash" not in allowed and "edit" in allowed
    assert pi_tools("MEDIUM", allowed) == "read,edit,write,grep,find,ls"
    assert allowlist(None, []) is None
    assert allowlist(["read", "Read", "READ"]) == ("read",)  # one tool, listed once


def test_the_tier_is_the_floor_a_listed_tool_it_does_not_grant_is_not_given() -> None:
    allow = ("read", "edit", "bash")
    assert pi_tools("READ_ONLY", allow) == "read,bash"
    assert pi_tools("BASH_ONLY", allow) == "bash"
    low = claude_controls("LOW", allow=allow)
    assert low.tools == ("Read", "Edit") and "Bash" not in low.allowed
    assert pi_tools("MEDIUM", ()) == ""  # an empty list: no agent tool at all
    assert claude_controls("MEDIUM", allow=()).tools == ()


def test_claude_bash_rules_are_approved_as_rules_and_hold_even_on_high() -> None:
    allow = (canonical("Read"), canonical("Bash(git:*)"))
    assert allow == ("read", "bash(git:*)")
    medium = claude_controls("MEDIUM", allow=allow)
    assert medium.tools == ("Read", "Bash") and medium.allowed == ("Read", "Bash(git:*)")
    high = claude_controls("HIGH", allow=allow)
    assert high.permission_mode != "bypassPermissions"  # bypass would approve any Bash
    assert high.allowed == ("Read", "Bash(git:*)")
    plain_high = claude_controls("HIGH", allow=("read", "edit"))
    assert plain_high.permission_mode == "bypassPermissions"
    assert plain_high.tools == ("Read", "Edit")
    with pytest.raises(UserError, match="does not have: bash\\(git:\\*\\)"):
        check_runner_tools("g", "pi", allow)


@pytest.mark.parametrize(
    ("runner", "allow", "said"),
    [
        ("pi", ("read", "webfetch"), "the pi runner does not have: webfetch"),
        ("native", ("read", "Skill"), "the native runner does not have: Skill"),
        ("codex", ("bash", "todowrite"), "the codex runner does not have: todowrite"),
        ("command", ("read",), "the command runner does not have: read"),
    ],
)
def test_a_tool_the_runner_lacks_is_refused_before_the_job_exists(
    runner: str, allow: tuple[str, ...], said: str
) -> None:
    with pytest.raises(UserError) as info:
        check_runner_tools("s", runner, allow)
    assert said in info.value.message
    check_runner_tools("s", runner, None)  # no list: nothing to refuse


def test_the_native_job_gets_only_the_listed_tools(tmp_path: Path) -> None:
    from specialists.native.tool_settings import Settings
    from specialists.runners.base import LaunchSpec
    from specialists.runners.native import job_tools

    job_dir = tmp_path / ".specialists" / "jobs" / "j1"
    job_dir.mkdir(parents=True)
    spec = LaunchSpec(
        job_id="j1",
        job_dir=job_dir,
        cwd=tmp_path,
        prompt="p",
        system_prompt="",
        model=None,
        permission="READ_ONLY",
        tools=("read", "grep", "find", "ls"),
        options={"table_tools": False},
    )
    made = job_tools(spec, Settings(), {}, notify=lambda _m: None, wall=lambda: 0.0)
    assert set(made.tools) == {"read", "grep", "find", "ls"}


def test_catalog_keeps_loading_the_other_files(tmp_path: Path) -> None:
    _agent(tmp_path, "bad", "tools: read, nope")
    _agent(tmp_path, "good", "tools: read")
    catalog = load_catalog(tmp_path)
    assert "good" in catalog and "bad" not in catalog
    assert any("nope" in p.one_line() for p in catalog.problems)


def test_pi_gets_no_builtin_tool_when_the_list_names_none(tmp_path: Path) -> None:
    from specialists.runners.base import LaunchSpec
    from specialists.runners.pi import build_argv

    def argv(tools: tuple[str, ...] | None) -> list[str]:
        spec = LaunchSpec("j", tmp_path, tmp_path, "p", "", None, "READ_ONLY", tools=tools)
        return build_argv(
            ["pi"], spec, session_file=tmp_path / "s", system_prompt_file=None, skill_paths=()
        )

    scout = argv(("read", "grep", "find", "ls"))
    assert scout[scout.index("--tools") + 1] == "read,grep,find,ls"
    assert "--no-builtin-tools" not in scout
    only_table = argv(("bg_run",))
    assert only_table[only_table.index("--tools") + 1] == ""
    assert "--no-builtin-tools" in only_table
    assert argv(None)[argv(None).index("--tools") + 1] == "read,bash,grep,find,ls"
