"""Codex runner: `codex exec --json`, one process per run; follow-ups `codex exec resume`.

The prompt goes on stdin (`-` as the prompt argument) and stdin is then closed: codex reads
stdin when it is not a terminal, so it must never be left open. Codex has no
append-system-prompt flag; the specialist's system prompt becomes `developer_instructions`
(a developer message after Codex's own instructions, verified with 0.171.0), or, when it is
too large for one argv string, a block in front of the prompt. Tier -> `sandbox_mode`.

A child is not the orchestrator (verified with 0.171.0): the orchestrator's MCP servers, hooks
and project trust live in $CODEX_HOME/config.toml, and `-c mcp_servers={}` does not remove
servers (overrides merge). So the child runs with `--ignore-user-config` (auth still comes from
CODEX_HOME) and `--disable hooks`, and gets the user's config back as `-c` overrides minus
what belongs to the orchestrator (mcp_servers, hooks, notify, projects: without the trust
entries no project `.codex/config.toml` is loaded either): providers, model and the rest keep
working. The job's own MCP servers (`runner.mcp_servers`) are added. `response_format: json`
becomes `--output-schema` when the specialist gives `runner.output_schema` (Codex sends it as
a strict schema, which cannot say "any JSON"); without one, the instructions ask for JSON.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from specialists.base.errors import ConfigError
from specialists.runners.base import LaunchSpec
from specialists.runners.codex_config import isolation_args, read_user_config, toml_string
from specialists.runners.codex_events import CodexTranslator
from specialists.runners.job_mcp import job_server, wants_job_server
from specialists.runners.oneshot import ResumableRunner, Translator, find_binary
from specialists.runners.tiers import codex_sandbox

NOT_INSTALLED = "codex is not installed: npm install -g @openai/codex"
BIN_ENV = "SPECIALISTS_CODEX_BIN"
INSTRUCTIONS_ARG_MAX = 64 * 1024  # one argv string may not exceed 128 KiB on Linux
EFFORT = {"minimal": "minimal", "low": "low", "medium": "medium", "high": "high", "xhigh": "xhigh"}
OUTPUT_SCHEMA_FILE = "codex-output-schema.json"
JSON_ANSWER = "Answer with one JSON value and nothing else: no prose, no code fence."


def codex_model(model: str | None) -> str | None:
    return model.split("/", 1)[1] if model and model.startswith("openai/") else model or None


def instructions_fit(system_prompt: str) -> bool:
    return len(toml_string(system_prompt).encode("utf-8")) <= INSTRUCTIONS_ARG_MAX


def wants_schema(spec: LaunchSpec) -> bool:
    return spec.response_format == "json" and spec.options.get("output_schema") is not None


def first_message(spec: LaunchSpec) -> str:
    """The prompt, with the instructions in front when they cannot be passed as config."""
    instructions = developer_instructions(spec, with_schema=wants_schema(spec))
    if not instructions or instructions_fit(instructions):
        return spec.prompt
    return f"<instructions>\n{instructions}\n</instructions>\n\n{spec.prompt}"


def codex_argv(
    spec: LaunchSpec,
    *,
    resume: str | None,
    user_config: Mapping[str, Any] | None = None,
    schema_file: Path | None = None,
) -> list[str]:
    """The arguments after the binary; the prompt itself comes on stdin (`-`)."""
    argv = ["exec", "resume"] if resume else ["exec"]
    argv += ["--json", "--skip-git-repo-check"]
    if not resume:
        argv += ["-C", str(spec.cwd)]  # `exec resume` has no -C; it runs in our cwd anyway
    ours = job_server(spec) if wants_job_server(spec) else None
    argv += isolation_args(user_config or {}, spec.options, ours)
    argv += ["-c", f"sandbox_mode={toml_string(codex_sandbox(spec.permission))}"]
    argv += ["-c", 'approval_policy="never"']  # nobody can answer; refuse, never wait
    model = codex_model(spec.model)
    if model:
        argv += ["-m", model]
    instructions = developer_instructions(spec, with_schema=schema_file is not None)
    if instructions and instructions_fit(instructions):
        argv += ["-c", f"developer_instructions={toml_string(instructions)}"]
    effort = EFFORT.get(spec.thinking_level or "")
    if effort:
        argv += ["-c", f"model_reasoning_effort={toml_string(effort)}"]
    if schema_file is not None:
        argv += ["--output-schema", str(schema_file)]
    argv += list(spec.extra_args)
    if resume:
        argv.append(resume)
    argv.append("-")
    return argv


def developer_instructions(spec: LaunchSpec, *, with_schema: bool) -> str:
    """The system prompt, plus the JSON rule when JSON is asked for without a schema."""
    if spec.response_format == "json" and not with_schema and not spec.bare:
        return f"{spec.system_prompt}\n\n{JSON_ANSWER}" if spec.system_prompt else JSON_ANSWER
    return spec.system_prompt


def _write_schema(spec: LaunchSpec) -> Path | None:
    if not wants_schema(spec):
        return None
    schema = spec.options.get("output_schema")
    if not isinstance(schema, Mapping):
        raise ConfigError("runner.output_schema must be a JSON schema (a mapping)")
    path = spec.job_dir / OUTPUT_SCHEMA_FILE
    path.write_text(json.dumps(schema), encoding="utf-8")
    return path


class CodexRunner(ResumableRunner):
    name = "codex"
    agent = "codex"

    def __init__(self) -> None:
        super().__init__()
        self._thread_id: str | None = None
        self._user_config: dict[str, Any] | None = None
        self._schema_file: Path | None = None

    @property
    def session_ref(self) -> str | None:
        translator = self._translator
        if isinstance(translator, CodexTranslator) and translator.thread_id:
            self._thread_id = translator.thread_id
        return self._thread_id

    def start(self, spec: LaunchSpec) -> None:
        self._thread_id = spec.resume_session
        super().start(spec)

    def _resolve_binary(self, spec: LaunchSpec) -> str:
        return find_binary("codex", spec, BIN_ENV, NOT_INSTALLED)

    def _argv(self, spec: LaunchSpec, resume: str | None) -> list[str]:
        if self._user_config is None:
            self._user_config = read_user_config({**os.environ, **spec.env})
            self._schema_file = _write_schema(spec)
        return codex_argv(
            spec, resume=resume, user_config=self._user_config, schema_file=self._schema_file
        )

    def _first_message(self, spec: LaunchSpec) -> str:
        return first_message(spec)

    def _new_translator(self) -> Translator:
        """Codex reports tokens, not dollars: its turns are priced by the model it runs."""
        model = codex_model(self._spec.model) if self._spec is not None else None
        configured = (self._user_config or {}).get("model")
        return CodexTranslator(model or (configured if isinstance(configured, str) else None))

    def _own_state(self) -> dict[str, Any]:
        return {"thread_id": self.session_ref}

    def _restore_own(self, state: Mapping[str, Any]) -> None:
        self._thread_id = state["thread_id"]
