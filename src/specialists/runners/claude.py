"""Claude Code runner: `claude -p --output-format stream-json --verbose`, one process per run.

The prompt goes on stdin (no argv size limit, no clash with variadic flags such as
--allowedTools), the specialist's system prompt is appended to Claude Code's own. We pick
the session id (`--session-id`), so the job knows it before the agent starts; follow-ups
run `claude -p --resume <id>`. Tier -> flags: tiers.CLAUDE_CONTROLS.

A child is not the orchestrator (verified with 2.1.197): `--setting-sources user` skips the
project's and the local settings (where `specialists init` puts the orchestrator's hooks)
but keeps the user's (credentials helper, provider `env`, model); `--settings
{"disableAllHooks": true}` turns off every hook left, the user's included; `--strict-mcp-config`
loads no MCP server from .mcp.json, ~/.claude.json or plugins, only the job's own
(`runner.mcp_servers`, given as `--mcp-config`). `response_format: json` becomes
`--json-schema` (runner.output_schema, or any JSON object): Claude Code then answers through
its StructuredOutput tool and the answer is that JSON.
"""

from __future__ import annotations

import json
import os
import shutil
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from specialists.base.errors import ConfigError
from specialists.base.vocab import FORK_SESSION_OPTION as FORK_OPTION
from specialists.runners.base import LaunchSpec
from specialists.runners.claude_events import ClaudeTranslator
from specialists.runners.job_mcp import SERVER_NAME as JOB_SERVER
from specialists.runners.job_mcp import STARTUP_TIMEOUT_S, job_server, wants_job_server
from specialists.runners.oneshot import ResumableRunner, Translator, child_env, find_binary
from specialists.runners.tiers import claude_controls

NOT_INSTALLED = "claude is not installed: npm install -g @anthropic-ai/claude-code"
BIN_ENV = "SPECIALISTS_CLAUDE_BIN"
# Larger system prompts go through a file: one argv string may not exceed 128 KiB on Linux.
SYSTEM_PROMPT_ARG_MAX = 64 * 1024
SYSTEM_PROMPT_FILE = "claude-system-prompt.md"

EFFORT = {"minimal": "low", "low": "low", "medium": "medium", "high": "high", "xhigh": "xhigh"}
SETTING_SOURCES = ("user", "project", "local")
# Longer project directory names are shortened with a hash by Claude Code: not ours to copy.
PROJECT_DIR_MAX = 200
NO_HOOKS = json.dumps({"disableAllHooks": True})
ANY_JSON_OBJECT: dict[str, Any] = {"type": "object"}
STRUCTURED_OUTPUT_TOOL = "StructuredOutput"  # the tool --json-schema adds (2.1.197)
# `claude -p` (2.1.197) sends its first request without waiting for a starting MCP server
# unless told to, and then waits at most MCP_CONNECT_TIMEOUT_MS (docs/mcp.md, Start-up time):
# a thread must have report_to_parent on its first turn.
WAIT_FOR_OUR_SERVER = {
    "MCP_CONNECTION_NONBLOCKING": "false",
    "MCP_CONNECT_TIMEOUT_MS": str(STARTUP_TIMEOUT_S * 1000),
}


def claude_model(model: str | None) -> str | None:
    """`anthropic/claude-sonnet-4-5` -> `claude-sonnet-4-5`; other names pass through."""
    return model.split("/", 1)[1] if model and model.startswith("anthropic/") else model or None


def claude_argv(
    spec: LaunchSpec,
    *,
    session_id: str,
    resume: bool,
    as_root: bool,
    system_prompt_file: Path | None = None,
    fork_from: str | None = None,
) -> list[str]:
    """The arguments after the binary. `resume` continues `session_id`; `fork_from` makes
    this run a fork of that session, under the new id `session_id`."""
    argv = ["-p", "--output-format", "stream-json", "--verbose"]
    if fork_from is not None:
        argv += ["--resume", fork_from, "--fork-session", "--session-id", session_id]
    else:
        argv += ["--resume", session_id] if resume else ["--session-id", session_id]
    ours = job_server(spec) if wants_job_server(spec) else None
    argv += isolation_args(spec.options, ours)
    schema = output_schema(spec)
    controls = claude_controls(spec.permission, as_root=as_root, allow=spec.tools)
    answer_tool = (STRUCTURED_OUTPUT_TOOL,) if schema is not None else ()
    if controls.tools is not None:
        argv.append("--tools=" + ",".join((*controls.tools, *answer_tool)))
    # Nobody can answer a permission prompt in -p mode: our server's tools are granted.
    our_tools = (f"mcp__{JOB_SERVER}",) if ours is not None else ()
    allowed = (*controls.allowed, *answer_tool, *our_tools)
    if allowed:
        argv.append("--allowedTools=" + ",".join(allowed))
    if controls.disallowed:
        argv.append("--disallowedTools=" + ",".join(controls.disallowed))
    argv += ["--permission-mode", controls.permission_mode]
    # `replace`: instead of Claude Code's own system prompt (--system-prompt[-file]).
    flag = "--system-prompt" if spec.system_prompt_mode == "replace" else "--append-system-prompt"
    if system_prompt_file is not None:
        argv += [f"{flag}-file", str(system_prompt_file)]
    elif spec.system_prompt:
        argv += [flag, spec.system_prompt]
    model = claude_model(spec.model)
    if model:
        argv += ["--model", model]
    fallback = claude_model(spec.fallback_model)
    if fallback:
        argv += ["--fallback-model", fallback]
    if spec.max_turns:
        argv += ["--max-turns", str(spec.max_turns)]
    usd_left = spec.spend.usd_left if spec.spend is not None else None
    if usd_left is not None:  # Claude Code's own ceiling: it stops between its API calls
        argv += ["--max-budget-usd", f"{max(usd_left, 0.0001):.4f}"]
    effort = EFFORT.get(spec.thinking_level or "")
    if effort:
        argv += ["--effort", effort]
    if schema is not None:
        argv += ["--json-schema", json.dumps(schema, separators=(",", ":"))]
    argv += list(spec.extra_args)
    return argv


def projects_dir(env: Mapping[str, str]) -> Path:
    """Where Claude Code keeps its sessions: `<config>/projects/<directory name>/<id>.jsonl`."""
    home = Path(env.get("HOME") or Path.home())
    return Path(env.get("CLAUDE_CONFIG_DIR") or home / ".claude") / "projects"


def session_file(session_id: str, env: Mapping[str, str]) -> Path | None:
    """The file of a Claude Code session, in whichever directory it ran."""
    if not is_uuid(session_id):
        return None
    return next(iter(sorted(projects_dir(env).glob(f"*/{session_id}.jsonl"))), None)


def stage_fork(snapshot: Path, cwd: Path, env: Mapping[str, str]) -> str:
    """Put a snapshot of a parent's session (threads/forks.py took it when the thread was
    spawned) where Claude Code (2.1.197, 2.1.332) looks for a session to resume: among the sessions
    of the directory it runs in (`<projects>/<cwd with each character but a letter or digit
    made '-'>/`). Returns the id to `--resume ... --fork-session` from; the fork itself
    writes a new file."""
    import uuid

    name = "".join(c if c.isascii() and c.isalnum() else "-" for c in os.path.realpath(cwd))
    if len(name) > PROJECT_DIR_MAX:
        raise ConfigError(
            f"cannot fork a Claude Code session into {cwd}: its path is too long",
            hint="spawn the thread with fresh_context: true and self-contained instructions",
        )
    staged = str(uuid.uuid4())
    target = projects_dir(env) / name / f"{staged}.jsonl"
    target.parent.mkdir(parents=True, exist_ok=True)
    try:
        shutil.copyfile(snapshot, target)
    except OSError as exc:
        raise ConfigError(f"cannot fork: the parent's session snapshot: {exc.strerror}") from exc
    return staged


def is_uuid(text: str) -> bool:
    parts = text.split("-")
    return [len(p) for p in parts] == [8, 4, 4, 4, 12] and all(
        c in "0123456789abcdef" for c in text.replace("-", "")
    )


def isolation_args(options: Mapping[str, Any], ours: Mapping[str, Any] | None = None) -> list[str]:
    """Settings, hooks and MCP servers of the child: the user's settings, no hook, only the
    job's own MCP servers (see the module docstring), and `ours` (runners/job_mcp.py)."""
    sources = options.get("setting_sources", "user")
    if not isinstance(sources, str) or not set(filter(None, sources.split(","))) <= set(
        SETTING_SOURCES
    ):
        raise ConfigError(
            f"claude runner: setting_sources {sources!r} is not a list of sources",
            hint="a comma-separated subset of: " + ", ".join(SETTING_SOURCES),
        )
    args = ["--setting-sources", sources, "--settings", NO_HOOKS, "--strict-mcp-config"]
    servers = options.get("mcp_servers")
    if servers is not None and not (
        isinstance(servers, Mapping) and all(isinstance(v, Mapping) for v in servers.values())
    ):
        raise ConfigError(
            "claude runner: mcp_servers must map each server name to its settings",
            hint='e.g. {docs: {command: docs-mcp, args: ["--stdio"]}}',
        )
    if ours is not None:
        servers = {**(servers or {}), JOB_SERVER: ours}  # ours wins the name
    if servers:
        args += ["--mcp-config", json.dumps({"mcpServers": servers}, separators=(",", ":"))]
    return args


def output_schema(spec: LaunchSpec) -> Mapping[str, Any] | None:
    """The JSON schema the answer must follow, when the specialist asks for JSON."""
    if spec.response_format != "json":
        return None
    schema = spec.options.get("output_schema", ANY_JSON_OBJECT)
    if not isinstance(schema, Mapping):
        raise ConfigError("runner.output_schema must be a JSON schema (a mapping)")
    return schema


class ClaudeRunner(ResumableRunner):
    name = "claude"
    agent = "claude"

    def __init__(self) -> None:
        super().__init__()
        self._session_id: str | None = None
        self._system_prompt_file: Path | None = None
        self._fork_from: str | None = None  # the session the first run forks (then None)

    @property
    def session_ref(self) -> str | None:
        translator = self._translator
        if isinstance(translator, ClaudeTranslator) and translator.session_id:
            return translator.session_id
        return self._session_id

    def start(self, spec: LaunchSpec) -> None:
        import uuid  # ~15 ms; only a starting job needs it

        if spec.options.get(FORK_OPTION) and spec.resume_session:  # a thread's forked context
            snapshot = Path(spec.resume_session)
            self._fork_from = stage_fork(snapshot, spec.cwd, child_env(spec))
        self._session_id = (None if self._fork_from else spec.resume_session) or str(uuid.uuid4())
        super().start(spec)

    def _resolve_binary(self, spec: LaunchSpec) -> str:
        return find_binary("claude", spec, BIN_ENV, NOT_INSTALLED)

    def _argv(self, spec: LaunchSpec, resume: str | None) -> list[str]:
        too_long = len(spec.system_prompt.encode("utf-8")) > SYSTEM_PROMPT_ARG_MAX
        if too_long and self._system_prompt_file is None:
            self._system_prompt_file = spec.job_dir / SYSTEM_PROMPT_FILE
            self._system_prompt_file.write_text(spec.system_prompt, encoding="utf-8")
        fork_from, self._fork_from = self._fork_from, None  # only the first run forks
        session_id = self._session_id if fork_from else resume or self._session_id
        assert session_id is not None
        return claude_argv(
            spec,
            session_id=session_id,
            resume=resume is not None,
            as_root=os.geteuid() == 0,
            system_prompt_file=self._system_prompt_file,
            fork_from=fork_from,
        )

    def _env(self, spec: LaunchSpec) -> dict[str, str]:
        extra = {"CLAUDE_CODE_MAX_OUTPUT_TOKENS": str(spec.max_tokens)} if spec.max_tokens else {}
        if wants_job_server(spec):
            extra.update(WAIT_FOR_OUR_SERVER)
        return child_env(spec, extra)

    def _new_translator(self) -> Translator:
        return ClaudeTranslator()

    def _own_state(self) -> dict[str, Any]:
        return {"session_id": self._session_id}

    def _restore_own(self, state: Mapping[str, Any]) -> None:
        self._session_id = str(state["session_id"])
