"""Record the real pi's RPC transcripts against the mock LLM (the fixtures our fakes replay).

    .venv/bin/python -m tests.support.record_pi OUT_DIR [--pi PATH] [--only NAME ...]

Runs each scenario of /work/shared/reference/pi-*/ (the same commands, models and prompts) in
an isolated temp tree exactly as the reference README says (PI_CODING_AGENT_DIR, PI_OFFLINE,
HOME, `--no-extensions --no-skills --no-prompt-templates --no-context-files`), writes every
stdout line pi printed to OUT_DIR/<scenario>.ndjson and a summary (exit codes, startup time,
the facts each scenario shows) to OUT_DIR/record-summary.json. Temp paths are replaced by
`/home/user/pi-demo/...` and the mock's port by 18080, so a re-recording diffs cleanly.

The mock's models (models.json here) behave by name: mock-model (bash `echo hi`, then DONE),
mock-slow (the same, with a slow streamed answer "tok0 tok1 ..."), mock-sleep (bash `sleep 15;
echo slept`), mock-text (DONE), mock-500 (HTTP 500), mock-think (reasoning, then as mock-model),
mock-long (a long streamed answer).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from tests.support.agent_env import find_agent_bin
from tests.support.collect import Collected
from tests.support.mock_llm import MockLLM, Reply, Request, ToolCall

Line = dict[str, Any]
MODELS_FILE = Path(__file__).resolve().parents[1] / "fixtures" / "pi-1.6.0" / "models.json"
DEMO = "/home/user/pi-demo"
MOCK_PORT = 18080
SLOW_TEXT = " ".join(f"tok{i}" for i in range(40))

# An extension that asks the client before every bash call and reports at agent_end (ext).
DEMO_EXTENSION = """
export default function (pi) {
  pi.on("tool_call", async (event, ctx) => {
    if (event.toolName !== "bash") return undefined;
    const ok = await ctx.ui.confirm("Allow bash?", event.input.command, { timeout: 10000 });
    return ok ? undefined : { block: true, reason: "Blocked by supervisor" };
  });
  pi.on("agent_end", async (_event, ctx) => {
    ctx.ui.notify("agent finished", "info");
    ctx.ui.setStatus("demo", "idle");
  });
}
"""
BROKEN_EXTENSION = """
import { nothing } from "@earendil-works/no-such-package";
export default function (pi) { nothing(pi); }
"""


def rule(req: Request) -> Reply:
    """The mock's answer by model name (see the module docstring)."""
    messages = req.messages()
    model, done = req.model, bool(messages) and messages[-1].get("role") == "tool"
    if model == "mock-500":
        return Reply.server_error("mock internal error")
    if model == "mock-text":
        return Reply("DONE")
    if model == "mock-long":
        return Reply(SLOW_TEXT * 50, chunk_size=4)
    if model == "mock-sleep":
        return (
            Reply("DONE")
            if done
            else Reply(tool_calls=[ToolCall("bash", {"command": "sleep 15; echo slept"})])
        )
    thinking = "Let me think about it." if model == "mock-think" else ""
    if done:
        if model == "mock-slow":
            return Reply(SLOW_TEXT, chunk_size=5, chunk_delay=0.25, thinking=thinking)
        return Reply("DONE", thinking=thinking)
    return Reply(tool_calls=[ToolCall("bash", {"command": "echo hi"})], thinking=thinking)


class Pi:
    """One pi process in RPC (or JSON) mode with every stdout line collected."""

    def __init__(
        self,
        argv: list[str],
        env: dict[str, str],
        cwd: Path,
        *,
        settles: bool,
        stdin: Any = subprocess.PIPE,
    ) -> None:
        self.started = time.monotonic()
        self.first_line_s: float | None = None
        self.proc = subprocess.Popen(
            argv, cwd=cwd, env=env, stdin=stdin, stdout=subprocess.PIPE, stderr=subprocess.PIPE
        )
        self.seen: Collected[Line] = Collected()
        self.settles = settles
        self.stderr = b""
        threading.Thread(target=self._read, daemon=True).start()
        threading.Thread(target=self._read_err, daemon=True).start()

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for raw in iter(lambda: self.proc.stdout.readline(), b""):  # type: ignore[union-attr]
            if self.first_line_s is None:
                self.first_line_s = round(time.monotonic() - self.started, 2)
            try:
                self.seen.add(json.loads(raw))
            except ValueError:
                self.seen.add({"type": "unparsed", "raw": raw.decode(errors="replace")})
        self.seen.close()

    def _read_err(self) -> None:
        assert self.proc.stderr is not None
        self.stderr = self.proc.stderr.read()

    def raw(self, text: str) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(text.encode() + b"\n")
        self.proc.stdin.flush()

    def send(self, **command: Any) -> None:
        self.raw(json.dumps(command))

    def wait(self, pred: Callable[[Line], bool], timeout: float = 90.0, after: int = 0) -> Line:
        return self.seen.wait(
            pred, timeout, after=after, describe=lambda ls: str([x.get("type") for x in ls[-20:]])
        )

    def wait_type(self, kind: str, n: int = 1, timeout: float = 90.0) -> None:
        self.wait(
            lambda _ln: len(self.seen.matching(lambda x: x.get("type") == kind)) >= n, timeout
        )

    def response(self, ident: str, timeout: float = 30.0) -> Line:
        return self.wait(lambda ln: ln.get("type") == "response" and ln.get("id") == ident, timeout)

    def settled(self, n: int = 1, timeout: float = 90.0) -> None:
        """The run is over: pi 1.x says so (agent_settled); pi 0.x has no such event, so
        its last agent_end with no auto-retry following (give it a moment to follow)."""
        if self.settles:
            self.wait_type("agent_settled", n, timeout)
            return
        self.wait_type("agent_end", n, timeout)
        deadline = time.monotonic() + timeout
        while _ends_for_0x(self.seen.items) < n or self._just_ended():
            assert time.monotonic() < deadline, "pi 0.x never ended its run"
            time.sleep(0.2)

    def _just_ended(self) -> bool:
        last = self.seen.items[-1] if self.seen.items else {}
        if last.get("type") != "agent_end":
            return False
        time.sleep(0.5)  # an auto_retry_start follows at once when it comes
        return self.seen.items[-1] is not last

    def close(self, timeout: float = 30.0) -> int:
        if self.proc.stdin is not None and not self.proc.stdin.closed:
            self.proc.stdin.close()
        try:
            return self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            return self.proc.wait(timeout)


def _ends_for_0x(lines: list[Line]) -> int:
    """pi 0.x: an agent_end not followed by auto_retry_start (it has no agent_settled)."""
    count = 0
    for i, ln in enumerate(lines):
        if ln.get("type") != "agent_end":
            continue
        later = [x.get("type") for x in lines[i + 1 : i + 3]]
        if "auto_retry_start" not in later:
            count += 1
    return count


class Recorder:
    def __init__(self, pi_bin: Path, out: Path, mock: MockLLM, root: Path) -> None:
        self.pi_bin, self.out, self.mock, self.root = pi_bin, out, mock, root
        version = _version(pi_bin)
        self.settles = not version.startswith("0.")  # pi 1.x ends a run with agent_settled
        self.summary: dict[str, Any] = {"pi": version, "node": _node_version(), "scenarios": {}}
        self.agent_dir = root / "agent"
        self.work = root / "work"
        self.sessions = root / "sessions"
        for d in (
            self.agent_dir,
            self.work,
            self.sessions,
            root / "home",
            root / "out",
            root / "tmp",
        ):
            d.mkdir(parents=True, exist_ok=True)
        models = MODELS_FILE.read_text().replace(f"http://127.0.0.1:{MOCK_PORT}", mock.base_url)
        (self.agent_dir / "models.json").write_text(models)
        self.env = {
            "PATH": os.environ.get("PATH", os.defpath),
            "HOME": str(root / "home"),
            "TMPDIR": str(root / "tmp"),
            "PI_CODING_AGENT_DIR": str(self.agent_dir),
            "PI_OFFLINE": "1",
            "PI_SKIP_VERSION_CHECK": "1",
            "PI_TELEMETRY": "0",
            "NO_PROXY": "127.0.0.1,localhost",
            "LANG": "C.UTF-8",
        }

    def rpc(
        self, model: str = "mock-model", *, session: str = "s", extra: list[str] | None = None
    ) -> Pi:
        argv = [str(self.pi_bin), "--mode", "rpc", "--no-extensions", "--no-skills"]
        argv += [
            "--no-prompt-templates",
            "--no-context-files",
            "--provider",
            "mock",
            "--model",
            model,
        ]
        argv += ["--session", str(self.sessions / f"{session}.jsonl"), *(extra or [])]
        return Pi(argv, self.env, self.work, settles=self.settles)

    def save(self, name: str, pi: Pi, **facts: Any) -> None:
        text = "".join(
            json.dumps(ln, ensure_ascii=False, separators=(",", ":")) + "\n" for ln in pi.seen.items
        )
        (self.out / f"{name}.ndjson").write_text(self.scrub(text))
        stderr = pi.stderr.decode(errors="replace").strip()
        entry = {"exit": pi.proc.returncode, "first_stdout_line_s": pi.first_line_s, **facts}
        if stderr:
            entry["stderr_tail"] = self.scrub(stderr[-600:])
        self.summary["scenarios"][name] = entry

    def scrub(self, text: str) -> str:
        text = text.replace(str(self.root), DEMO)
        return re.sub(rf"127\.0\.0\.1:{self.mock.port}\b", f"127.0.0.1:{MOCK_PORT}", text)

    # -- the scenarios ----------------------------------------------------------------------
    def rpc_basic(self) -> None:
        before = len(self.mock.requests)
        pi = self.rpc(session="basic")
        pi.send(id="req-1", type="prompt", message="Run echo hi using bash, then say DONE.")
        pi.settled()
        for query in ("get_state", "get_last_assistant_text", "get_messages", "get_session_stats"):
            pi.send(id=f"q-{query}", type=query)
            pi.response(f"q-{query}")
        code = pi.close()
        self.save("rpc-basic", pi, exit_after_stdin_eof=code)
        bodies = [r.json for r in self.mock.model_requests[before:]]
        lines = "".join(json.dumps(b, ensure_ascii=False) + "\n" for b in bodies)
        (self.out / "llm-requests-basic.jsonl").write_text(self.scrub(lines))

    def json_mode(self) -> None:
        argv = [
            str(self.pi_bin),
            "--mode",
            "json",
            "--no-extensions",
            "--no-skills",
            "--no-prompt-templates",
        ]
        argv += ["--no-context-files", "--provider", "mock", "--model", "mock-model", "--session"]
        argv += [str(self.sessions / "json.jsonl"), "-p", "Run echo hi using bash, then say DONE."]
        pi = Pi(argv, self.env, self.work, settles=self.settles, stdin=subprocess.DEVNULL)
        pi.proc.wait(90)
        _drain(pi)
        self.save("json_mode", pi)

    def multiturn(self) -> None:
        pi = self.rpc(session="multi")
        pi.send(id="p1", type="prompt", message="turn 1: run echo hi then say DONE")
        pi.settled(1)
        pi.send(id="p2", type="prompt", message="turn 2: run echo hi then say DONE")
        pi.settled(2)
        pi.send(id="st", type="get_state")
        pi.response("st")
        self.save("multiturn", pi, exit_after_stdin_eof=pi.close())

    def resume(self) -> None:
        pi = self.rpc("mock-text", session="multi")
        pi.send(id="m0", type="get_messages")
        pi.response("m0")
        pi.send(id="st", type="get_state")
        pi.response("st")
        pi.send(id="p1", type="prompt", message="turn 3 in a new process")
        pi.settled()
        self.save("resume", pi, exit_after_stdin_eof=pi.close())

    def abort_text(self) -> None:
        pi = self.rpc("mock-slow", session="abort_text")
        pi.send(id="p1", type="prompt", message="stream slowly")
        _wait_delta(pi, "text_delta", 2)
        pi.send(id="a1", type="abort")
        pi.settled()
        pi.response("a1")
        pi.send(id="lt", type="get_last_assistant_text")
        pi.response("lt")
        pi.send(id="st", type="get_state")
        pi.response("st")
        pi.send(id="p2", type="set_model", provider="mock", modelId="mock-text")
        pi.response("p2")
        pi.send(id="p3", type="prompt", message="after abort")
        pi.settled(2)
        self.save("abort_text", pi, exit_after_stdin_eof=pi.close())

    def abort_tool(self) -> None:
        pi = self.rpc("mock-sleep", session="abort_tool")
        pi.send(id="p1", type="prompt", message="sleep please")
        pi.wait_type("tool_execution_update")
        started = time.monotonic()
        pi.send(id="a1", type="abort")
        pi.settled()
        pi.response("a1")
        took = round(time.monotonic() - started, 2)
        self.save("abort_tool", pi, abort_to_settled_s=took, exit_after_stdin_eof=pi.close())

    def eof(self) -> None:
        pi = self.rpc("mock-slow", session="eof")
        pi.send(id="p1", type="prompt", message="stream slowly")
        _wait_delta(pi, "text_delta", 2)
        started = time.monotonic()
        assert pi.proc.stdin is not None
        pi.proc.stdin.close()
        pi.proc.wait(60)
        _drain(pi)
        self.save(
            "eof",
            pi,
            eof_to_exit_s=round(time.monotonic() - started, 2),
            run_finished=_finished(pi),
        )

    def sigterm(self, name: str, model: str, until: Callable[[Pi], None]) -> None:
        pi = self.rpc(model, session=name)
        pi.send(id="p1", type="prompt", message="go")
        until(pi)
        started = time.monotonic()
        pi.proc.send_signal(signal.SIGTERM)
        try:
            pi.proc.wait(60)
        except subprocess.TimeoutExpired:
            pi.proc.kill()
            pi.proc.wait(10)
        _drain(pi)
        self.save(
            name,
            pi,
            sigterm_to_exit_s=round(time.monotonic() - started, 2),
            run_finished=_finished(pi),
        )

    def errors(self) -> None:
        pi = self.rpc(session="errors")
        pi.send(type="frobnicate")
        pi.raw("{bad")
        pi.raw("{")
        pi.raw("{}")
        pi.raw("[]")
        pi.send(id="m1", type="set_model", provider="mock", modelId="nope")
        pi.send(id="p0", type="prompt")
        pi.send(id="s0", type="set_session_name", name="")
        pi.send(id="g1", type="get_state")
        pi.response("g1")
        pi.wait(lambda _ln: len(pi.seen.matching(lambda x: x.get("type") == "response")) >= 9, 20)
        self.save("errors", pi, exit_after_stdin_eof=pi.close())

    def retry(self) -> None:
        pi = self.rpc("mock-500", session="retry")
        pi.send(id="p1", type="prompt", message="fail please")
        pi.settled(timeout=120)
        pi.send(id="lt", type="get_last_assistant_text")
        pi.response("lt")
        self.save("retry", pi, exit_after_stdin_eof=pi.close())

    def think(self) -> None:
        pi = self.rpc("mock-think", session="think", extra=["--thinking", "low"])
        pi.send(id="p1", type="prompt", message="think then act")
        pi.settled()
        self.save("think", pi, exit_after_stdin_eof=pi.close())

    def ext(self) -> None:
        path = self.root / "demo-ext.js"
        path.write_text(DEMO_EXTENSION)
        pi = self.rpc(session="ext", extra=["-e", str(path)])
        for n, allow in enumerate((True, False)):
            mark = len(pi.seen.items)
            pi.send(id=f"p{n}", type="prompt", message="run echo hi")
            ask = pi.wait(
                lambda ln: (
                    ln.get("type") == "extension_ui_request" and ln.get("method") == "confirm"
                ),
                after=mark,
            )
            pi.send(type="extension_ui_response", id=ask["id"], confirmed=allow)
            pi.settled(n + 1)
        self.save("ext", pi, exit_after_stdin_eof=pi.close())

    def ext_broken(self) -> None:
        """An extension whose import fails: what a client sees (stdout, stderr, exit)."""
        path = self.root / "broken-ext.ts"
        path.write_text(BROKEN_EXTENSION)
        pi = self.rpc("mock-text", session="ext_broken", extra=["-e", str(path)])
        pi.send(id="st", type="get_state")
        try:
            pi.response("st", timeout=30)
        except AssertionError:
            pass
        pi.send(id="p1", type="prompt", message="hello")
        try:
            pi.settled(timeout=30)
        except AssertionError:
            pass
        self.save("ext_broken", pi, exit_after_stdin_eof=pi.close())

    def misc(self) -> None:
        pi = self.rpc("mock-text", session="misc")
        steps: list[dict[str, Any]] = [
            {"type": "get_available_models"},
            {"type": "get_commands"},
            {"type": "bash", "command": "echo from-rpc-bash"},
        ]
        for step in steps:
            pi.send(id=f"x-{step['type']}", **step)
            pi.response(f"x-{step['type']}")
        pi.send(id="p1", type="prompt", message="hello")
        pi.settled()
        for step in (
            {"type": "set_session_name", "name": "demo-session"},
            {"type": "get_fork_messages"},
            {"type": "compact"},
            {"type": "set_auto_retry", "enabled": False},
            {"type": "set_auto_compaction", "enabled": False},
            {"type": "export_html", "outputPath": str(self.root / "out" / "misc.html")},
            {"type": "get_state"},
            {"type": "new_session"},
        ):
            ident = f"x-{step['type']}"
            mark = len(pi.seen.items)
            pi.send(id=ident, **step)
            pi.wait(
                lambda ln, i=ident: ln.get("type") == "response" and ln.get("id") == i,
                60,
                after=mark,
            )
        self.save("misc", pi, exit_after_stdin_eof=pi.close())

    def scenarios(self) -> dict[str, Callable[[], None]]:
        return {
            "rpc-basic": self.rpc_basic,
            "json_mode": self.json_mode,
            "multiturn": self.multiturn,
            "resume": self.resume,
            "abort_text": self.abort_text,
            "abort_tool": self.abort_tool,
            "eof": self.eof,
            "sigterm": lambda: self.sigterm(
                "sigterm", "mock-slow", lambda p: _wait_delta(p, "text_delta", 2)
            ),
            "sigterm_tool": lambda: self.sigterm(
                "sigterm_tool", "mock-sleep", lambda p: p.wait_type("tool_execution_update")
            ),
            "errors": self.errors,
            "retry": self.retry,
            "think": self.think,
            "ext": self.ext,
            "ext_broken": self.ext_broken,
            "misc": self.misc,
        }


def _wait_delta(pi: Pi, kind: str, n: int) -> None:
    def count(_ln: Line) -> bool:
        return (
            len(
                pi.seen.matching(
                    lambda x: (
                        x.get("type") == "message_update"
                        and x["assistantMessageEvent"].get("type") == kind
                    )
                )
            )
            >= n
        )

    pi.wait(count)


def _drain(pi: Pi) -> None:
    """After the process exited: every line it wrote is read."""
    pi.seen.wait_eof(10)


def _finished(pi: Pi) -> bool:
    return any(ln.get("type") in ("agent_end", "agent_settled") for ln in pi.seen.items)


def _version(pi_bin: Path) -> str:
    out = subprocess.run([str(pi_bin), "--version"], capture_output=True, text=True, timeout=60)
    return (out.stdout or out.stderr).strip()


def _node_version() -> str:
    node = shutil.which("node")
    return (
        subprocess.run([node, "--version"], capture_output=True, text=True).stdout.strip()
        if node
        else "?"
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("out", type=Path)
    parser.add_argument("--pi", type=Path, default=None)
    parser.add_argument("--only", nargs="*", default=None)
    args = parser.parse_args(argv)
    pi_bin = args.pi or find_agent_bin("pi")
    if pi_bin is None:
        print("record_pi: no pi found (run scripts/setup)", file=sys.stderr)
        return 3
    args.out.mkdir(parents=True, exist_ok=True)
    with MockLLM(rule, models=("mock-model",)) as mock, tempfile.TemporaryDirectory() as tmp:
        recorder = Recorder(pi_bin, args.out, mock, Path(tmp))
        for name, run in recorder.scenarios().items():
            if args.only and name not in args.only:
                continue
            started = time.monotonic()
            run()
            print(f"record_pi: {name} ({time.monotonic() - started:.1f} s)", file=sys.stderr)
    summary_path = args.out / "record-summary.json"
    old = json.loads(summary_path.read_text()) if args.only and summary_path.exists() else {}
    merged = {
        **old,
        **recorder.summary,
        "scenarios": {**old.get("scenarios", {}), **recorder.summary["scenarios"]},
    }
    summary_path.write_text(json.dumps(merged, indent=2) + "\n")
    return 0


def iter_lines(path: Path) -> Iterator[Line]:
    """The JSON lines of a recorded transcript (split on \\n only)."""
    for raw in path.read_bytes().split(b"\n"):
        if raw.strip():
            yield json.loads(raw)


if __name__ == "__main__":
    raise SystemExit(main())
