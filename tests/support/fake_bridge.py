"""A bridge process over the loopback node (no Ray), for the shared-connection tests.

    python -m tests.support.fake_bridge --dir D --name N --idle S --root R [--record F]
        [--die-file F] [--hang 1] [--mute 1]

The real server (bridge_serve.py) with a `NodeCore` on its own event loop as the backend.
`--record` appends one line per place/release; `--die-file`: the first call after that
file appears removes it and kills the bridge mid-call; `--hang`: every call waits forever;
`--mute`: listen, say ready, and never read a byte (a bridge that accepts and never answers).
"""

from __future__ import annotations

import asyncio
import os
import socket
import sys
import time
from pathlib import Path
from typing import Any

from specialists.executors.bridge_home import BridgeKey, Home
from specialists.executors.bridge_serve import run_bridge
from specialists.executors.node import NodeCore


def fake_command(options: dict[str, str]):  # type: ignore[no-untyped-def]
    """A `Command` (bridge_start.py) that starts this fake with `options` (`--root` ...)."""

    def build(key: BridgeKey, home: Home, timeout: float, idle_s: float) -> list[str]:
        argv = [sys.executable, "-m", "tests.support.fake_bridge", "--dir", str(home.path)]
        argv += ["--name", key.name, "--idle", f"{idle_s:g}"]
        for k, v in options.items():
            argv += [k, str(v)]
        return argv

    return build


class LoopbackBackend:
    def __init__(self, options: dict[str, str]) -> None:
        self.core = NodeCore(Path(options["--root"]), node_id="loopback", node_ip="127.0.0.1")
        self.record = Path(options["--record"]) if "--record" in options else None
        self.die_file = Path(options["--die-file"]) if "--die-file" in options else None
        self.hang = options.get("--hang") == "1"
        self.groups = 0

    def lost(self) -> bool:
        return False

    def _note(self, line: str) -> None:
        if self.record is not None:
            with self.record.open("a") as f:
                f.write(line + "\n")

    async def place(self, job_key: str, settings: dict[str, Any]) -> dict[str, Any]:
        group = None
        if settings.get("resources"):
            self.groups += 1
            group = f"{job_key}-{os.getpid()}-{self.groups}"
        self._note(f"place {group}")
        return {"node_id": "loopback", "ip": "127.0.0.1", "group": group}

    async def attach(self, node_id: str, settings: dict[str, Any]) -> dict[str, Any]:
        return {"node_id": node_id, "ip": "127.0.0.1"}

    async def release(self, group: str) -> None:
        self._note(f"release {group}")

    async def call(self, node: list[str], method: str, args: list[Any]) -> Any:
        if self.die_file is not None and self.die_file.exists():
            self.die_file.unlink()
            os._exit(9)
        if self.hang:
            await asyncio.Event().wait()
        return await getattr(self.core, method)(*args)


def mute(options: dict[str, str]) -> int:
    home = Home(Path(options["--dir"]))
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    listener.bind(home.at(options["--name"] + ".sock"))
    listener.listen(16)
    print("ready", flush=True)
    held = []
    deadline = time.monotonic() + 120
    listener.settimeout(1.0)
    while time.monotonic() < deadline:
        try:
            held.append(listener.accept()[0])  # taken, never answered
        except TimeoutError:
            continue
    return 0


if __name__ == "__main__":
    argv = sys.argv[1:]
    options = dict(zip(argv[0::2], argv[1::2], strict=False))
    if options.get("--mute") == "1":
        sys.exit(mute(options))
    sys.exit(run_bridge(argv, LoopbackBackend))
