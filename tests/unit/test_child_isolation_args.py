"""What a Claude Code or Codex child gets of the orchestrator's configuration, and how
`response_format: json` reaches them (pure: argv building and config filtering; the real CLIs
are driven in tests/integration/test_child_isolation.py)."""

from __future__ import annotations

import datetime
import json
import os
import tomllib
from pathlib import Path
from typing import Any

import pytest

from specialists.base.errors import ConfigError
from specialists.runners.base import LaunchSpec
from specialists.runners.claude import NO_HOOKS, claude_argv
from specialists.runners.claude_events import ClaudeTranslator
from specialists.runners.codex import JSON_ANSWER, CodexRunner, codex_argv
from specialists.runners.codex_config import isolation_args, read_user_config, toml_value


def spec(tmp_path: Path, **kw: Any) -> LaunchSpec:
    base: dict[str, Any] = {
        "job_id": "j1",
        "job_dir": tmp_path,
        "cwd": tmp_path,
        "prompt": "do it",
        "system_prompt": "Be careful.",
        "model": None,
        "permission": "READ_ONLY",
    }
    base.update(kw)
    return LaunchSpec(**base)


def after(argv: list[str], flag: str) -> str:
    return argv[argv.index(flag) + 1]


def overrides(argv: list[str]) -> dict[str, Any]:
    """Every `-c key=value`, parsed as codex parses them (TOML)."""
    return tomllib.loads("\n".join(argv[i + 1] for i, a in enumerate(argv) if a == "-c"))


# --- Claude Code --------------------------------------------------------------------------


def claude(tmp_path: Path, **kw: Any) -> list[str]:
    return claude_argv(spec(tmp_path, **kw), session_id="S", resume=False, as_root=False)


def test_a_claude_child_loads_user_settings_only_no_hooks_no_mcp(tmp_path: Path) -> None:
    argv = claude(tmp_path)
    assert after(argv, "--setting-sources") == "user"
    assert (
        json.loads(after(argv, "--settings")) == {"disableAllHooks": True} == json.loads(NO_HOOKS)
    )
    assert "--strict-mcp-config" in argv and "--mcp-config" not in argv


def test_a_claude_child_gets_the_mcp_servers_its_job_grants(tmp_path: Path) -> None:
    servers = {"docs": {"command": "docs-mcp", "args": ["--stdio"]}}
    argv = claude(tmp_path, options={"mcp_servers": servers, "setting_sources": "user,project"})
    assert json.loads(after(argv, "--mcp-config")) == {"mcpServers": servers}
    assert after(argv, "--setting-sources") == "user,project"


@pytest.mark.parametrize(
    "options",
    [{"setting_sources": "user,everything"}, {"setting_sources": 3}, {"mcp_servers": ["docs"]}],
)
def test_bad_claude_isolation_options_are_config_errors(tmp_path: Path, options: dict) -> None:
    with pytest.raises(ConfigError):
        claude(tmp_path, options=options)


def test_claude_json_answers_go_through_its_structured_output_tool(tmp_path: Path) -> None:
    argv = claude(tmp_path, response_format="json")
    assert json.loads(after(argv, "--json-schema")) == {"type": "object"}
    assert "--tools=Read,Grep,Glob,Bash,StructuredOutput" in argv
    assert "--allowedTools=Read,Grep,Glob,Bash,StructuredOutput" in argv
    schema = {"type": "object", "properties": {"verdict": {"type": "string"}}}
    argv = claude(tmp_path, response_format="json", options={"output_schema": schema})
    assert json.loads(after(argv, "--json-schema")) == schema
    assert "--json-schema" not in claude(tmp_path, response_format="markdown")


def test_a_claude_structured_answer_is_its_json() -> None:
    t = ClaudeTranslator()
    line = {
        "type": "result",
        "subtype": "success",
        "result": '{"verdict":"ok"}',
        "structured_output": {"verdict": "ok", "note": "naïve"},
        "session_id": "S",
    }
    (finished,) = [e for e in t.feed(line, 0.0) if e.kind == "run_finished"]
    assert json.loads(finished.text) == {"verdict": "ok", "note": "naïve"}


# --- Codex ----------------------------------------------------------------------------------


ORCHESTRATOR_CONFIG = {
    "model": "gpt-5",
    "model_provider": "corp",
    "model_providers": {"corp": {"base_url": "https://llm.corp/v1", "env_key": "CORP_KEY"}},
    "notify": ["notify-send", "codex"],
    "mcp_servers": {"specialists": {"command": "specialists", "args": ["mcp"]}},
    "hooks": {"stop": [{"command": "x"}]},
    "projects": {"/work/p": {"trust_level": "trusted"}},
    "profile": "fast",
    "profiles": {"fast": {"model": "gpt-5-mini", "mcp_servers": {"x": {"command": "x"}}}},
    "shell_environment_policy": {"inherit": "all"},
}


def test_a_codex_child_keeps_the_users_providers_and_nothing_of_the_orchestrator() -> None:
    argv = isolation_args(ORCHESTRATOR_CONFIG, {})
    assert argv[:3] == ["--ignore-user-config", "--disable", "hooks"]
    assert overrides(argv) == {
        "model": "gpt-5",
        "model_provider": "corp",
        "model_providers": {"corp": {"base_url": "https://llm.corp/v1", "env_key": "CORP_KEY"}},
        "profile": "fast",
        "profiles": {"fast": {"model": "gpt-5-mini"}},
        "shell_environment_policy": {"inherit": "all"},
    }


def test_a_codex_child_gets_the_mcp_servers_its_job_grants() -> None:
    servers = {"docs": {"command": "docs-mcp", "env": {"A": "1"}}}
    assert overrides(isolation_args({}, {"mcp_servers": servers})) == {"mcp_servers": servers}
    with pytest.raises(ConfigError):
        isolation_args({}, {"mcp_servers": {"bad name": {"command": "x"}}})


def test_toml_values_round_trip() -> None:
    value = {
        "s": 'quote " back \\ nl \n del \x7f',
        "i": -3,
        "f": 0.25,
        "inf": float("inf"),
        "b": False,
        "list": [1, "two", {"three": 3}],
        "key with spaces": "ok",
        "when": datetime.datetime(2026, 1, 2, 3, 4, 5, tzinfo=datetime.UTC),
        "day": datetime.date(2026, 1, 2),
    }
    assert tomllib.loads(f"v = {toml_value(value)}")["v"] == value
    nan = tomllib.loads(f"v = {toml_value(float('nan'))}")["v"]
    assert nan != nan


def test_the_users_config_is_read_safely(tmp_path: Path) -> None:
    home = tmp_path / "codex"
    home.mkdir()
    env = {"CODEX_HOME": str(home)}
    assert read_user_config(env) == {}
    config = home / "config.toml"
    config.write_text('model = "m"\n')
    assert read_user_config(env) == {"model": "m"}
    for bad in (b"model = \n", b"\xff\xfe", b"x" * (5 << 20)):
        config.write_bytes(bad)
        with pytest.raises(ConfigError):
            read_user_config(env)
    config.unlink()
    os.mkfifo(config)  # a FIFO must be refused, never opened for a blocking read
    with pytest.raises(ConfigError, match="not a regular file"):
        read_user_config(env)


def test_codex_json_answers(tmp_path: Path) -> None:
    plain = codex_argv(spec(tmp_path, response_format="json"), resume=None)
    assert JSON_ANSWER in overrides(plain)["developer_instructions"]
    assert "--output-schema" not in plain
    schema = {
        "type": "object",
        "properties": {"verdict": {"type": "string"}},
        "required": ["verdict"],
        "additionalProperties": False,
    }
    runner = CodexRunner()
    s = spec(tmp_path, response_format="json", options={"output_schema": schema})
    argv = runner._argv(s, None)
    assert json.loads(Path(after(argv, "--output-schema")).read_text()) == schema
    assert overrides(argv)["developer_instructions"] == "Be careful."
