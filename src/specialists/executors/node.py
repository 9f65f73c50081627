"""The node core: every agent process of one cluster node, in one event loop (no Ray here).

The Ray actor (ray_actor.py) is this class, and the loopback fake
(testing.py) drives it in-process, so everything a node does is tested without Ray. Calls take
and return plain data. Each process has a *lease*: a supervisor's reads renew it; a process
whose supervisor has not read for `lease_s` (it crashed, its machine went away) is killed
with its whole tree, so nothing of a job outlives the job's supervisor for long.
"""

from __future__ import annotations

import asyncio
import itertools
import logging
import os
import shutil
import socket
import sys
import time
from pathlib import Path
from typing import Any

from specialists.base.procstat import rss_bytes
from specialists.executors import nodework
from specialists.executors.nodeproc import NodeProcess, kill_marked
from specialists.process.spawn import SpawnFailed
from specialists.store.proctree import MARK_ENV

log = logging.getLogger(__name__)

LEASE_CHECK_S = 1.0
DEFAULT_LEASE_S = 300.0


class NodeCore:
    """See the module docstring. `root` holds the node's checkouts and job directories."""

    def __init__(self, root: Path, *, node_id: str = "", node_ip: str = "") -> None:
        self.root = root
        self.node_id = node_id
        self.node_ip = node_ip
        self.procs: dict[str, NodeProcess] = {}
        self.leases: dict[str, float] = {}
        self._ids = itertools.count(1)
        self._watchdog: asyncio.Task[None] | None = None
        self.workspaces = nodework.Workspaces(root)
        self.marks: set[str] = set()  # the job marks of the agents started here
        self.expired: list[str] = []  # processes killed because their lease ran out

    async def info(self) -> dict[str, Any]:
        import specialists

        return {
            "node_id": self.node_id,
            "node_ip": self.node_ip,
            "pid": os.getpid(),
            "python": sys.executable,
            "package": str(Path(specialists.__file__).parent),
            "root": str(self.root),
        }

    async def stats(self) -> dict[str, Any]:
        return {
            "processes": sum(1 for p in self.procs.values() if not p.done),
            "known": len(self.procs),
            "buffered": sum(p.buffered for p in self.procs.values()),
            "rss_bytes": rss_bytes(),
            "expired": list(self.expired),
        }

    async def start(self, request: dict[str, Any]) -> dict[str, Any]:
        """Spawn one agent: {"proc", "pid"} or {"error", "missing"}."""
        self._ensure_watchdog()
        env = dict(os.environ)
        for key in request.get("unset", ()):
            env.pop(key, None)
        env.update(request.get("env", {}))
        argv = list(request["argv"])
        found = resolve_program(argv[0], env.get("PATH"), Path(request["cwd"]))
        if found is None:
            return {"error": f"'{argv[0]}' is not installed on this node", "missing": True}
        argv[0] = found
        try:
            proc = NodeProcess(
                asyncio.get_running_loop(),
                argv,
                cwd=Path(request["cwd"]),
                env=env,
                mark=env.get(MARK_ENV),
                stdin_pipe=bool(request.get("stdin_pipe", True)),
                max_line=int(request["max_line"]),
                raw=bool(request.get("raw", False)),
                stderr_cap=request.get("stderr_cap"),
            )
        except SpawnFailed as exc:
            return {"error": f"'{argv[0]}' {exc.reason}", "missing": exc.missing}
        if proc.mark:
            self.marks.add(proc.mark)
        proc_id = f"p{next(self._ids)}"
        self.procs[proc_id] = proc
        self.leases[proc_id] = float(request.get("lease_s", DEFAULT_LEASE_S))
        return {"proc": proc_id, "pid": proc.pid}

    async def read(
        self, proc_id: str, after: int, wait_s: float, ack: int | None = None
    ) -> dict[str, Any]:
        proc = self.procs.get(proc_id)
        if proc is None:
            return {"items": [], "gone": True}
        return await proc.read(after, wait_s, ack)

    async def adopt(self, proc_id: str) -> dict[str, Any]:
        """A restarted supervisor takes the process over (nodeproc.py `adopt`); says whether
        its lease ran out first (then it was killed, and its exit is still to be read)."""
        proc = self.procs.get(proc_id)
        if proc is None:
            return {"gone": True}
        return {**proc.adopt(), "expired": proc_id in self.expired}

    async def write(self, proc_id: str, seq: int, data: bytes, end: bool) -> None:
        proc = self.procs.get(proc_id)
        if proc is not None:
            proc.write(seq, data, end)

    async def close_stdin(self, proc_id: str) -> None:
        proc = self.procs.get(proc_id)
        if proc is not None:
            proc.close_stdin()

    async def signal(self, proc_id: str, sig: int) -> None:
        proc = self.procs.get(proc_id)
        if proc is not None:
            proc.signal_group(sig)

    async def kill(
        self, proc_id: str, scope: str, mark: str | None = None, caller: Any = None
    ) -> int:
        """SIGKILL a process's tree ("tree") or everything of its job ("job"); `mark` reaches
        the job's processes also after the process was forgotten, but only a mark this node
        gave an agent of its own, and never the caller (a supervisor on this machine in a
        shared filesystem carries the same mark). Returns how many died."""
        proc = self.procs.get(proc_id)
        if proc is not None and scope == "tree":
            proc.kill_tree()
            return 1
        spare = _caller_pid(caller)
        if proc is not None:
            proc.signal_group(9)
            mark = proc.mark or mark
        if mark not in self.marks:
            mark = None
        agent = proc.ident if proc is not None else None
        return len(await asyncio.to_thread(kill_marked, mark, agent, spare))

    async def forget(self, proc_id: str) -> None:
        proc = self.procs.pop(proc_id, None)
        self.leases.pop(proc_id, None)
        if proc is not None:
            proc.release()

    # --- the code a job works on --------------------------------------------------------

    async def has_commit(self, repo_key: str, sha: str) -> bool:
        return await asyncio.to_thread(self.workspaces.has_commit, repo_key, sha)

    async def stage(self, request: dict[str, Any]) -> dict[str, Any]:
        return await asyncio.to_thread(self.workspaces.stage, request)

    async def sync_files(self, job_key: str, files: dict[str, bytes]) -> None:
        await asyncio.to_thread(self.workspaces.write_files, job_key, files)

    async def collect(self, job_key: str, job_id: str) -> dict[str, Any]:
        return await asyncio.to_thread(self.workspaces.collect, job_key, job_id)

    async def cleanup(self, job_key: str) -> None:
        await asyncio.to_thread(self.workspaces.cleanup, job_key)

    def _ensure_watchdog(self) -> None:
        if self._watchdog is None or self._watchdog.done():
            self._watchdog = asyncio.get_running_loop().create_task(self._watch())

    async def _watch(self) -> None:
        while True:
            await asyncio.sleep(LEASE_CHECK_S)
            try:
                await self.expire(time.monotonic())
            except Exception:  # the watchdog must outlive one bad pass; the log says why
                log.exception("lease check failed")

    async def expire(self, now: float) -> list[str]:
        """Kill processes whose supervisor stopped reading; forget finished ones nobody
        reads. Returns the ids killed."""
        killed = []
        for proc_id, proc in list(self.procs.items()):
            if now - proc.touched <= self.leases.get(proc_id, DEFAULT_LEASE_S):
                continue
            if not proc.done:
                log.warning("lease of %s (pid %s) ran out: killing its job", proc_id, proc.pid)
                await asyncio.to_thread(kill_marked, proc.mark, proc.ident)
                proc.signal_group(9)
                killed.append(proc_id)
                self.expired.append(proc_id)
            else:
                await self.forget(proc_id)
        return killed


def resolve_program(program: str, path: str | None, cwd: Path) -> str | None:
    """The program on this node: a relative path in the job's checkout, an absolute path
    when it is executable here, else its name on this node's PATH (a node installs pi or
    claude in its own place)."""
    if "/" in program and not os.path.isabs(program):
        program = str(cwd / program)
    if os.path.isabs(program) and os.access(program, os.X_OK) and os.path.isfile(program):
        return program
    return shutil.which(os.path.basename(program), path=path)


def _caller_pid(caller: Any) -> tuple[int, ...]:
    """The caller's pid when it runs on this machine ([hostname, pid]), to spare it."""
    if isinstance(caller, list | tuple) and len(caller) == 2 and caller[0] == socket.gethostname():
        return (int(caller[1]),)
    return ()
