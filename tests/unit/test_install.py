"""init / install / uninstall: merge into a project that already has user settings."""

from __future__ import annotations

import copy
import json
import os
import stat
from pathlib import Path

import pytest

from specialists.base.errors import UserError
from specialists.fronts import install
from specialists.fronts.cli.main import main
from specialists.fronts.hooks import stop as stop_mod

USER_SETTINGS = {
    "permissions": {"allow": ["Bash(npm test)"]},
    "hooks": {
        "UserPromptSubmit": [{"hooks": [{"type": "command", "command": "my-prompt-hook"}]}],
        "PreToolUse": [{"matcher": "Bash", "hooks": [{"type": "command", "command": "guard.sh"}]}],
    },
}
USER_MCP = {"mcpServers": {"github": {"command": "gh-mcp", "args": []}}}


@pytest.fixture
def project() -> Path:
    root = Path(os.environ["SPECIALISTS_PROJECT_ROOT"])
    (root / ".claude").mkdir()
    (root / ".claude" / "settings.json").write_text(json.dumps(USER_SETTINGS, indent=4))
    (root / ".mcp.json").write_text(json.dumps(USER_MCP))
    (root / ".gitignore").write_text("node_modules/\n")
    return root


def read(path: Path) -> dict:
    return json.loads(path.read_text())


def hook(name: str) -> str:
    """The command we write for `specialists hook <name>`, with this interpreter."""
    entry = next(h for h in install.HOOKS if h.name == name)
    return install.hook_command(install.this_python(), entry)


def run_cli(*argv: str) -> int:
    return main(list(argv))


# --------------------------------------------------------------------------- pure merges


def test_merge_hooks_appends_and_is_idempotent():
    merged, notes = install.merge_hooks(USER_SETTINGS)
    assert merged["permissions"] == USER_SETTINGS["permissions"]
    ups = merged["hooks"]["UserPromptSubmit"]
    assert ups[0] == USER_SETTINGS["hooks"]["UserPromptSubmit"][0]  # theirs first, untouched
    assert ups[1] == {
        "hooks": [{"type": "command", "command": hook("user-prompt-submit"), "timeout": 10}]
    }
    assert merged["hooks"]["SessionStart"][0]["hooks"][0]["command"] == hook("session-start")
    assert all(n.startswith("added") for n in notes)
    again, notes = install.merge_hooks(merged)
    assert again == merged and all("already" in n for n in notes)


def test_the_turn_hooks_are_registered_beside_a_users_own():
    """PreToolUse on Bash (the bash guard) and the file tools (the claims guard), PostToolUse on
    every tool (events, result guard), and Stop with a timeout above its longest wait; a
    wave-1 install gains them on re-install."""
    theirs = {"matcher": "Edit", "hooks": [{"type": "command", "command": "fmt"}]}
    wave1, _ = install.merge_hooks({"hooks": {"PostToolUse": [theirs]}})
    for event in ("PreToolUse", "PostToolUse", "Stop"):
        wave1["hooks"][event] = [g for g in wave1["hooks"][event] if g == theirs]
        if not wave1["hooks"][event]:
            del wave1["hooks"][event]
    merged, notes = install.merge_hooks(wave1)
    assert merged["hooks"]["PreToolUse"] == [
        {
            "matcher": "Bash|Write|Edit|MultiEdit|NotebookEdit",
            "hooks": [{"type": "command", "command": hook("pre-tool-use"), "timeout": 10}],
        }
    ]
    post = merged["hooks"]["PostToolUse"]
    assert post[0] == theirs and "matcher" not in post[1]
    assert post[1]["hooks"][0]["command"] == hook("post-tool-use")
    (stop_group,) = merged["hooks"]["Stop"]
    assert stop_group["hooks"][0]["timeout"] > stop_mod.STOP_WAIT_S
    assert sum("already" in n for n in notes) == 2
    assert install.unmerge_hooks(merged)[0] == {"hooks": {"PostToolUse": [theirs]}}


def test_an_install_that_matched_bash_alone_gains_the_file_tools():
    """Our PreToolUse group of an earlier install (Bash only) is widened in place; a group
    that also holds a user's hook keeps its matcher."""
    merged, _ = install.merge_hooks({})
    ours = merged["hooks"]["PreToolUse"][0]
    ours["matcher"] = "Bash"
    mixed = {"matcher": "Bash", "hooks": [*ours["hooks"], {"type": "command", "command": "x"}]}
    again, notes = install.merge_hooks(merged)
    assert again["hooks"]["PreToolUse"][0]["matcher"] == "Bash|Write|Edit|MultiEdit|NotebookEdit"
    assert "PreToolUse hook matcher updated in .claude/settings.json" in notes
    merged["hooks"]["PreToolUse"] = [mixed]
    kept, _ = install.merge_hooks(merged)
    assert kept["hooks"]["PreToolUse"] == [mixed]


def test_unmerge_hooks_restores_the_original_exactly():
    merged, _ = install.merge_hooks(USER_SETTINGS)
    restored, _ = install.unmerge_hooks(merged)
    assert restored == USER_SETTINGS
    alone, _ = install.merge_hooks({})
    assert install.unmerge_hooks(alone)[0] == {}


def test_unmerge_keeps_a_user_hook_sharing_our_group():
    merged, _ = install.merge_hooks({})
    merged["hooks"]["SessionStart"][0]["hooks"].append({"type": "command", "command": "mine"})
    out, _ = install.unmerge_hooks(merged)
    assert out == {"hooks": {"SessionStart": [{"hooks": [{"type": "command", "command": "mine"}]}]}}


def test_mcp_merge_keeps_a_different_entry_and_unmerge_leaves_it():
    theirs = {"mcpServers": {"specialists": {"command": "/opt/sp", "args": ["mcp"]}}}
    merged, notes = install.merge_mcp(theirs)
    assert merged["mcpServers"]["specialists"] == theirs["mcpServers"]["specialists"]
    assert "kept the existing" in notes[0]
    out, notes = install.unmerge_mcp(merged)
    assert out == theirs and "not the one we add" in notes[0]


def test_mcp_entries_name_this_interpreter_and_load_the_core_at_once():
    merged, _ = install.merge_mcp({})
    python = install.this_python()
    # what `claude mcp add --scope project` writes, plus alwaysLoad for the core
    assert merged == {
        "mcpServers": {
            "specialists": {
                "type": "stdio",
                "command": python,
                "args": ["-m", "specialists", "mcp", "--tools", "core"],
                "env": {},
                "alwaysLoad": True,
            },
            "specialists-more": {
                "type": "stdio",
                "command": python,
                "args": ["-m", "specialists", "mcp", "--tools", "more"],
                "env": {},
            },
        }
    }
    assert Path(python).is_absolute()
    assert install.unmerge_mcp(merged)[0] == {}


def test_an_older_install_is_brought_up_to_date_and_removed_by_uninstall():
    """A bare `specialists` (before) or another virtualenv's interpreter: ours, updated in
    place beside the user's own entries; uninstall then removes what is there."""
    old_hook = {"type": "command", "command": "specialists hook stop", "timeout": 600}
    other = install.hook_command("/old/venv/bin/python", install.HOOKS[0])
    settings = {
        "hooks": {
            "Stop": [{"hooks": [old_hook]}],
            "UserPromptSubmit": [{"hooks": [{"type": "command", "command": other}]}],
        }
    }
    merged, notes = install.merge_hooks(settings)
    assert merged["hooks"]["Stop"] == [{"hooks": [{**old_hook, "command": hook("stop")}]}]
    ups = merged["hooks"]["UserPromptSubmit"]
    assert ups == [{"hooks": [{"type": "command", "command": hook("user-prompt-submit")}]}]
    assert sum(n.startswith("updated") for n in notes) == 2
    assert install.unmerge_hooks(settings)[0] == {}

    old_mcp = {
        "mcpServers": {
            "specialists": {"type": "stdio", "command": "specialists", "args": ["mcp"], "env": {}},
            "github": {"command": "gh-mcp"},
        }
    }
    merged, notes = install.merge_mcp(old_mcp)
    assert merged["mcpServers"]["specialists"]["command"] == install.this_python()
    assert merged["mcpServers"]["github"] == {"command": "gh-mcp"}
    assert "updated MCP server 'specialists'" in notes[0]
    assert install.unmerge_mcp(merged)[0] == {"mcpServers": {"github": {"command": "gh-mcp"}}}


def test_a_hook_command_quotes_its_interpreter_and_reads_back():
    odd = "/tmp/my venv's $(touch x)/bin/python"
    for entry in install.HOOKS:
        command = install.hook_command(odd, entry)
        assert install.command_python(command) == odd
        assert command.endswith(f" -m specialists hook {entry.name}")


@pytest.mark.parametrize(
    ("doc", "needle"),
    [
        ({"hooks": []}, "`hooks` is a list"),
        ({"hooks": {"SessionStart": {"x": 1}}}, "`hooks.SessionStart` is a dict"),
    ],
)
def test_wrong_shapes_in_settings_are_refused(doc, needle):
    with pytest.raises(UserError, match=needle):
        install.merge_hooks(doc)


def test_wrong_mcp_servers_shape_is_refused():
    with pytest.raises(UserError, match="`mcpServers` is a list"):
        install.merge_mcp({"mcpServers": []})


# --------------------------------------------------------------------------- files and CLI


def test_install_twice_then_uninstall_leaves_user_files_as_they_were(project, capsys):
    settings_before = read(project / ".claude" / "settings.json")
    assert run_cli("install") == 0
    first = capsys.readouterr().out
    assert "added MCP server 'specialists' (core tools) to .mcp.json" in first
    assert "added MCP server 'specialists-more' (more tools) to .mcp.json" in first
    assert "added UserPromptSubmit hook" in first and ".claude/settings.json" in first
    assert "added .specialists/ to .gitignore" in first
    snapshot = (
        (project / ".mcp.json").read_text(),
        (project / ".claude" / "settings.json").read_text(),
        (project / ".gitignore").read_text(),
    )
    assert read(project / ".mcp.json")["mcpServers"]["github"] == USER_MCP["mcpServers"]["github"]

    assert run_cli("install") == 0
    second = capsys.readouterr().out
    assert "added" not in second
    assert snapshot == (
        (project / ".mcp.json").read_text(),
        (project / ".claude" / "settings.json").read_text(),
        (project / ".gitignore").read_text(),
    )

    assert run_cli("uninstall") == 0
    assert "removed MCP server" in capsys.readouterr().out
    assert read(project / ".mcp.json") == USER_MCP
    assert read(project / ".claude" / "settings.json") == settings_before
    assert (project / ".specialists").is_dir()  # job data is never removed
    assert run_cli("uninstall") == 0  # idempotent too
    assert read(project / ".claude" / "settings.json") == settings_before


def test_uninstall_deletes_files_that_only_held_our_entries(capsys):
    root = Path(os.environ["SPECIALISTS_PROJECT_ROOT"])
    assert run_cli("install") == 0
    assert (root / ".mcp.json").exists() and (root / ".claude" / "settings.json").exists()
    assert run_cli("uninstall") == 0
    assert not (root / ".mcp.json").exists()
    assert not (root / ".claude" / "settings.json").exists()
    assert "deleted .mcp.json" in capsys.readouterr().out


def test_init_registers_too_unless_told_not_to(capsys):
    root = Path(os.environ["SPECIALISTS_PROJECT_ROOT"])
    assert run_cli("init", "--no-register") == 0
    assert not (root / ".mcp.json").exists()
    assert run_cli("init") == 0
    assert read(root / ".mcp.json")["mcpServers"]["specialists"]["args"][-2:] == ["--tools", "core"]
    assert "SessionStart" in read(root / ".claude" / "settings.json")["hooks"]


@pytest.mark.parametrize("bad", ["{", '{"a": 1,}', "[1]", '"text"'])
def test_malformed_json_is_refused_and_nothing_is_written(project, bad, capsys):
    (project / ".claude" / "settings.json").write_text(bad)
    mcp_before = (project / ".mcp.json").read_text()
    assert run_cli("install") != 0
    err = capsys.readouterr().err
    assert "settings.json" in err and "refusing to rewrite it" in err
    assert (project / ".claude" / "settings.json").read_text() == bad
    assert (project / ".mcp.json").read_text() == mcp_before  # no half install
    assert run_cli("uninstall") != 0


def test_malformed_mcp_json_is_refused(project, capsys):
    (project / ".mcp.json").write_text("{'single': 'quotes'}")
    assert run_cli("install") != 0
    assert ".mcp.json: invalid JSON at line 1, column " in capsys.readouterr().err


def test_dry_run_changes_nothing(project, capsys):
    before = (project / ".mcp.json").read_text()
    assert run_cli("install", "--dry-run") == 0
    assert "(dry run) added MCP server" in capsys.readouterr().out
    assert (project / ".mcp.json").read_text() == before
    assert not (project / ".specialists").exists()


def test_user_scope_writes_claude_config_dir_files_and_keeps_modes():
    config = Path(os.environ["CLAUDE_CONFIG_DIR"])
    config.mkdir(parents=True, exist_ok=True)
    claude_json = config / ".claude.json"
    original = {"numStartups": 3, "projects": {"/x": {}}, "mcpServers": {}}
    claude_json.write_text(json.dumps(original))
    claude_json.chmod(0o600)
    assert run_cli("install", "--user") == 0
    doc = read(claude_json)
    assert doc["numStartups"] == 3
    assert doc["mcpServers"]["specialists"]["command"] == install.this_python()
    assert stat.S_IMODE(claude_json.stat().st_mode) == 0o600
    assert "SessionStart" in read(config / "settings.json")["hooks"]
    project = Path(os.environ["SPECIALISTS_PROJECT_ROOT"])
    assert not (project / ".mcp.json").exists()
    assert run_cli("uninstall", "--user") == 0
    expected = copy.deepcopy(original)
    del expected["mcpServers"]  # it only held ours after install
    assert read(claude_json) == expected


def test_symlinked_settings_are_written_through_the_link(tmp_path):
    root = Path(os.environ["SPECIALISTS_PROJECT_ROOT"])
    real = tmp_path / "dotfiles" / "settings.json"
    real.parent.mkdir()
    real.write_text(json.dumps(USER_SETTINGS))
    (root / ".claude").mkdir()
    (root / ".claude" / "settings.json").symlink_to(real)
    assert run_cli("install") == 0
    assert (root / ".claude" / "settings.json").is_symlink()
    assert "SessionStart" in read(real)["hooks"]


def test_uninstall_keeps_a_linked_settings_file_and_empties_its_target(tmp_path, capsys):
    """A dotfile manager's link that held only ours: the link stays, its target loses ours
    (uninstall deleted the link and left every hook of ours in the dotfiles repo)."""
    root = Path(os.environ["SPECIALISTS_PROJECT_ROOT"])
    real = tmp_path / "dotfiles" / "settings.json"
    real.parent.mkdir()
    real.write_text("{}\n")
    link = root / ".claude" / "settings.json"
    link.parent.mkdir()
    link.symlink_to(real)
    assert run_cli("install") == 0
    assert run_cli("uninstall") == 0
    assert link.is_symlink() and read(real) == {}
    assert "emptied .claude/settings.json to {} (a link, kept)" in capsys.readouterr().out


@pytest.mark.parametrize("depth", [500, 100_000])
def test_a_deeply_nested_settings_file_is_refused_in_one_line(project, depth, capsys):
    """`[[[[...` (a RecursionError in json.loads, or in the merge's deepcopy at 500 levels)
    was a `bug:` with a traceback; now one line, nothing written, and `status` still runs."""
    deep = '{"a": ' + "[" * depth + "]" * depth + "}"
    for name in (".claude/settings.json", ".mcp.json"):
        (project / name).write_text(deep)
    assert run_cli("install") == 2
    err = capsys.readouterr().err
    assert (
        ".mcp.json: the JSON is nested too deeply (more than 100 levels); refusing to rewrite"
        in err
    )
    assert (project / ".claude" / "settings.json").read_text() == deep
    assert run_cli("status") == 0


def test_a_lone_surrogate_escape_is_kept_as_an_escape(project):
    """JavaScript writes text cut inside an emoji as a `\\ud83d` escape: install wrote
    nothing and said `bug: UnicodeEncodeError`; now the text is kept, escaped."""
    settings = project / ".claude" / "settings.json"
    settings.write_text('{"note": "cut \\ud83d", "name": "caf\u00e9"}')
    assert run_cli("install") == 0
    doc = read(settings)
    assert doc["note"] == "cut \ud83d" and doc["name"] == "caf\u00e9"
    assert "SessionStart" in doc["hooks"]


@pytest.mark.parametrize("planted", ["fifo", "dev-zero"])
def test_init_refuses_a_planted_gitignore_in_one_line(planted, capsys):
    """A .gitignore that is a FIFO, or a link (a repository can hold one) to /dev/zero, is
    neither waited on nor read without end: one line, a non-zero exit."""
    root = Path(os.environ["SPECIALISTS_PROJECT_ROOT"])
    gitignore = root / ".gitignore"
    if planted == "fifo":
        os.mkfifo(gitignore)
    else:
        gitignore.symlink_to("/dev/zero")
    assert run_cli("init", "--no-register") == 2
    err = capsys.readouterr().err.strip()
    what = "a FIFO" if planted == "fifo" else "a device"
    said = f"{gitignore} is {what}, not a regular file; refusing to change it"
    assert err == f"error: {said} (fix or remove the file, then run again)"


def test_init_appends_through_a_linked_gitignore(tmp_path, capsys):
    root = Path(os.environ["SPECIALISTS_PROJECT_ROOT"])
    kept = tmp_path / "shared-ignore"
    kept.write_text("node_modules/")
    (root / ".gitignore").symlink_to(kept)
    assert run_cli("init", "--no-register") == 0
    assert kept.read_text() == "node_modules/\n.specialists/\nspecialists/config.local.toml\n"


@pytest.mark.parametrize("name", [".mcp.json", ".claude/settings.json"])
@pytest.mark.parametrize("planted", ["fifo", "dev-zero"])
def test_install_refuses_a_planted_file_it_would_merge_into(project, name, planted, capsys):
    """install (and init) merge into .mcp.json and .claude/settings.json: a FIFO there, or
    a link to /dev/zero, is refused in one line before anything is written."""
    target = project / name
    mcp_before = (project / ".mcp.json").read_text()
    target.unlink()
    if planted == "fifo":
        os.mkfifo(target)
    else:
        target.symlink_to("/dev/zero")
    assert run_cli("install") == 2
    err = capsys.readouterr().err
    assert f"{target} is" in err and "not a regular file; refusing to rewrite it" in err
    if name == ".claude/settings.json":
        assert (project / ".mcp.json").read_text() == mcp_before  # no half install


def test_a_key_given_twice_is_refused_not_dropped_on_rewrite(project, capsys):
    """json.loads keeps the last of two `permissions`: install rewrote the file without the
    first block (the user's allow list was gone). Now one line, and the file is untouched."""
    text = '{"permissions": {"allow": ["Bash(npm test)"]}, "permissions": {"deny": []}}'
    (project / ".claude" / "settings.json").write_text(text)
    assert run_cli("install") == 2
    err = capsys.readouterr().err
    assert "settings.json: invalid JSON: the key 'permissions' is given twice; refusing" in err
    assert (project / ".claude" / "settings.json").read_text() == text
