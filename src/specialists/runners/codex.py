"""Codex runner: `codex exec --json`, one process per run; follow-ups `codex exec resume`.

The prompt goes on stdin (`-` as the prompt argument) and stdin is then closed: codex reads
stdin when it is not a terminal, so it must never be left open. Codex has no
append-system-prompt flag; the specialist's system prompt becomes `developer_instructions`
(a developer message after Codex's own instructions, verified with 0.171.0), or, when it is
too large for one argv string, a block in front of the prompt. Tier -> `sandbox_mode`.
"""

from __future__ import annotations

import json

from specialists.runners.base import LaunchSpec
from specialists.runners.codex_events import CodexTranslator
from specialists.runners.oneshot import ResumableRunner, Translator, find_binary
from specialists.runners.tiers import codex_sandbox

NOT_INSTALLED = "codex is not installed: npm install -g @openai/codex"
BIN_ENV = "SPECIALISTS_CODEX_BIN"
INSTRUCTIONS_ARG_MAX = 64 * 1024  # one argv string may not exceed 128 KiB on Linux
EFFORT = {"minimal": "minimal", "low": "low", "medium": "medium", "high": "high", "xhigh": "xhigh"}


def toml_string(text: str) -> str:
    """A TOML basic string for a `-c key=value` override."""
    # JSON escapes are valid TOML escapes; TOML additionally forbids a raw DEL.
    return json.dumps(text, ensure_ascii=False).replace("\x7f", "\\u007f")


def codex_model(model: str | None) -> str | None:
    if model and model.startswith("openai/"):
        return model.split("/", 1)[1]
    return model or None


def instructions_fit(system_prompt: str) -> bool:
    return len(toml_string(system_prompt).encode("utf-8")) <= INSTRUCTIONS_ARG_MAX


def first_message(spec: LaunchSpec) -> str:
    """The prompt, with the system prompt in front when it cannot be passed as config."""
    if not spec.system_prompt or instructions_fit(spec.system_prompt):
        return spec.prompt
    return f"<instructions>\n{spec.system_prompt}\n</instructions>\n\n{spec.prompt}"


def codex_argv(spec: LaunchSpec, *, resume: str | None) -> list[str]:
    """The arguments after the binary; the prompt itself comes on stdin (`-`)."""
    argv = ["exec", "resume"] if resume else ["exec"]
    argv += ["--json", "--skip-git-repo-check"]
    if not resume:
        argv += ["-C", str(spec.cwd)]  # `exec resume` has no -C; it runs in our cwd anyway
    argv += ["-c", f"sandbox_mode={toml_string(codex_sandbox(spec.permission))}"]
    argv += ["-c", 'approval_policy="never"']  # nobody can answer; refuse, never wait
    model = codex_model(spec.model)
    if model:
        argv += ["-m", model]
    if spec.system_prompt and instructions_fit(spec.system_prompt):
        argv += ["-c", f"developer_instructions={toml_string(spec.system_prompt)}"]
    effort = EFFORT.get(spec.thinking_level or "")
    if effort:
        argv += ["-c", f"model_reasoning_effort={toml_string(effort)}"]
    argv += list(spec.extra_args)
    if resume:
        argv.append(resume)
    argv.append("-")
    return argv


class CodexRunner(ResumableRunner):
    name = "codex"
    agent = "codex"

    def __init__(self) -> None:
        super().__init__()
        self._thread_id: str | None = None

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
        return codex_argv(spec, resume=resume)

    def _first_message(self, spec: LaunchSpec) -> str:
        return first_message(spec)

    def _new_translator(self) -> Translator:
        return CodexTranslator()

    def _resume_id(self) -> str | None:
        return self.session_ref
