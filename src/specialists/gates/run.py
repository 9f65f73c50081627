"""Running one gate: look up the memo, else run the command, then record the evidence.

The command runs as `/bin/sh -c` in the child's working tree with stdin from /dev/null and
stderr joined to stdout (so the tail reads in the order it was written), through the one
short-command seam (process/short.py): its own process group, killed whole with SIGKILL at
the timeout, output bounded to the last `OUTPUT_CAP` bytes however much it writes. Variables
that would point git at another repository (GIT_DIR and the like) are dropped.
"""

from __future__ import annotations

import hashlib
import os
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from specialists.errors import StoreError
from specialists.gates import memo as memo_mod
from specialists.gates.evidence import write_evidence
from specialists.gates.spec import GateSpec
from specialists.gates.state import WorkspaceState, workspace_state
from specialists.process.short import run_short
from specialists.process.spawn import MISSING
from specialists.sandbox.git import git_env

OUTPUT_CAP = 1024 * 1024  # of the command's output, the last MiB is kept
TAIL_BYTES = 16 * 1024  # of that, what evidence and the memo keep
REASON_LINES = 20  # a failed gate's reason: its last lines...
REASON_CHARS = 2000  # ...at most this long
SHELL = "/bin/sh"
_MEMO_VERSION = b"specialists gate memo 1\n"

Outcome = Literal["passed", "failed", "timed_out", "not_started"]
MemoUse = Literal["hit", "miss", "off", "unkeyed"]


@dataclass(frozen=True)
class GateResult:
    """How one gate ended. `passed` is the verdict; `reason()` is the line a failed child
    carries (the command and its output's tail)."""

    command: str
    cwd: Path
    outcome: Outcome
    exit_code: int | None
    duration_ms: int
    tail: str  # the end of its output, stderr joined to stdout
    output_bytes: int  # how much output was kept (at most OUTPUT_CAP)
    memo: MemoUse
    workspace_key: str | None
    env_key: str
    memo_key: str | None
    evidence: Path | None  # the evidence file written, if a job directory was given
    memo_of: str | None = None  # on a hit: the evidence of the run that passed
    problem: str | None = None  # timed out, not started: what happened
    warnings: tuple[str, ...] = ()

    @property
    def passed(self) -> bool:
        return self.outcome == "passed"

    def reason(self) -> str:
        """`gate `cmd` failed (exit 1): <tail>`, bounded; for a pass, what passed."""
        if self.passed:
            hit = " (memo hit: passed before on this exact state)" if self.memo == "hit" else ""
            return f"gate `{_short(self.command)}` passed{hit}"
        if self.outcome == "failed":
            head = f"gate `{_short(self.command)}` failed (exit {self.exit_code})"
        else:
            head = f"gate `{_short(self.command)}` {self.problem}"
        tail = tail_lines(self.tail)
        return f"{head}: {tail}" if tail else head


def run_gate(
    spec: GateSpec,
    cwd: Path,
    *,
    project: Path,
    job_dir: Path | None = None,
    label: str = "gate",
    environ: Mapping[str, str] | None = None,
    clock: Callable[[], float] = time.time,
) -> GateResult:
    """Run (or recall) `spec` in `cwd`; evidence goes to `<job_dir>/evidence/<label>.json`.

    `project` is the project whose `.specialists/gates/memo` keeps passes (for a sandbox
    child: the main project, not the worktree). Never raises for what the command does;
    a store that cannot be written becomes a warning on the result.
    """
    env = dict(os.environ if environ is None else environ)
    env_key = environment_key(spec, env)
    state = workspace_state(cwd)
    memo_key = _memo_key(spec, state, env_key)
    warnings: list[str] = []
    if memo_key is not None and spec.memo:
        entry, warning = memo_mod.lookup(project, memo_key)
        if warning:
            warnings.append(warning)
        if entry is not None and entry.command == spec.command:
            result = GateResult(
                spec.command, cwd, "passed", 0, 0, entry.tail, len(entry.tail.encode()),
                "hit", state.key, env_key, memo_key, None, memo_of=entry.evidence,
            )  # fmt: skip
            return _recorded(result, state, job_dir, label, clock, warnings)
    started = time.monotonic()
    done = run_short(
        (SHELL, "-c", f"exec 2>&1\n{spec.command}"),
        cwd=cwd,
        env={**_command_env(env), **spec.variables()},  # the values: data, never code
        timeout=spec.timeout_s,
        output_cap=OUTPUT_CAP,
    )
    duration_ms = int((time.monotonic() - started) * 1000)
    tail = _tail(done.out)
    if done.error is None:
        outcome: Outcome = "passed" if done.code == 0 else "failed"
        problem = None
    elif done.error.startswith("timed out"):
        outcome, problem = "timed_out", f"{done.error} (its process group was killed)"
    elif done.error == MISSING:
        outcome, problem = "not_started", f"not started: {SHELL} {MISSING}"
    else:
        outcome, problem = "not_started" if done.code is None else "failed", done.error
    use: MemoUse = "unkeyed" if memo_key is None else ("miss" if spec.memo else "off")
    result = GateResult(
        spec.command, cwd, outcome, done.code, duration_ms, tail, len(done.out),
        use, state.key, env_key, memo_key, None, problem=problem,
    )  # fmt: skip
    result = _recorded(result, state, job_dir, label, clock, warnings)
    if result.passed and memo_key is not None:
        entry = memo_mod.MemoEntry(
            memo_key, spec.command, 0, duration_ms, tail, int(clock() * 1000),
            None if result.evidence is None else str(result.evidence),
        )  # fmt: skip
        warning = memo_mod.store(project, entry)
        if warning:
            result = _with_warning(result, warning)
    return result


def environment_key(spec: GateSpec, environ: Mapping[str, str]) -> str:
    """SHA-256 over the gate's variables: names and values, unset distinct from empty."""
    digest = hashlib.sha256(b"specialists gate env 1\n")
    for name in spec.env_names():
        value = environ.get(name)
        shown = b"\x00unset" if value is None else os.fsencode(value)
        digest.update(b"%s=%s\n" % (os.fsencode(name), shown))
    for name, value in spec.vars:  # the gate's own values decide its verdict too
        digest.update(b"var %s=%s\n" % (os.fsencode(name), value.encode("utf-8", "surrogatepass")))
    return digest.hexdigest()


def tail_lines(tail: str, lines: int = REASON_LINES, chars: int = REASON_CHARS) -> str:
    """The last lines of an output tail, joined with ' | ' for a one-line reason."""
    kept = [line.rstrip() for line in tail.splitlines() if line.strip()][-lines:]
    text = " | ".join(kept)
    return text if len(text) <= chars else "…" + text[-(chars - 1) :]


def _memo_key(spec: GateSpec, state: WorkspaceState, env_key: str) -> str | None:
    if state.key is None:
        return None
    digest = hashlib.sha256(_MEMO_VERSION)
    for part in (spec.command, state.relative_cwd, state.key, env_key):
        digest.update(part.encode("utf-8", "surrogateescape") + b"\0")
    return digest.hexdigest()


def _command_env(env: dict[str, str]) -> dict[str, str]:
    """The environment minus what git_env() drops: variables naming another repository."""
    kept = git_env()
    return {k: v for k, v in env.items() if k in kept or not k.startswith("GIT_")}


def _tail(out: bytes) -> str:
    tail = out[-TAIL_BYTES:]
    if len(out) > TAIL_BYTES and b"\n" in tail:
        tail = tail[tail.index(b"\n") + 1 :]  # start on a line of its own
    return tail.decode("utf-8", "replace")


def _recorded(
    result: GateResult,
    state: WorkspaceState,
    job_dir: Path | None,
    label: str,
    clock: Callable[[], float],
    warnings: list[str],
) -> GateResult:
    if state.key is None and state.reason:
        warnings.append(f"gate not memoized: {state.reason}")
    path = None
    if job_dir is not None:
        data = {
            "kind": "gate",
            "label": label,
            "command": result.command,
            "cwd": str(result.cwd),
            "outcome": result.outcome,
            "exit_code": result.exit_code,
            "duration_ms": result.duration_ms,
            "tail": result.tail,
            "output_bytes": result.output_bytes,
            "problem": result.problem,
            "workspace_key": result.workspace_key,
            "workspace_reason": state.reason,
            "workspace_files": state.files,
            "workspace_changed": state.changed,
            "env_key": result.env_key,
            "memo_key": result.memo_key,
            "memo": result.memo,
            "memo_of": result.memo_of,
            "at_ms": int(clock() * 1000),
        }
        try:
            path = write_evidence(job_dir, label, data)
        except (StoreError, OSError) as exc:
            shown = exc.one_line() if isinstance(exc, StoreError) else str(exc)
            warnings.append(f"gate evidence not written: {shown}")
    return GateResult(**{**result.__dict__, "evidence": path, "warnings": tuple(warnings)})


def _with_warning(result: GateResult, warning: str) -> GateResult:
    return GateResult(**{**result.__dict__, "warnings": (*result.warnings, warning)})


def _short(command: str, limit: int = 120) -> str:
    line = " ".join(command.split())
    return line if len(line) <= limit else line[: limit - 1] + "…"
