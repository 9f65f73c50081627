"""The pi extension's side of the sidecar protocol, for tests (pi_extension/sidecar.py).

`Peer` writes requests and collects everything the sidecar writes back (replies and
pushes) on a reader thread; tests wait on conditions, never on fixed sleeps.
`in_process(front)` runs a `Sidecar` on a thread over two pipes; `spawn(owner, cwd)` starts
the real `python -m specialists sidecar` subprocess.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any, BinaryIO

from specialists.fronts.pi.ops import Front
from specialists.fronts.pi.sidecar import Sidecar
from tests.support.collect import Collected

Message = dict[str, Any]


class Peer:
    def __init__(self, to_sidecar: BinaryIO, from_sidecar: BinaryIO) -> None:
        self._to = to_sidecar
        self.seen: Collected[Message] = Collected()
        self._next_id = 1
        threading.Thread(target=self._read, args=(from_sidecar,), daemon=True).start()

    def _read(self, stream: BinaryIO) -> None:
        for line in stream:
            self.seen.add(json.loads(line))  # the sidecar must only ever write JSON lines
        self.seen.close()

    @property
    def messages(self) -> list[Message]:
        return self.seen.items

    # --- writing ----------------------------------------------------------------------------

    def send_raw(self, data: bytes) -> None:
        self._to.write(data)
        self._to.flush()

    def send(self, message: Mapping[str, Any]) -> None:
        self.send_raw((json.dumps(message) + "\n").encode())

    def request(self, op: str, timeout: float = 20.0, **fields: Any) -> Message:
        rid = self._next_id
        self._next_id += 1
        mark = self.seen.mark()
        self.send({"id": rid, "op": op, **fields})
        return self.wait(lambda m: m.get("id") == rid and "push" not in m, timeout, after=mark)

    def result(self, op: str, timeout: float = 20.0, **fields: Any) -> Any:
        reply = self.request(op, timeout, **fields)
        assert reply["ok"], reply
        return reply["result"]

    def close(self) -> None:
        self._to.close()

    # --- waiting ----------------------------------------------------------------------------

    def wait(
        self, pred: Callable[[Message], bool], timeout: float = 20.0, *, after: int = 0
    ) -> Message:
        return self.seen.wait(pred, timeout, after=after)

    def wait_push(
        self, kind: str, pred: Callable[[Message], bool] = lambda m: True, **kw: Any
    ) -> Message:
        return self.wait(lambda m: m.get("push") == kind and pred(m), **kw)

    def pushes(self, kind: str) -> list[Message]:
        return self.seen.matching(lambda m: m.get("push") == kind)

    def wait_eof(self, timeout: float = 20.0) -> None:
        self.seen.wait_eof(timeout)


class InProcess:
    """A Sidecar on a thread, over pipes: what the extension sees, without a subprocess."""

    def __init__(self, front: Front, **kw: Any) -> None:
        r_in, w_in = os.pipe()
        r_out, w_out = os.pipe()
        self.front = front
        self.sidecar = Sidecar(
            front, os.fdopen(r_in, "rb"), os.fdopen(w_out, "wb"), parent_alive=lambda: True, **kw
        )
        self.exit_code: int | None = None
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()
        self.peer = Peer(os.fdopen(w_in, "wb"), os.fdopen(r_out, "rb"))

    def _run(self) -> None:
        try:
            self.exit_code = self.sidecar.run()
        finally:
            self.sidecar.stdout.close()

    def close(self, timeout: float = 10.0) -> None:
        self.peer.close()
        self.thread.join(timeout)
        assert not self.thread.is_alive(), "the sidecar did not end when its stdin closed"


def spawn(
    owner: str, cwd: Path, *, env: Mapping[str, str] | None = None
) -> tuple[Peer, subprocess.Popen[bytes]]:
    proc = subprocess.Popen(
        [sys.executable, "-m", "specialists", "sidecar", "--owner", owner, "--cwd", str(cwd)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=dict(env if env is not None else os.environ),
    )
    assert proc.stdin is not None and proc.stdout is not None
    return Peer(proc.stdin, proc.stdout), proc
