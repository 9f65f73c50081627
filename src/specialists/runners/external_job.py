"""External-job runner (seed 004 "External job profiles"): a job a provider runs elsewhere
(a web conversation, a remote batch), dispatched, watched and collected through a provider
command, with our job as the durable record of it.

A definition names a provider: `runner: {type: external-job, provider: NAME, options: {...}}`.
Providers are registered by the person, in config.toml (`[external_job_providers.NAME]`,
`command` and `args`): a definition or a model's document can name one, never make one.
`plan_job` resolves it into the job's runner options (`provider_command`), so job.json says
exactly what ran. The provider command is run without a shell, one call at a time:

    <command> <args> dispatch          stdin {prompt, digest, options, job_id}
                                       stdout {"job_id": ID, "url"?: URL, "state"?: STATE}
    <command> <args> reattach ID       stdout {"state": STATE, "digest"?, "url"?, "error"?}
    <command> <args> result ID         stdout: the answer (text)
    <command> <args> cancel ID         best effort

STATE is queued, running, done, failed or cancelled; `error` is {code, message,
blocking_job_id?}, also on a failed dispatch's stdout (a capacity conflict fails closed,
naming the blocking job). Provider job ids are one word of at most 128 characters (no path
character: the id reaches an argv and our files). Each answer is bounded.

The record of the provider job is the job's session: `external-job.json` in the job directory
(provider, provider job id, prompt digest, options, url, last state, result, error), replaced
whole at each change. So `specialists run NAME --continue <job>` (and `resume` in a
workflow) *reattaches*: it calls `reattach` and `result` for the recorded provider job
instead of dispatching again, and it refuses, before any call, when the provider job was
dispatched for another prompt (its digest differs): a crashed or finished external job is
collected, never silently re-run with a different prompt.

One-shot: no follow-up, steer or resume with a new message; stop cancels at the provider.
"""

from __future__ import annotations

import hashlib
import json
import logging
import re
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, assert_never

from specialists.base.errors import ConfigError, SpecialistsError, UserError
from specialists.process.jobenv import agent_env
from specialists.process.lookup import find_executable
from specialists.process.short import CommandResult, run_short
from specialists.runners.base import (
    ALWAYS_ACCEPTED,
    Activity,
    AgentExited,
    AgentHandle,
    Command,
    CommandKind,
    LaunchSpec,
    RunFinished,
    RunnerEvent,
    not_accepted,
)
from specialists.store.atomic import write_atomic
from specialists.store.files import read_object

log = logging.getLogger(__name__)

RECORD_FILE = "external-job.json"
PROVIDERS_TABLE = "external_job_providers"
_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9._:@+-]{0,127}")
_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,63}")
_STATES = ("queued", "running", "done", "failed", "cancelled")
MAX_REPLY = 64 * 1024  # a provider's JSON reply
MAX_RESULT = 4 * 1024 * 1024  # the answer
MAX_RECORD = 1024 * 1024
DEFAULT_POLL_S = 10.0
DEFAULT_CALL_TIMEOUT_S = 60.0


# --- planning: the provider registry ----------------------------------------------------


def check_provider_name(value: object, field: str) -> str:
    if not isinstance(value, str) or not _NAME.fullmatch(value):
        raise UserError(
            f"{field}: expected a provider name (letters, digits, '.', '_', '-'), got {value!r}"
        )
    return value


def provider_options(config_tables: Mapping[str, Any], options: Mapping[str, Any]) -> dict:
    """The job's runner options with the provider's command resolved from config.toml."""
    provider = check_provider_name(options.get("provider"), "runner.provider")
    table = config_tables.get(PROVIDERS_TABLE)
    registered = table if isinstance(table, Mapping) else {}
    entry = registered.get(provider)
    if not isinstance(entry, Mapping):
        known = ", ".join(sorted(str(n) for n in registered)) or "none"
        raise UserError(
            f"external-job provider {provider!r} is not registered (registered: {known})",
            hint=f'register it in config.toml: [{PROVIDERS_TABLE}.{provider}] command = "..."',
        )
    command, args = entry.get("command"), entry.get("args", [])
    if not isinstance(command, str) or not command.strip() or "\x00" in command:
        raise ConfigError(f"{PROVIDERS_TABLE}.{provider}.command: expected a command to run")
    if not isinstance(args, list) or not all(isinstance(a, str) and "\x00" not in a for a in args):
        raise ConfigError(f"{PROVIDERS_TABLE}.{provider}.args: expected a list of text")
    extra = options.get("options", {})
    if not isinstance(extra, Mapping):
        raise UserError("runner.options: expected a mapping of provider options")
    return {**options, "provider_command": [command, *args]}


def prompt_digest(spec: LaunchSpec, provider: str, options: Mapping[str, Any]) -> str:
    """What the provider job is for: the instructions, the task, the provider and options."""
    text = json.dumps(
        [provider, spec.system_prompt, spec.prompt, options], sort_keys=True, default=str
    )
    return hashlib.sha256(text.encode("utf-8", "replace")).hexdigest()


def reattachable(job_dir: Path) -> bool:
    """Whether a job's provider job was dispatched and, last we knew, had not ended: a
    re-run of its workflow key reattaches to it instead of dispatching the prompt again."""
    try:
        record = read_object(job_dir / RECORD_FILE, MAX_RECORD)
    except FileNotFoundError:
        return False
    except (OSError, SpecialistsError) as exc:
        log.warning("%s: not reattached: %s", job_dir / RECORD_FILE, exc)
        return False
    return bool(record.get("provider_job_id")) and record.get("state") in ("queued", "running")


class ExternalJobRunner:
    name = "external-job"

    def __init__(self) -> None:
        self._spec: LaunchSpec | None = None
        self._argv: list[str] = []
        self._record: dict[str, Any] = {}
        self._pending: list[RunnerEvent] = []
        self._next_check = 0.0
        self._poll_s = DEFAULT_POLL_S
        self._call_timeout = DEFAULT_CALL_TIMEOUT_S
        self._running = False
        self._exited = False
        self._handle = AgentHandle()
        self._env: dict[str, str] = {}

    @property
    def handle(self) -> AgentHandle:
        return self._handle

    def accepts(self) -> frozenset[CommandKind]:
        return ALWAYS_ACCEPTED | {"abort"} if self._running else ALWAYS_ACCEPTED

    def send(self, command: Command) -> None:
        if command.kind not in self.accepts():
            not_accepted(self.name, command)
        if command.kind == "follow_up" or command.kind == "steer":
            not_accepted(self.name, command)
        elif command.kind == "abort" or command.kind == "terminate" or command.kind == "kill":
            self._cancel(f"{command.kind} requested")
        elif command.kind == "close":
            self._exit()
        else:
            assert_never(command)

    def start(self, spec: LaunchSpec) -> None:
        if self._spec is not None:
            raise SpecialistsError("bug: external-job runner started twice")
        self._spec = spec
        options = spec.options
        provider = check_provider_name(options.get("provider"), "runner.provider")
        argv = options.get("provider_command")
        if not isinstance(argv, list) or not argv or not all(isinstance(a, str) for a in argv):
            raise ConfigError("external-job runner: no provider command (planned without one?)")
        argv = list(argv)
        self._env = agent_env(spec.job_dir, spec.env)  # ours, the job's, its process mark
        argv[0] = find_executable(
            argv[0],
            path=self._env.get("PATH"),
            not_installed=f"provider command {argv[0]!r} is not installed or not executable",
        )
        self._argv = argv
        self._poll_s = _seconds(options.get("poll_s"), DEFAULT_POLL_S, "poll_s")
        self._call_timeout = _seconds(
            options.get("call_timeout_s"), DEFAULT_CALL_TIMEOUT_S, "call_timeout_s"
        )
        extra = dict(options.get("options") or {})
        digest = prompt_digest(spec, provider, extra)
        path = spec.job_dir / RECORD_FILE
        self._handle = AgentHandle(session_ref=str(path))
        if spec.resume_session:
            self._record = self._reattach_record(Path(spec.resume_session), provider, digest)
            self._save()
            self._notice(f"reattached to {provider} job {self._record['provider_job_id']}")
        else:
            self._record = {
                "job": spec.job_id,
                "provider": provider,
                "prompt_digest": digest,
                "options": extra,
                "state": "dispatching",
            }
            self._save()
            self._dispatch(spec, digest, extra)
        self._running = True
        self._next_check = time.monotonic()  # look at once: it may be done already

    def poll(self, timeout: float) -> list[RunnerEvent]:
        deadline = time.monotonic() + max(0.0, timeout)
        while self._running and not self._pending:
            now = time.monotonic()
            if now >= self._next_check:
                try:
                    self._check()
                except UserError as exc:  # a provider reply we cannot use: the job fails
                    self._end(error=exc.message)
                self._next_check = time.monotonic() + self._poll_s
                continue
            if now >= deadline:
                break
            time.sleep(min(deadline, self._next_check) - now)
        out, self._pending = self._pending, []
        return out

    def _dispatch(self, spec: LaunchSpec, digest: str, extra: Mapping[str, Any]) -> None:
        request = {"prompt": spec.prompt, "digest": digest, "options": extra, "job_id": spec.job_id}
        if spec.system_prompt:
            request["system_prompt"] = spec.system_prompt
        result = self._call(["dispatch"], json.dumps(request).encode())
        reply = _reply(result, "dispatch")
        if not result.ok:
            self._failed("dispatch", result, reply)
        job_id = _provider_job_id(reply.get("job_id"))
        self._record.update(
            provider_job_id=job_id,
            state=_state(reply.get("state"), "queued"),
            dispatched_at_ms=int(time.time() * 1000),
        )
        if isinstance(reply.get("url"), str):
            self._record["url"] = reply["url"][:2048]
        self._save()
        where = f" ({self._record['url']})" if "url" in self._record else ""
        self._notice(f"dispatched to {self._record['provider']} as job {job_id}{where}")

    def _check(self) -> None:
        job_id = str(self._record["provider_job_id"])
        result = self._call(["reattach", job_id])
        reply = _reply(result, "reattach")
        if not result.ok:
            self._end(error=_failure("reattach", result, reply))
            return
        theirs = reply.get("digest")
        if isinstance(theirs, str) and theirs != self._record["prompt_digest"]:
            self._end(
                error=f"{self._record['provider']} job {job_id} is for another prompt (its digest "
                f"{theirs[:12]}..., ours {self._record['prompt_digest'][:12]}...); not collected"
            )
            return
        state = _state(reply.get("state"), None)
        if state != self._record.get("state"):
            self._record["state"] = state
            self._save()
            self._notice(f"{self._record['provider']} job {job_id}: {state}")
        if state == "done":
            answer = self._call(["result", job_id], cap=MAX_RESULT)
            if not answer.ok:
                self._end(error=_failure("result", answer, _reply(answer, "result")))
                return
            self._end(text=answer.stdout)
        elif state in ("failed", "cancelled"):
            error = reply.get("error")
            self._record["error"] = error if isinstance(error, Mapping) else None
            self._save()
            self._end(
                error=f"{self._record['provider']} job {job_id} {state}: {_error_text(error)}"
            )

    def _cancel(self, why: str) -> None:
        job_id = self._record.get("provider_job_id")
        if self._running and isinstance(job_id, str):
            self._call(["cancel", job_id])  # best effort: the provider owns the remote job
            self._record["state"] = "cancelled"
            self._save()
        if self._running:
            self._end(error=f"aborted ({why})")

    def _call(
        self, args: Sequence[str], data: bytes | None = None, cap: int = MAX_REPLY
    ) -> CommandResult:
        spec = self._spec
        assert spec is not None, "bug: a provider call before start"
        return run_short(
            [*self._argv, *args],
            cwd=spec.cwd,
            env=self._env,
            timeout=self._call_timeout,
            input=data if data is not None else b"",
            output_cap=cap,
        )

    def _reattach_record(self, path: Path, provider: str, digest: str) -> dict[str, Any]:
        """The earlier job's record, checked: same provider, a good id, the same prompt."""
        try:
            earlier = read_object(path, MAX_RECORD)
        except (OSError, SpecialistsError) as exc:
            raise ConfigError(f"the external job to reattach to cannot be read: {exc}") from None
        if earlier.get("provider") != provider:
            theirs = earlier.get("provider")
            raise ConfigError(
                f"the job to reattach to ran on provider {theirs!r}, not {provider!r}"
            )
        if earlier.get("provider_job_id") is None:
            raise ConfigError(
                f"the job to reattach to never recorded a {provider} job id (its dispatch did "
                "not finish); start a new job"
            )
        job_id = _provider_job_id(earlier.get("provider_job_id"))
        if earlier.get("prompt_digest") != digest:
            raise ConfigError(
                f"refusing to redispatch: {provider} job {job_id} was dispatched for another "
                "prompt (its digest differs from this one's); continue it with the same prompt, "
                "or start a new job"
            )
        # The record was copied into this job with its session (supervise/launch.py): it names
        # the job that dispatched, or that reattached before us.
        return {
            **earlier,
            "job": self._spec.job_id if self._spec else None,
            "reattached_from": earlier.get("job"),
        }

    def _save(self) -> None:
        spec = self._spec
        assert spec is not None, "bug: saved before start"
        write_atomic(spec.job_dir / RECORD_FILE, json.dumps(self._record, indent=1).encode())

    def _notice(self, message: str) -> None:
        fields = {"message": message, "provider": self._record.get("provider")}
        if "provider_job_id" in self._record:
            fields["provider_job_id"] = self._record["provider_job_id"]
        self._pending.append(Activity("notice", fields))

    def _failed(self, what: str, result: CommandResult, reply: Mapping[str, Any]) -> None:
        error = reply.get("error")
        self._record.update(state="failed", error=error if isinstance(error, Mapping) else None)
        self._save()
        raise UserError(_failure(what, result, reply))

    def _end(self, *, text: str | None = None, error: str | None = None) -> None:
        if not self._running:
            return
        self._running = False
        if error is not None:
            self._record.setdefault("error", {"message": error[:2000]})
            self._save()
        self._pending.append(
            RunFinished(text=text, error=error, session_file=self._handle.session_ref)
        )
        self._exit()

    def _exit(self) -> None:
        if not self._exited:
            self._exited = True
            self._running = False
            self._pending.append(AgentExited(0))


def _seconds(value: object, default: float, name: str) -> float:
    if value is None:
        return default
    if isinstance(value, bool) or not isinstance(value, int | float) or not 0.01 <= value <= 86400:
        raise ConfigError(f"external-job runner: {name} must be seconds from 0.01 to 86400")
    return float(value)


def _reply(result: CommandResult, what: str) -> dict[str, Any]:
    """The provider's JSON object reply ({} when it printed none)."""
    text = result.stdout.strip()
    if not text:
        return {}
    try:
        data = json.loads(text)
    except (ValueError, RecursionError):  # `[[[...` nested past the decoder's depth
        if result.ok:
            raise UserError(f"provider `{what}` printed no JSON object: {text[:120]!r}") from None
        return {}
    return data if isinstance(data, dict) else {}


def _provider_job_id(value: object) -> str:
    if not isinstance(value, str) or not _ID.fullmatch(value):
        shown = repr(value)[:80]
        raise UserError(
            f"the provider gave a job id that is not one: {shown}",
            hint="provider job ids are one word of letters, digits and . _ : @ + - (no '/')",
        )
    return value


def _state(value: object, default: str | None) -> str:
    if value is None and default is not None:
        return default
    if value not in _STATES:
        raise UserError(f"the provider reported an unknown state {str(value)[:40]!r}")
    return str(value)


def _failure(what: str, result: CommandResult, reply: Mapping[str, Any]) -> str:
    error = reply.get("error")
    if isinstance(error, Mapping):
        return f"provider `{what}` failed: {_error_text(error)}"
    return f"provider {result.describe(what)}"


def _error_text(error: object) -> str:
    if not isinstance(error, Mapping):
        return "no reason given"
    parts = [str(error.get("code") or "error"), str(error.get("message") or "")[:500]]
    blocking = error.get("blocking_job_id")
    if blocking:
        parts.append(f"(blocked by provider job {str(blocking)[:128]})")
    return " ".join(p for p in parts if p)
