"""`specialists doctor`'s pi check: start the real pi with our extension and ask it.

(Here in cli/, not in pi_extension/: it starts pi through the runner, and the extension
room must not import the runners.)

A pi job loads `index.ts` with `-e`; pi 1.x refuses to start when an extension fails to
load, and an extension whose sidecar will not start offers no tools. Neither shows until a
job runs, so doctor starts pi the way a job does (offline, no session, in a temp directory),
sends `/specialists` (our extension command: it needs the sidecar to answer) and reads what
comes back: the command's overview (all is well), a warning the extension showed, or pi's
own reason for exiting. One line either way.
"""

from __future__ import annotations

import json
import os
import signal
import tempfile
import time
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from specialists.errors import AgentUnavailable
from specialists.process.agent import AgentProcess
from specialists.process.spawn import SpawnFailed

PROBE_TIMEOUT_S = 60.0
_OVERVIEW = "specialists for pi-"  # how the /specialists overview starts (ops.py)


@dataclass(frozen=True)
class Probe:
    ok: bool
    line: str  # what doctor prints


def probe_pi(env: Mapping[str, str] | None = None, timeout: float = PROBE_TIMEOUT_S) -> Probe:
    from specialists.pi_extension import LOG_ENV, for_pi_job
    from specialists.runners.pi import resolve_pi_command

    base = dict(os.environ if env is None else env)
    try:
        command = resolve_pi_command({}, base)
    except AgentUnavailable as exc:
        return Probe(False, exc.one_line())
    ext_args, ext_env, _tools = for_pi_job("HIGH", thread=False)  # every tool: the probe
    with tempfile.TemporaryDirectory(prefix="specialists-pi-probe-") as tmp:
        run_env = {**ext_env, **base, "PI_OFFLINE": "1", "PI_SKIP_VERSION_CHECK": "1"}
        run_env[LOG_ENV] = str(Path(tmp) / "pi-extension.log")
        argv = [*command, "--mode", "rpc", "--no-extensions", *ext_args, "--no-skills"]
        argv += ["--no-prompt-templates", "--no-context-files", "--no-session"]
        try:
            proc = AgentProcess(argv, cwd=Path(tmp), env=run_env, stderr_cap=None)
        except SpawnFailed as exc:
            return Probe(False, f"pi cannot be started: {exc.reason}")
        try:
            return _ask(proc, timeout)
        finally:
            proc.signal_group(signal.SIGKILL)
            proc.release()


def _ask(proc: AgentProcess, timeout: float) -> Probe:
    message = {"id": "probe", "type": "prompt", "message": "/specialists"}
    proc.send(json.dumps(message).encode() + b"\n")
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        for line in proc.read(0.2):
            verdict = _verdict(line if isinstance(line, bytes) else b"")
            if verdict is not None:
                return verdict
        if proc.poll_exit() is not None and proc.stdout_closed:
            return Probe(False, _exit_reason(proc))
    return Probe(False, f"pi with the specialists extension did not answer in {timeout:.0f} s")


def _verdict(line: bytes) -> Probe | None:
    try:
        obj = json.loads(line)
    except ValueError:
        return None
    if not isinstance(obj, dict):
        return None
    if obj.get("type") == "response" and obj.get("id") == "probe" and not obj.get("success"):
        return Probe(False, f"pi refused /specialists: {obj.get('error')}")
    if obj.get("type") != "extension_ui_request" or obj.get("method") != "notify":
        return None
    text = str(obj.get("message") or "")
    if text.startswith(_OVERVIEW):
        return Probe(True, "the specialists extension loads and its sidecar answers")
    if obj.get("notifyType") in ("warning", "error"):
        return Probe(False, " ".join(text.split())[:400])
    return None


def _exit_reason(proc: AgentProcess) -> str:
    tail = [ln.strip() for ln in proc.stderr_tail.splitlines() if ln.strip()]
    failed = [ln for ln in tail if "Failed to load extension" in ln]
    why = (failed or tail or [f"exit {proc.returncode}"])[0]
    return f"pi exited at start with the specialists extension: {why[:400]}"
