"""Claude Code runner: `claude -p --output-format stream-json --verbose`, one process per run.

The prompt goes on stdin (no argv size limit, no clash with variadic flags such as
--allowedTools), the specialist's system prompt is appended to Claude Code's own. We pick
the session id (`--session-id`), so the job knows it before the agent starts; follow-ups
run `claude -p --resume <id>`. Tier -> flags: tiers.CLAUDE_CONTROLS.
"""

from __future__ import annotations

import os
from pathlib import Path

from specialists.runners.base import LaunchSpec
from specialists.runners.claude_events import ClaudeTranslator
from specialists.runners.oneshot import ResumableRunner, Translator, child_env, find_binary
from specialists.runners.tiers import claude_controls

NOT_INSTALLED = "claude is not installed: npm install -g @anthropic-ai/claude-code"
BIN_ENV = "SPECIALISTS_CLAUDE_BIN"
# Larger system prompts go through a file: one argv string may not exceed 128 KiB on Linux.
SYSTEM_PROMPT_ARG_MAX = 64 * 1024
SYSTEM_PROMPT_FILE = "claude-system-prompt.md"

EFFORT = {"minimal": "low", "low": "low", "medium": "medium", "high": "high", "xhigh": "xhigh"}


def claude_model(model: str | None) -> str | None:
    """`anthropic/claude-sonnet-4-5` -> `claude-sonnet-4-5`; other names pass through."""
    if model and model.startswith("anthropic/"):
        return model.split("/", 1)[1]
    return model or None


def claude_argv(
    spec: LaunchSpec,
    *,
    session_id: str,
    resume: bool,
    as_root: bool,
    system_prompt_file: Path | None = None,
) -> list[str]:
    """The arguments after the binary. `resume` continues `session_id`."""
    argv = ["-p", "--output-format", "stream-json", "--verbose"]
    argv += ["--resume", session_id] if resume else ["--session-id", session_id]
    controls = claude_controls(spec.permission, as_root=as_root)
    if controls.tools is not None:
        argv.append("--tools=" + ",".join(controls.tools))
    if controls.allowed:
        argv.append("--allowedTools=" + ",".join(controls.allowed))
    if controls.disallowed:
        argv.append("--disallowedTools=" + ",".join(controls.disallowed))
    argv += ["--permission-mode", controls.permission_mode]
    if system_prompt_file is not None:
        argv += ["--append-system-prompt-file", str(system_prompt_file)]
    elif spec.system_prompt:
        argv += ["--append-system-prompt", spec.system_prompt]
    model = claude_model(spec.model)
    if model:
        argv += ["--model", model]
    fallback = claude_model(spec.fallback_model)
    if fallback:
        argv += ["--fallback-model", fallback]
    if spec.max_turns:
        argv += ["--max-turns", str(spec.max_turns)]
    effort = EFFORT.get(spec.thinking_level or "")
    if effort:
        argv += ["--effort", effort]
    argv += list(spec.extra_args)
    return argv


class ClaudeRunner(ResumableRunner):
    name = "claude"
    agent = "claude"

    def __init__(self) -> None:
        super().__init__()
        self._session_id: str | None = None
        self._system_prompt_file: Path | None = None

    @property
    def session_ref(self) -> str | None:
        translator = self._translator
        if isinstance(translator, ClaudeTranslator) and translator.session_id:
            return translator.session_id
        return self._session_id

    def start(self, spec: LaunchSpec) -> None:
        import uuid  # ~15 ms; only a starting job needs it

        self._session_id = spec.resume_session or str(uuid.uuid4())
        super().start(spec)

    def _resolve_binary(self, spec: LaunchSpec) -> str:
        return find_binary("claude", spec, BIN_ENV, NOT_INSTALLED)

    def _argv(self, spec: LaunchSpec, resume: str | None) -> list[str]:
        too_long = len(spec.system_prompt.encode("utf-8")) > SYSTEM_PROMPT_ARG_MAX
        if too_long and self._system_prompt_file is None:
            self._system_prompt_file = spec.job_dir / SYSTEM_PROMPT_FILE
            self._system_prompt_file.write_text(spec.system_prompt, encoding="utf-8")
        session_id = resume or self._session_id
        assert session_id is not None
        return claude_argv(
            spec,
            session_id=session_id,
            resume=resume is not None,
            as_root=os.geteuid() == 0,
            system_prompt_file=self._system_prompt_file,
        )

    def _env(self, spec: LaunchSpec) -> dict[str, str]:
        extra = {"CLAUDE_CODE_MAX_OUTPUT_TOKENS": str(spec.max_tokens)} if spec.max_tokens else {}
        return child_env(spec, extra)

    def _new_translator(self) -> Translator:
        return ClaudeTranslator()

    def _resume_id(self) -> str | None:
        return self.session_ref
