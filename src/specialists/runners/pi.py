"""The pi runner: `pi --mode rpc` as a supervised subprocess (protocol logic in pi_events).

pi reads JSON commands on stdin and writes events and responses on stdout, one per line.
This adapter spawns it (own process group, dies with us), writes the commands the
`PiProtocol` state machine queues, feeds it stdout lines and reports the process's end.
stdin stays open for the whole job: pi abandons a run the moment stdin closes, so `close()`
waits for the run in progress to finish before closing it.

Command line: `--no-extensions` (an extension could open a dialog nobody answers) with the
chosen ones re-included by `-e` (pi_extensions.py), `--no-skills` and `--no-prompt-templates`
(no discovery from the user's pi config; explicit `--skill` paths still load, verified in pi
0.73.1's resource loader and on 1.6.0 by tests/integration/test_cli_pi.py), `--tools` per
permission tier, the system prompt (plus the response format asked for, `INSTRUCTIONS`)
through a file given to `--append-system-prompt` (pi reads a path's contents; argv entries
are capped at 128 kB), `--thinking` when the specialist sets a level, `--session` = the
job's session.jsonl or the session to continue.
Context files (AGENTS.md, CLAUDE.md) stay on; add `--no-context-files` to extra_args to drop
them. A skill path or chosen extension that is missing is a notice in events.jsonl, not fatal.
"""

from __future__ import annotations

import json
import os
import signal
import time
from collections import deque
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, assert_never

from specialists.base.display import one_line
from specialists.base.errors import AgentUnavailable, Bug, ConfigError
from specialists.base.vocab import THINKING_LEVELS
from specialists.process.host import AdoptedProcess, HostedProcess, spawn_agent
from specialists.process.jobenv import agent_env
from specialists.process.lookup import which
from specialists.process.node import choose_node, is_node_script
from specialists.process.spawn import exit_status as exit_description
from specialists.runners.adopting import check_runner, events_held, held_events
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
from specialists.runners.pi_adopt import protocol_state, restore_protocol
from specialists.runners.pi_extensions import chosen_extensions
from specialists.runners.pi_protocol import PiProtocol, job_protocol, split_pi_model
from specialists.runners.tiers import pi_tools

PI_PACKAGE = "@earendil-works/pi-coding-agent@1.6.0"
PI_BIN_ENV = "SPECIALISTS_PI_BIN"
SESSION_FILE_NAME = "session.jsonl"
SYSTEM_PROMPT_FILE_NAME = "system_prompt.md"

# After the process is gone, how long we wait for its stdout to drain (a grandchild that
# inherited the pipe could otherwise hold it open forever).
_EXIT_DRAIN_S = 2.0
# Longest stdout line kept whole. pi's biggest useful lines (a toolcall_end repeating a large
# `write`, a final message_end) stay far below; agent_end can be larger, and it is recognised
# from its head alone.
MAX_LINE_BYTES = 16 * 1024 * 1024
_WRITE_RETRY_S = 0.02  # poll slice while commands wait for room in pi's stdin pipe
RECENT_WRITES = 8  # the last stdin writes kept, to send again if the node never got them
RECENT_BYTES = 1024 * 1024
EXTENSION_LOAD_FAILED = "Failed to load extension"  # pi 1.6.0's stderr when one fails
EXTENSION_UNAVAILABLE = (
    "the specialists extension did not load, so this job runs without bg_run, sleep, "
    "spawn_thread, the bash guard and the result spill"
)


# pi has no structured-output option, so the response format is asked for in the system
# prompt and a JSON answer is checked when it arrives: one that does not parse is kept as it
# is (never lost, never an error) and a notice says so.
INSTRUCTIONS = {
    "json": (
        "Give your final answer as a single JSON value and nothing else: "
        "no prose before or after it, no Markdown code fence."
    ),
    "markdown": "Format your final answer as Markdown.",
    "text": "Give your final answer as plain text, without Markdown formatting.",
}


def format_instruction(response_format: str | None) -> str | None:
    """The line to append to the system prompt for `response_format`, if any."""
    return INSTRUCTIONS.get(response_format or "")


def format_problem(response_format: str | None, answer: str) -> str | None:
    """Why `answer` does not have the asked-for format, or None (only JSON is checked)."""
    if response_format != "json":
        return None
    text = answer.strip()
    if text.startswith("```") and text.endswith("```"):  # a fenced block despite the ask
        text = text.split("\n", 1)[1] if "\n" in text else ""
        text = text[: text.rfind("```")]
    try:
        json.loads(text)
    except ValueError as exc:
        return f"the answer is not valid JSON (response_format json): {exc}"
    return None


def resolve_pi_command(
    options: Mapping[str, Any], env: Mapping[str, str], state: Path | None = None
) -> list[str]:
    """The pi command: options["pi_bin"] or ["bin"] (a path, or an argv list such as
    [python, fake_pi.py]), then $SPECIALISTS_PI_BIN, then `pi` on PATH. A pi that is a Node
    script is started by a Node its package accepts (process/node.py, whose answers `state`'s
    cache keeps): `[node, pi]`."""
    configured = options.get("pi_bin") or options.get("bin") or env.get(PI_BIN_ENV)
    path_var = env.get("PATH", os.defpath)
    if isinstance(configured, list | tuple):
        return [str(part) for part in configured]
    name = str(configured) if configured else "pi"
    found = which(name, path_var)
    if found is None and configured:
        raise AgentUnavailable(
            f"pi is not installed: {name!r} is not an executable file",
            hint=f"npm install -g {PI_PACKAGE}, or fix pi_bin / {PI_BIN_ENV}",
        )
    if found is None:
        raise AgentUnavailable(
            f"pi is not installed: npm install -g {PI_PACKAGE}",
            hint=f"or set {PI_BIN_ENV} or execution.runner.pi_bin to its path",
        )
    if is_node_script(found):
        return [choose_node(found, env, "pi", state), found]
    return [found]


def build_argv(
    command: Sequence[str],
    spec: LaunchSpec,
    *,
    session_file: Path,
    system_prompt_file: Path | None,
    skill_paths: Sequence[Path],
    extensions: Sequence[Path] = (),
) -> list[str]:
    """The full pi command line for one job (pure)."""
    argv = [*command, "--mode", "rpc", "--no-extensions", "--no-skills", "--no-prompt-templates"]
    for extension in extensions:
        argv += ["-e", str(extension)]
    provider, model = split_pi_model(spec.model)
    if provider:
        argv += ["--provider", provider]
    if model:
        argv += ["--model", model]
    if system_prompt_file is not None:  # `replace`: instead of pi's own coding prompt
        flag = (
            "--system-prompt" if spec.system_prompt_mode == "replace" else "--append-system-prompt"
        )
        argv += [flag, str(system_prompt_file)]
    tools = pi_tools(spec.permission, spec.tools)
    argv += ["--tools", tools]
    if not tools:  # an allowlist with no pi tool in it: none at all, not pi's default set
        argv.append("--no-builtin-tools")
    for skill in skill_paths:
        argv += ["--skill", str(skill)]
    argv += ["--session", str(session_file)]
    if spec.thinking_level:
        if spec.thinking_level not in THINKING_LEVELS:
            raise ConfigError(
                f"unknown thinking level {spec.thinking_level!r}",
                hint="use one of: " + ", ".join(THINKING_LEVELS),
            )
        argv += ["--thinking", spec.thinking_level]
    argv += [str(arg) for arg in spec.extra_args]
    return argv


_BETWEEN_RUNS: frozenset[CommandKind] = ALWAYS_ACCEPTED | {"follow_up", "steer"}
_IN_A_RUN: frozenset[CommandKind] = _BETWEEN_RUNS | {"abort"}


class PiRunner:
    """`AgentRunner` for pi 1.x in RPC mode (1.6.0 is the version tested)."""

    name = "pi"

    def __init__(self) -> None:
        self._proc: HostedProcess | None = None
        self._protocol = PiProtocol()
        self._pending: list[RunnerEvent] = []
        self._session_file: str | None = None
        self._close_requested = False
        self._stdin_closed = False
        self._exited = False
        self._exit_seen_at: float | None = None
        self.startup_s: float | None = None  # spawn -> first stdout line
        self._spawned_at = 0.0
        self._handle = AgentHandle()
        self._response_format: str | None = None
        self._writes = 0  # stdin writes made, and the last few (pi_adopt.py)
        self._recent: deque[bytes] = deque(maxlen=RECENT_WRITES)
        self._spec: LaunchSpec | None = None
        self._with_extension = False

    def start(self, spec: LaunchSpec) -> None:
        if self._proc is not None:
            raise Bug("PiRunner.start called twice")
        self._spec = spec
        self._launch(spec, with_extension=bool(spec.options.get("specialists_extension")))

    def _launch(self, spec: LaunchSpec, *, with_extension: bool) -> None:
        env = agent_env(spec.job_dir, spec.env)  # + the job's process mark and git trailers
        env.setdefault("PI_SKIP_VERSION_CHECK", "1")
        command = resolve_pi_command(spec.options, env)
        ext_tools: list[str] = []
        self._with_extension = with_extension
        if with_extension:  # the wave-2 tools, through our extension
            from specialists.runners.pi_extension import for_pi_job

            ext_args, ext_env, ext_tools = for_pi_job(spec.permission, spec.thread)
            command, env = [*command, *ext_args], {**ext_env, **env}
        spec.job_dir.mkdir(parents=True, exist_ok=True)
        session = Path(spec.resume_session) if spec.resume_session else None
        session_file = session or spec.job_dir / SESSION_FILE_NAME
        prompt_file = self._write_system_prompt(spec)
        extensions, missing = chosen_extensions(spec.options, spec.permission, env, spec.cwd)
        first = self._proc is None  # a relaunch has said its notices already
        for message in missing if first else ():
            self._notice(message, level="warning")
        argv = build_argv(
            command,
            spec,
            session_file=session_file,
            system_prompt_file=prompt_file,
            skill_paths=self._existing_skills(spec, notify=first),
            extensions=extensions,
        )
        if ext_tools:  # pi's --tools also gates extension tools
            at = argv.index("--tools") + 1
            argv[at] = ",".join(t for t in (argv[at], *ext_tools) if t)
        self._session_file = str(session_file)
        self._response_format = spec.response_format
        self._protocol = job_protocol(spec, self._session_file)
        self._spawned_at = time.monotonic()
        self.startup_s = None
        self._proc = spawn_agent(
            spec.host,
            argv,
            cwd=spec.cwd,
            env=env,
            stderr_log=spec.job_dir / "stderr.log",
            max_line=int(spec.options.get("max_line_bytes", MAX_LINE_BYTES)),
        )
        # Writes never block us: what the pipe does not take now goes out on later reads.
        # pi buffers commands written before it is ready, so the prompt can go at once.
        self._protocol.prompt(spec.prompt)
        self._flush()

    def _extension_failed(self, proc: HostedProcess) -> str | None:
        """pi 1.x refuses to start when an extension fails to load (exit 1, `Failed to load
        extension "<path>": ...` on stderr). When it is ours, the reason; else None."""
        if not self._with_extension or self.startup_s is not None or proc.returncode == 0:
            return None
        from specialists.runners.pi_extension import EXTENSION_FILE

        tail = proc.stderr_tail
        at = tail.find(EXTENSION_LOAD_FAILED)
        if at < 0 or str(EXTENSION_FILE) not in tail[at:]:
            return None
        return one_line(tail[at:].splitlines()[0], 400)

    def adopt_state(self) -> dict[str, Any] | None:
        """pi at a checkpoint (pi_adopt.py): None once pi is exiting or gone (nothing to take
        over)."""
        held = held_events(self._pending)
        if self._proc is None or self._exited or self._close_requested or held is None:
            return None
        recent: list[str] = []
        size = 0
        for line in reversed(self._recent):
            size += len(line)
            if size > RECENT_BYTES:
                break
            recent.insert(0, line.decode("utf-8"))
        return {
            "runner": "pi",
            "session_file": self._session_file,
            "writes": self._writes,
            "recent": recent,
            "pending": held,
            "startup_s": self.startup_s,
            "protocol": protocol_state(self._protocol, time.monotonic()),
        }

    def adopt(
        self, spec: LaunchSpec, state: Mapping[str, Any], proc: AdoptedProcess | None
    ) -> None:
        """A successor supervisor takes pi over (executors/job.py `Adoptable`): the protocol
        as it was, on the adopted process, stdin numbered so that the writes the replay makes
        again are the ones the node has."""
        check_runner(state, "pi")
        if self._proc is not None or proc is None:
            raise Bug("PiRunner.adopt after start, or without a process")
        now = time.monotonic()
        self._session_file = state["session_file"]
        self._response_format = spec.response_format
        self._protocol = job_protocol(spec, self._session_file)
        restore_protocol(self._protocol, state["protocol"], now)
        self._pending = events_held(state["pending"])
        self.startup_s, self._spawned_at = state["startup_s"], now
        writes, recent = int(state["writes"]), [str(r).encode("utf-8") for r in state["recent"]]
        applied = proc.renumber_input(writes)
        if applied < writes:
            # Writes counted by the checkpoint that never reached the node (lost in flight
            # with the dead supervisor's connection): sent again, from the copies kept.
            missing = writes - applied
            if missing > len(recent):
                raise AgentUnavailable(
                    f"the node never got the last {missing} writes to pi's stdin, and the "
                    f"checkpoint keeps only {len(recent)}"
                )
            proc.renumber_input(applied)
            for line in recent[len(recent) - missing :]:
                proc.send(line)
        elif applied > writes and state.get("then") == "requests":
            # Requests the dead supervisor wrote after its checkpoint: pi has them, we never see
            # them again. Number on after them, and give up the request ids they may have used.
            proc.renumber_input(applied)
            self._protocol.next_id += applied - writes
            writes = applied
        self._writes = writes
        self._recent.extend(recent)
        self._proc = proc

    def _write_system_prompt(self, spec: LaunchSpec) -> Path | None:
        """The system prompt goes through a file (see the module docstring)."""
        ask = "" if spec.bare else format_instruction(spec.response_format)
        text = "\n\n".join(part for part in (spec.system_prompt, ask) if part)
        if not text:
            return None
        path = spec.job_dir / SYSTEM_PROMPT_FILE_NAME
        path.write_text(text, encoding="utf-8")
        return path

    def _existing_skills(self, spec: LaunchSpec, *, notify: bool = True) -> list[Path]:
        """The skill paths that exist (the catalog's one rule); the others, a notice."""
        from specialists.catalog.skills import resolve_skill_path

        home = Path(spec.env.get("HOME") or os.environ.get("HOME") or Path.home())
        found = []
        for raw in spec.skill_paths:
            path = resolve_skill_path(raw, spec.cwd, home=home)
            if path.exists():
                found.append(path)
            elif notify:
                self._notice("skill path not found; skipped", level="warning", path=str(path))
        return found

    def _notice(self, message: str, **fields: str) -> None:
        self._pending.append(Activity("notice", {"message": message, **fields}))

    @property
    def handle(self) -> AgentHandle:
        pid = self._proc.pid if self._proc is not None else None
        self._handle = self._handle.moved_to(pid, self._protocol.session_file or self._session_file)
        return self._handle

    def accepts(self) -> frozenset[CommandKind]:
        if self._proc is None or self._exited or self._close_requested:
            return ALWAYS_ACCEPTED
        state = self._protocol.state.kind
        return _BETWEEN_RUNS if state == "idle" and not self._protocol.busy else _IN_A_RUN

    @property
    def busy(self) -> bool:
        """A run is in progress (or queued behind the current one)."""
        return self._protocol.busy

    def poll(self, timeout: float) -> list[RunnerEvent]:
        proc = self._require_proc()
        events, self._pending = self._pending, []
        if self._exited:
            if not events:
                time.sleep(max(0.0, timeout))  # nothing will ever come; do not spin a caller
            return events
        wait = 0.0 if events else self._bounded_wait(timeout)
        for line in proc.read(wait):
            if self.startup_s is None:
                self.startup_s = time.monotonic() - self._spawned_at
            events.extend(self._protocol.feed(line))
        events.extend(self._protocol.tick())
        events = self._check_formats(events)
        self._flush()
        self._close_if_done()
        events.extend(self._check_exit(proc))
        return events

    def _check_formats(self, events: list[RunnerEvent]) -> list[RunnerEvent]:
        if self._response_format != "json":
            return events
        out: list[RunnerEvent] = []
        for ev in events:
            if isinstance(ev, RunFinished) and ev.text is not None and not ev.error:
                problem = format_problem("json", ev.text)
                if problem:
                    out.append(Activity("notice", {"message": problem, "level": "warning"}))
            out.append(ev)
        return out

    def _bounded_wait(self, timeout: float) -> float:
        if self._proc is not None and self._proc.input_pending:
            timeout = min(timeout, _WRITE_RETRY_S)
        deadline = self._protocol.next_deadline()
        if deadline is None:
            return timeout
        return max(0.0, min(timeout, deadline - time.monotonic()))

    def _check_exit(self, proc: HostedProcess) -> list[RunnerEvent]:
        if proc.poll_exit() is None:
            return []
        now = time.monotonic()
        if self._exit_seen_at is None:
            self._exit_seen_at = now
        if not proc.stdout_closed and now - self._exit_seen_at < _EXIT_DRAIN_S:
            return []  # lines may still be in the pipe; read them first
        failed = self._extension_failed(proc)
        if failed is not None and self._spec is not None and not self._close_requested:
            # The job goes on without our tools, and says so (events.jsonl, status, feed).
            proc.release()
            self._exit_seen_at = None
            message = f"{EXTENSION_UNAVAILABLE}: {failed}"
            self._launch(self._spec, with_extension=False)
            return [Activity("notice", {"message": message, "level": "error"})]
        events = self._protocol.process_exited()
        exit_code, sig = exit_description(proc.returncode)
        events.append(AgentExited(exit_code, sig, proc.stderr_tail))
        self._exited = True
        proc.release()
        return events

    def _flush(self) -> None:
        proc = self._proc
        if proc is None:
            return
        for command in self._protocol.take_outbox():
            if not self._stdin_closed:
                line = json.dumps(command, ensure_ascii=False, separators=(",", ":")) + "\n"
                data = line.encode("utf-8")
                proc.send(data)
                self._writes += 1
                self._recent.append(data)

    def _close_if_done(self) -> None:
        if (
            self._close_requested
            and not self._stdin_closed
            and not self._require_proc().input_pending
            and not self._protocol.busy
        ):
            self._stdin_closed = True
            self._require_proc().close_stdin()

    def _require_proc(self) -> HostedProcess:
        if self._proc is None:
            raise Bug("PiRunner used before start()")
        return self._proc

    def send(self, command: Command) -> None:
        if command.kind not in self.accepts():
            not_accepted(self.name, command)
        if command.kind == "follow_up":
            self._pending.extend(self._protocol.follow_up(command.message))
        elif command.kind == "steer":
            self._protocol.steer(command.message)
        elif command.kind == "abort":
            self._protocol.abort()
        elif command.kind == "close":
            # Close stdin once no run is in progress; pi then exits 0 (AgentExited follows).
            self._close_requested = True
            if self._proc is not None:
                self._close_if_done()
        elif command.kind == "terminate":
            if self._proc is not None and not self._exited:
                self._proc.signal_group(signal.SIGTERM)
        elif command.kind == "kill":
            # Also after pi exited: its process group may hold children it left behind.
            if self._proc is not None:
                self._proc.signal_group(signal.SIGKILL)
        else:
            assert_never(command)
        self._flush()
