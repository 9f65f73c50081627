"""The real pi (1.6.0) in RPC mode with our extension (`-e pi_extension/index.ts`), for tests.

`PiSession` starts `pi --mode rpc --no-extensions -e <extension>` in the isolated project,
collects every stdout line (events, responses, extension UI requests) on a reader thread and
lets tests wait on them. The sidecar it starts is this checkout's Python
(SPECIALISTS_CMD = [sys.executable, "-m", "specialists"]); the extension's log goes to a
file under the test's temp dir.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from specialists.pi_extension import EXTENSION_FILE
from tests.support.collect import Collected

Line = dict[str, Any]


def eventually(pred: Callable[[], bool], timeout: float = 30.0, what: str = "condition") -> None:
    """Poll `pred` (every 20 ms) until true: for state on disk that no stdout line announces."""
    deadline = time.monotonic() + timeout
    while not pred():
        assert time.monotonic() < deadline, f"{what} never came true"
        time.sleep(0.02)


def extension_env(
    base: Mapping[str, str], log_file: Path, *, sidecar: bool = True
) -> dict[str, str]:
    """`sidecar`: name this interpreter in SPECIALISTS_CMD (else the extension finds it as an
    installed one does: what `install --pi` recorded in pi's settings)."""
    env = dict(base)
    if sidecar:
        env.setdefault("SPECIALISTS_CMD", json.dumps([sys.executable, "-m", "specialists"]))
    env["SPECIALISTS_PI_LOG"] = str(log_file)
    env.setdefault("PI_SKIP_VERSION_CHECK", "1")
    return env


class PiSession:
    def __init__(
        self,
        pi_bin: Path,
        cwd: Path,
        log_file: Path,
        *,
        extra_args: Sequence[str] = (),
        env: Mapping[str, str] | None = None,
        installed: bool = False,
    ) -> None:
        """`installed`: load what pi's settings name (`install --pi`), not `-e`."""
        self.log_file = log_file
        argv = [str(pi_bin), "--mode", "rpc"]
        if not installed:
            argv += ["--no-extensions", "-e", str(EXTENSION_FILE)]
        argv += ["--provider", "mock", "--model", "mock-model", *extra_args]
        self.proc = subprocess.Popen(
            argv,
            cwd=cwd,
            env=extension_env(
                env if env is not None else os.environ, log_file, sidecar=not installed
            ),
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
        )
        self.seen: Collected[Line] = Collected()
        threading.Thread(target=self._read, daemon=True).start()

    @property
    def lines(self) -> list[Line]:
        return self.seen.items

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for raw in self.proc.stdout:
            try:
                self.seen.add(json.loads(raw))
            except ValueError:
                self.seen.add({"type": "unparsed", "raw": raw.decode(errors="replace")})
        self.seen.close()

    def send(self, command: Mapping[str, Any]) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write((json.dumps(command) + "\n").encode())
        self.proc.stdin.flush()

    def prompt(self, message: str) -> None:
        self.send({"type": "prompt", "message": message})

    def wait(self, pred: Callable[[Line], bool], timeout: float = 60.0, *, after: int = 0) -> Line:
        def describe(lines: list[Line]) -> str:
            kinds = [ln.get("type") for ln in lines[-30:]]
            return f"pi never said that; last lines: {kinds}\n{self.log()}"

        return self.seen.wait(pred, timeout, after=after, describe=describe)

    def ui(self, method: str, pred: Callable[[Line], bool] = lambda ln: True, **kw: Any) -> Line:
        return self.wait(
            lambda ln: (
                ln.get("type") == "extension_ui_request" and ln.get("method") == method and pred(ln)
            ),
            **kw,
        )

    def agent_ends(self) -> int:
        return len(self.seen.matching(lambda ln: ln.get("type") == "agent_end"))

    def wait_agent_end(self, n: int, timeout: float = 60.0) -> None:
        self.wait(lambda ln: self.agent_ends() >= n, timeout)

    def log(self) -> str:
        try:
            return self.log_file.read_text()[-3000:]
        except FileNotFoundError:
            return "(no extension log)"

    def close(self, timeout: float = 20.0) -> int:
        if self.proc.stdin is not None and not self.proc.stdin.closed:
            self.proc.stdin.close()
        try:
            return self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            return self.proc.wait(timeout)
