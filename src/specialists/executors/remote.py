"""An agent process on another node, as the runners see it: `RemoteHost` and `RemoteProcess`.

Both talk to the node through a `NodeClient` (Ray refs in ray_link.py, the in-process loopback
in testing.py), so the same code is tested with and without Ray.

- Output: one read is always in flight (`read(after=<last seq>)`, which waits on the node up
  to NODE_WAIT_S), so a line reaches the runner one round trip after the agent wrote it. The
  reply acknowledges what came before; after a lost connection the next read starts from the
  last sequence number seen, and nothing is lost or seen twice.
- stdin: writes are numbered and sent without waiting; the node applies them in order.
- stderr goes to the local stderr.log (capped on the node); its tail is kept for messages.
- A node that dies ends the process as killed (SIGKILL) with the node named in the stderr
  tail, so the job ends `error` saying which node died.
"""

from __future__ import annotations

import logging
import os
import socket
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any, BinaryIO, Protocol

from specialists.base.errors import AgentUnavailable
from specialists.base.vocab import NODE_COPY_ENV
from specialists.executors.travel import PathMap, SentFiles, remote_env
from specialists.process.agent import DEFAULT_MAX_LINE, STDERR_LOG_CAP, STDERR_TAIL, describe_exit
from specialists.process.lines import Line, OversizedLine
from specialists.process.spawn import exit_status
from specialists.store.proctree import MARK_ENV

log = logging.getLogger(__name__)

NODE_WAIT_S = 5.0  # how long one read waits on the node for output
KILL_WAIT_S = 15.0
START_WAIT_S = 60.0
KILLED = -9


class NodeGone(Exception):
    """The node (or its actor) is dead; the message names it."""


class LinkLost(Exception):
    """The connection was lost and has been made again: ask again."""


class NodeClient(Protocol):
    name: str

    def call(self, method: str, *args: Any) -> Any: ...

    def wait(self, pending: Any, timeout: float) -> bool: ...

    def result(self, pending: Any, timeout: float | None = None) -> Any: ...

    def fire(self, method: str, *args: Any) -> None: ...

    def reap(self) -> None: ...

    def call_sync(self, method: str, *args: Any, timeout: float = 60.0) -> Any: ...


class RemoteHost:
    """A `ProcessHost` whose processes run on one node (base.py)."""

    def __init__(
        self,
        client: NodeClient,
        *,
        paths: PathMap,
        forward_env: Sequence[str],
        job_dir: Path | None,
        job_key: str,
        lease_s: float,
    ) -> None:
        self.client = client
        self.paths = paths
        self.forward_env = tuple(forward_env)
        self.job_dir = job_dir  # None: shared filesystem, nothing to send
        self.job_key = job_key
        self.lease_s = lease_s
        self._files = SentFiles(job_dir)
        self.latest: RemoteProcess | None = None  # the last process started or adopted
        self.ended: list[RemoteProcess] = []  # released, kept on the node until a checkpoint
        self.checkpointed = False  # acknowledge only what a checkpoint recorded (checkpoint.py)

    def spawn(
        self,
        argv: Sequence[str],
        *,
        cwd: Path,
        env: Mapping[str, str] | None = None,
        stderr_log: Path | None = None,
        stdin_pipe: bool = True,
        max_line: int = DEFAULT_MAX_LINE,
        raw: bool = False,
        stderr_cap: int | None = STDERR_LOG_CAP,
    ) -> RemoteProcess:
        self.sync_job_files()
        job_env = dict(env if env is not None else os.environ)
        if self.job_dir is not None:  # a copy: the job's store stays here (vocab.NODE_COPY_ENV)
            job_env[NODE_COPY_ENV] = "1"
        extra = remote_env(job_env, os.environ, self.forward_env, self.paths)
        request = {
            "argv": self.paths.to_node_all([str(a) for a in argv]),
            "cwd": self.paths.to_node(str(cwd)),
            "env": extra.set,
            "unset": list(extra.unset),
            "stdin_pipe": stdin_pipe,
            "max_line": max_line,
            "raw": raw,
            "stderr_cap": stderr_cap,
            "lease_s": self.lease_s,
        }
        try:
            started = self.client.call_sync("start", request, timeout=START_WAIT_S)
        except NodeGone as exc:
            raise AgentUnavailable(f"cannot start agent: {exc}") from exc
        if "error" in started:
            raise AgentUnavailable(
                f"cannot start agent on the {self.client.name}: {started['error']}"
            )
        self.latest = RemoteProcess(
            self.client,
            started,
            paths=self.paths,
            stderr_log=stderr_log,
            raw=raw,
            mark=self.paths.to_node(job_env.get(MARK_ENV) or "") or None,
            checkpointed=self.checkpointed,
            on_release=self.ended.append,
        )
        return self.latest

    def adopt(self, cursor: Mapping[str, Any], *, stderr_log: Path | None) -> RemoteProcess:
        """The agent process a dead supervisor left on the node, as its checkpoint names it
        (supervise/checkpoint.py): read on from the checkpoint's last item, stdin numbered on
        from the last write the node applied, and stderr.log cut back to what the checkpoint
        saw (the rest comes again). Refused, with the reason, for a process the node no
        longer knows or a cursor its output does not cover."""
        proc_id = str(cursor["proc"])
        try:
            adopted = self.client.call_sync("adopt", proc_id, timeout=START_WAIT_S)
        except NodeGone as exc:
            raise AgentUnavailable(f"cannot reattach to the agent: {exc}") from exc
        if adopted.get("gone"):
            raise AgentUnavailable(
                f"the {self.client.name} no longer knows the agent "
                f"(its lease of {self.lease_s:g}s ran out before a supervisor came back)"
            )
        check_cursor(int(cursor["seq"]), adopted, self.client.name)
        if stderr_log is not None:
            with open(stderr_log, "r+b") as f:
                f.truncate(min(int(cursor.get("stderr_bytes", 0)), os.fstat(f.fileno()).st_size))
        proc = RemoteProcess(
            self.client,
            {"proc": proc_id, "pid": adopted["pid"]},
            paths=self.paths,
            stderr_log=stderr_log,
            raw=bool(cursor.get("raw")),
            mark=cursor.get("mark"),
            checkpointed=True,
            on_release=self.ended.append,
        )
        proc.resume_at(int(cursor["seq"]), int(adopted["wseq"]))
        if adopted.get("expired"):
            proc.expired = True
        self.latest = proc
        return proc

    def forget_recorded(self, keep: RemoteProcess | None) -> None:
        """A checkpoint is on disk: the node may forget the ended processes it no longer
        covers (a successor will not read them again)."""
        for proc in self.ended:
            if proc is not keep:
                proc.forget_now()
        self.ended = [p for p in self.ended if p is keep]

    def sync_job_files(self) -> None:
        """Send the job directory's files the runner wrote since the last spawn (the system
        prompt, a session being continued), so the agent finds them on the node."""
        changed = self._files.changed()
        if changed:
            files = {key: path.read_bytes() for key, path, _ in changed}
            self.client.call_sync("sync_files", self.job_key, files, timeout=START_WAIT_S)
        self._files.mark(changed)

    def mark_sent(self) -> None:
        """A job taken over: its predecessor sent these files already (and the agent may
        have changed its own copies on the node since)."""
        self._files.mark(self._files.changed())


class RemoteProcess:
    """`HostedProcess` (base.py) for an agent on a node; see the module docstring."""

    def __init__(
        self,
        client: NodeClient,
        started: Mapping[str, Any],
        *,
        paths: PathMap,
        stderr_log: Path | None,
        raw: bool,
        mark: str | None,
        checkpointed: bool = False,
        on_release: Callable[[RemoteProcess], None] | None = None,
    ) -> None:
        self._client = client
        self._on_release = on_release
        self._forget_due = False
        self._id = str(started["proc"])
        self.pid = int(started["pid"])
        self._paths = paths
        self._raw = raw
        self._mark = mark
        self._seq = 0  # the last item taken
        # The last item the node may drop: with checkpoints, only what one recorded.
        self._ack: int | None = 0 if checkpointed else None
        self.expired = False  # adopted after the node's lease killed it
        self._pending: Any = None  # the read in flight
        self._wseq = 0
        self._input_closed = False
        self.returncode: int | None = None
        self._done = False
        self._carry: list[Line] = []  # read by wait() before anyone asked for it
        self._tail = bytearray()
        self._log: BinaryIO | None = open(stderr_log, "ab") if stderr_log else None  # noqa: SIM115
        self.input_broken = False

    def send(self, data: bytes) -> None:
        if self._input_closed or not data:
            return
        self._wseq += 1
        self._client.fire("write", self._id, self._wseq, bytes(data), False)

    def end_input(self) -> None:
        if not self._input_closed:
            self._input_closed = True
            self._wseq += 1
            self._client.fire("write", self._id, self._wseq, b"", True)

    def close_stdin(self) -> None:
        if not self._input_closed:
            self._input_closed = True
            self._client.fire("close_stdin", self._id)

    @property
    def input_pending(self) -> bool:
        return False  # sent at once; the node writes it as the pipe takes it

    def read(self, timeout: float) -> list[Line]:
        if self._carry:
            out, self._carry = self._carry, []
            return out
        if self._done:
            time.sleep(max(0.0, timeout))
            return []
        deadline = time.monotonic() + max(0.0, timeout)
        while True:
            if self._pending is None:
                ack = self._seq if self._ack is None else self._ack
                self._pending = self._client.call("read", self._id, self._seq, NODE_WAIT_S, ack)
            if not self._client.wait(self._pending, max(0.0, deadline - time.monotonic())):
                return []
            pending, self._pending = self._pending, None
            try:
                batch = self._client.result(pending)
            except LinkLost as exc:
                log.warning("connection to the %s lost, reading again: %s", self._client.name, exc)
                continue
            except NodeGone as exc:
                self._end(KILLED, str(exc))
                return []
            out = self._take(batch)
            self._client.reap()
            if out or self._done or time.monotonic() >= deadline:
                return out

    # --- checkpoints (supervise/checkpoint.py) ----------------------------------------------

    def cursor(self) -> dict[str, Any] | None:
        """What a successor needs to read on exactly where this one stopped (None while
        output read ahead by wait() is not handed out yet)."""
        if self._carry:
            return None
        return {
            "proc": self._id,
            "pid": self.pid,
            "seq": self._seq,
            "raw": self._raw,
            "mark": self._mark,
            "wseq": self._wseq,
            "stderr_bytes": os.fstat(self._log.fileno()).st_size if self._log is not None else 0,
        }

    def commit(self, seq: int) -> None:
        """A checkpoint recorded everything up to `seq`: the node may drop it."""
        if self._ack is not None:
            self._ack = max(self._ack, seq)

    def commit_all(self) -> None:
        """No more checkpoints: the node may drop whatever has been read."""
        self._ack = None
        self.forget_now()

    def forget_now(self) -> None:
        if self._forget_due:
            self._forget_due = False
            self._client.fire("forget", self._id)

    @property
    def proc_id(self) -> str:
        return self._id

    def renumber_input(self, wseq: int) -> int:
        """Number stdin writes on from `wseq` (a successor sends its predecessor's input
        again from 0: the node applies each number once); returns the number it had."""
        before, self._wseq = self._wseq, wseq
        self._input_closed = False
        return before

    def resume_at(self, seq: int, wseq: int) -> None:
        self._seq = seq
        self._ack = seq
        self._wseq = wseq

    def _take(self, batch: Mapping[str, Any]) -> list[Line]:
        out: list[Line] = []
        if batch.get("gone"):
            self._end(KILLED, f"the {self._client.name} no longer knows the agent")
            return out
        for seq, kind, payload in batch.get("items", ()):
            if seq <= self._seq:
                continue  # seen before a reconnect
            self._seq = seq
            if kind == "l":
                out.append(self._paths.line_to_local(payload) if self._paths.pairs else payload)
            elif kind == "c":
                out.append(payload)
            elif kind == "L":
                out.append(OversizedLine(payload[0], payload[1]))
            elif kind == "e":
                self._stderr(payload)
            elif kind == "x":
                returncode, _tail = payload
                self._end(int(returncode), "")
        return out

    def _stderr(self, chunk: bytes) -> None:
        self._tail += chunk
        del self._tail[:-STDERR_TAIL]
        if self._log is not None:
            self._log.write(chunk)
            self._log.flush()

    def _end(self, returncode: int, why: str) -> None:
        if self.expired and returncode == KILLED:
            why = why or (
                f"the {self._client.name} killed the agent: its lease ran out while no "
                "supervisor was reading"
            )
        if why:
            self._stderr(f"\n{why}\n".encode())
        self.returncode = returncode
        self._done = True

    @property
    def done(self) -> bool:
        return self._done and not self._carry

    @property
    def stdout_closed(self) -> bool:
        return self._done

    @property
    def stderr_tail(self) -> str:
        return self._tail.decode("utf-8", "replace")

    def poll_exit(self) -> int | None:
        return self.returncode

    def wait(self, timeout: float) -> int | None:
        deadline = time.monotonic() + max(0.0, timeout)
        while not self._done and time.monotonic() < deadline:
            self._carry.extend(self.read(deadline - time.monotonic()))
        return self.returncode

    def describe_exit(self, who: str) -> str:
        code, sig = exit_status(self.returncode)
        return describe_exit(who, code, sig, self.stderr_tail)

    def signal_group(self, sig: int) -> None:
        if not self._done:
            self._client.fire("signal", self._id, int(sig))

    def kill_tree(self) -> None:
        self._kill("tree")

    def kill_job(self) -> None:
        self._kill("job")

    def _kill(self, scope: str) -> None:
        """Wait for the node to say it killed them: a stop is over when the tree is gone."""
        try:
            caller = [socket.gethostname(), os.getpid()]
            self._client.call_sync("kill", self._id, scope, self._mark, caller, timeout=KILL_WAIT_S)
        except NodeGone:
            return  # the node and everything on it are gone already
        except Exception as exc:  # noqa: BLE001 - a lost node: its lease ends the agent
            log.warning("killing the agent on the %s failed: %s", self._client.name, exc)

    def release(self) -> None:
        """Done with the process. Under checkpoints the node keeps it until the next one is
        on disk (a successor of a supervisor that dies first reads its last output again)."""
        if self._ack is None:
            self._client.fire("forget", self._id)
        elif not self._forget_due:
            self._forget_due = True
            if self._on_release is not None:
                self._on_release(self)
        if self._log is not None:
            self._log.close()
            self._log = None


def check_cursor(seq: int, adopted: Mapping[str, Any], node: str) -> None:
    """The node must still hold every item after the checkpoint's: a cursor past its output
    (a checkpoint of another process, or a damaged one) or output it has dropped would make
    the successor miss part of the agent's output, silently."""
    last, first = adopted.get("seq"), adopted.get("first")
    if last is None or first is None:
        return  # a node of an older version: it drops only what a checkpoint recorded
    if seq > int(last):
        raise AgentUnavailable(
            f"the checkpoint reads the agent's output from item {seq}, past the {int(last)} "
            f"the {node} has (the checkpoint is not this agent's)"
        )
    if int(first) > seq + 1:
        raise AgentUnavailable(
            f"the {node} has dropped the agent's output after item {seq} (it keeps items "
            f"from {int(first)}), so it cannot be read again"
        )
