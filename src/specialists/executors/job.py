"""A job whose agent runs on another node: the runner the supervisor gets (`RemoteJobRunner`).

It wraps the job's own runner (pi, claude, codex, command; the native loop through the relay)
and changes only where its processes run:

- `start`: place the job (a `Connector`: Ray's in ray_place.py, the loopback in testing.py),
  send the code (workspace.py; nothing with `workspace = "shared"`), record where it runs in
  `executor.json` (for crash recovery), then start the inner runner with a `RemoteHost`.
- `poll`: the inner runner's events; before the agent's last exit is passed on, the job's
  changes come back (landed as a sandbox) with the files the agent wrote in its job directory
  (its session, so `--continue` works), each said in a notice.
- `handle`: no pid. status.json's pid is a process on *this* machine (recovery kills it);
  the node's pid and process id are in executor.json.
- `checkpoint` / `adopt`: what a restarted supervisor needs to take the running agent over
  (supervise/checkpoint.py), for inner runners that can be adopted (`Adoptable`).

`remote_runner` makes it (runners/registry.py `EXECUTORS["ray"]`).
"""

from __future__ import annotations

import logging
import sys
import zlib
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

from specialists.base.errors import AgentUnavailable, SpecialistsError
from specialists.executors.remote import NodeClient, NodeGone, RemoteHost, RemoteProcess
from specialists.executors.travel import LOCAL_DIRS, LOCAL_ONLY, PathMap
from specialists.process.host import AdoptedProcess
from specialists.runners import registry
from specialists.runners.base import (
    Activity,
    AgentExited,
    AgentHandle,
    AgentRunner,
    Command,
    CommandKind,
    LaunchSpec,
    RunnerEvent,
)
from specialists.store.atomic import write_atomic
from specialists.store.files import object_or_none
from specialists.store.kinds import JOB
from specialists.store.proctree import job_mark

log = logging.getLogger(__name__)

EXECUTOR_FILE = "executor.json"
COLLECT_WAIT_S = 600.0
STAGE_WAIT_S = 600.0


class Placement(Protocol):
    client: NodeClient
    node: str  # "Ray node 1a2b3c4d5e6f (10.0.0.7)"
    node_id: str

    def release(self) -> None: ...


class Connector(Protocol):
    def place(self, job_key: str, settings: Mapping[str, Any]) -> Placement: ...

    def attach(self, node_id: str, settings: Mapping[str, Any]) -> Placement:
        """The node a job already runs on (no new reservation)."""
        ...


@runtime_checkable
class Adoptable(Protocol):
    """A runner whose agent a restarted supervisor can take over.

    `adopt_state()`: what its parser had after the output read so far (small, JSON-able;
    None: nothing to take over now). With `"idle": true` the runner needs no running process
    (a one-shot agent between runs). `adopt(spec, state, proc)` goes on from that state, on
    the adopted process (None for an idle state); the output after the checkpoint is then
    fed to it again. The state it gets also says `then`: what came after the checkpoint
    (checkpoint.py)."""

    def adopt_state(self) -> dict[str, Any] | None: ...

    def adopt(
        self, spec: LaunchSpec, state: Mapping[str, Any], proc: AdoptedProcess | None
    ) -> None: ...


def job_key(job_dir: Path) -> str:
    """Names the job on a node: its id and a hash of where it lives (ids repeat across
    projects)."""
    return f"{job_dir.name}-{zlib.crc32(job_mark(job_dir).encode()):08x}"


class RemoteJobRunner:
    def __init__(self, inner: AgentRunner, settings: Mapping[str, Any], connector: Connector):
        self.inner = inner
        self.name = getattr(inner, "name", "remote")
        self.settings = dict(settings)
        self._connector = connector
        self._placement: Placement | None = None
        self._snapshot: Any = None
        self._pairs: list[tuple[str, str]] = []
        self._job_dir: Path | None = None
        self._key = ""
        self._collected = False
        self._notes: list[RunnerEvent] = []
        self._host: RemoteHost | None = None
        self._recorded: RemoteProcess | None = None  # the process executor.json names

    @property
    def handle(self) -> AgentHandle:
        return AgentHandle(session_ref=self.inner.handle.session_ref)

    def accepts(self) -> frozenset[CommandKind]:
        return self.inner.accepts()

    def send(self, command: Command) -> None:
        self.inner.send(command)

    def start(self, spec: LaunchSpec) -> None:
        self._job_dir, self._key = spec.job_dir, job_key(spec.job_dir)
        placement = self._connector.place(self._key, self.settings)
        self._placement = placement
        try:
            host = self._prepare(spec, placement)
            self.inner.start(spec._replace(host=host))
        except BaseException:
            placement.release()
            raise
        self._record(placement)

    # --- a restarted supervisor ----------------------------------------------------------

    @property
    def node(self) -> str:
        return self._placement.node if self._placement is not None else "unplaced job"

    @property
    def adoptable(self) -> bool:
        return isinstance(self.inner, Adoptable)

    def checkpoint(self, *, adoptable: bool) -> dict[str, Any] | None:
        """The agent's state for a successor: where its output was read to (None between
        the runs of a one-shot agent) and the inner runner's state; or None (nothing to
        adopt: ack what was read at once)."""
        proc = self._host.latest if self._host is not None else None
        if self._collected:
            return None
        if proc is not None and not proc.done and proc is not self._recorded:
            assert self._placement is not None
            self._record(self._placement)  # a runner that starts a process per run
        state = (
            self.inner.adopt_state() if adoptable and isinstance(self.inner, Adoptable) else None
        )
        if state is not None and state.get("idle"):
            return {"cursor": None, "runner": state}
        cursor = proc.cursor() if state is not None and proc is not None and not proc.done else None
        if cursor is None or state is None:
            if proc is not None:
                proc.commit_all()
            return None
        return {"cursor": cursor, "runner": state}

    def committed(self, checkpoint: Mapping[str, Any]) -> None:
        """`checkpoint` is on disk: the node may drop what it covers, and forget a process
        that ended before it (a successor no longer needs its output)."""
        proc = self._host.latest if self._host is not None else None
        if proc is not None and checkpoint["cursor"] is not None:
            proc.commit(int(checkpoint["cursor"]["seq"]))
        if self._host is not None:
            self._host.forget_recorded(keep=proc if checkpoint["cursor"] is not None else None)

    def adopt(self, spec: LaunchSpec, checkpoint: Mapping[str, Any]) -> None:
        """Take over the agent a dead supervisor left on its node, from its checkpoint."""
        if not isinstance(self.inner, Adoptable):
            raise AgentUnavailable(f"the {self.name} runner cannot take over a running agent")
        record = read_executor_record(spec.job_dir) or {}
        self._job_dir, self._key = spec.job_dir, str(record.get("job_key") or job_key(spec.job_dir))
        node_id = str(record.get("node_id") or "")
        if not node_id:
            raise AgentUnavailable("executor.json names no node to reattach to")
        placement = self._connector.attach(node_id, self.settings)
        self._placement = placement
        host = self._host_for(spec, placement, record)
        cursor = checkpoint["cursor"]
        proc = None
        if cursor is not None:
            proc = host.adopt(cursor, stderr_log=spec.job_dir / "stderr.log")
        self._recorded = proc
        if not record.get("shared"):
            from specialists.executors.workspace import Snapshot

            self._snapshot = Snapshot.of_record(record["snapshot"])
        state = {**checkpoint["runner"], "then": checkpoint.get("then", "output")}
        self.inner.adopt(spec._replace(host=host), state, proc)

    def poll(self, timeout: float) -> list[RunnerEvent]:
        events = self._notes + self.inner.poll(timeout)
        self._notes = []
        for at, event in enumerate(events):
            if isinstance(event, AgentExited) and not self._collected:
                self._collected = True
                return [*events[:at], *self._collect(), *events[at:]]
        return events

    # --- out ---------------------------------------------------------------------------

    def _prepare(self, spec: LaunchSpec, placement: Placement) -> RemoteHost:
        client = placement.client
        info = client.call_sync("info")
        pairs = [(str(Path(__file__).parent.parent), info["package"])]
        pairs.append((sys.executable, info["python"]))
        shared = self.settings.get("workspace") == "shared"
        where = f"the job runs on the {placement.node}"
        if shared:
            self._note(f"{where}; it works on the shared filesystem at {spec.cwd}")
        else:
            staged = self._stage(spec, client)
            pairs += [(str(self._snapshot.toplevel), staged["work"])]
            pairs += [(str(spec.job_dir), staged["job_dir"])]
            carried = self._snapshot.carried
            extra = f", with {carried} uncommitted or untracked paths" if carried else ""
            self._note(
                f"{where}; its code travels as {self._snapshot.base[:12]}{extra} "
                "(ignored files stay here)"
            )
        self._pairs = pairs
        self._record(placement)
        return self._new_host(spec, placement)

    def _new_host(self, spec: LaunchSpec, placement: Placement) -> RemoteHost:
        shared = self.settings.get("workspace") == "shared"
        self._host = RemoteHost(
            placement.client,
            paths=PathMap.of(self._pairs),
            forward_env=list(self.settings.get("forward_env") or ()),
            job_dir=None if shared else spec.job_dir,
            job_key=self._key,
            lease_s=float(self.settings.get("lease_s", 60.0)),
        )
        self._host.checkpointed = self.adoptable
        return self._host

    def _host_for(
        self, spec: LaunchSpec, placement: Placement, record: Mapping[str, Any]
    ) -> RemoteHost:
        """The host of a job being taken over: its path pairs as executor.json kept them."""
        self._pairs = [(str(a), str(b)) for a, b in record.get("paths") or ()]
        host = self._new_host(spec, placement)
        host.mark_sent()
        return host

    def _stage(self, spec: LaunchSpec, client: NodeClient) -> dict[str, Any]:
        from specialists.executors.workspace import make_bundle, take_snapshot

        snapshot = take_snapshot(spec.cwd, spec.job_id)
        self._snapshot = snapshot
        have = client.call_sync("has_commit", snapshot.repo_key, snapshot.base)
        request = {
            "job_key": self._key,
            "repo_key": snapshot.repo_key,
            "base": snapshot.base,
            "bundle": None if have else make_bundle(snapshot, spec.job_id),
            "subdir": snapshot.subdir,
        }
        staged: dict[str, Any] = client.call_sync("stage", request, timeout=STAGE_WAIT_S)
        if "error" in staged:
            raise AgentUnavailable(
                f"the job's code could not be set up on the node: {staged['error']}"
            )
        return staged

    def _record(self, placement: Placement) -> None:
        """executor.json: enough for a later process to reach and kill the job's agent."""
        assert self._job_dir is not None
        proc = self._host.latest if self._host is not None else None
        self._recorded = proc
        record: dict[str, Any] = {
            "v": 1,
            "kind": "ray",
            "address": self.settings.get("address"),
            "namespace": self.settings.get("namespace"),
            "node_id": placement.node_id,
            "node": placement.node,
            "job_key": self._key,
            "mark": job_mark(self._job_dir),
            "paths": self._pairs,
            "shared": self.settings.get("workspace") == "shared",
        }
        if self._snapshot is not None:
            record["snapshot"] = self._snapshot.to_record()
        if proc is not None:  # the agent's process on the node
            record["proc"], record["pid"] = proc.proc_id, proc.pid
        JOB.record(self._job_dir).replace(EXECUTOR_FILE.removesuffix(".json"), record)

    def _note(self, message: str, **fields: object) -> None:
        self._notes.append(Activity("notice", {"message": message, **fields}))

    # --- back --------------------------------------------------------------------------

    def _collect(self) -> list[RunnerEvent]:
        placement = self._placement
        if placement is None:
            return []
        notes: list[RunnerEvent] = []

        def note(message: str, **fields: object) -> None:
            notes.append(Activity("notice", {"message": message, **fields}))

        try:
            if self.settings.get("workspace") != "shared":
                self._bring_back(placement, note)
        except NodeGone as exc:
            note(f"{exc}: the job's changes and session on it are lost", level="warning")
        except (SpecialistsError, OSError) as exc:
            note(f"could not bring the job's changes back: {exc}", level="warning")
        finally:
            if self._host is not None:
                self._host.forget_recorded(keep=None)
            placement.release()
        return notes

    def _bring_back(self, placement: Placement, note: Any) -> None:
        client, job_dir = placement.client, self._job_dir
        assert job_dir is not None
        job_id = job_dir.name
        result = client.call_sync("collect", self._key, job_id, timeout=COLLECT_WAIT_S)
        for name, data in result.get("files", {}).items():
            rel = Path(name)
            local = rel.parts[0] in LOCAL_DIRS or rel.name in LOCAL_ONLY
            if rel.is_absolute() or ".." in rel.parts or local:
                continue
            (job_dir / rel).parent.mkdir(parents=True, exist_ok=True)
            write_atomic(job_dir / rel, data)
        for problem in result.get("problems", ()):
            note(f"from the node: {problem}", level="warning")
        bundle = result.get("bundle")
        if bundle:
            from specialists.executors.workspace import land

            project = job_dir.parent.parent.parent
            landed = land(project, self._snapshot, job_id, bundle, placement.node)
            named = landed.kind in ("sandbox", "branch")
            note(landed.message, **({landed.kind: landed.name} if named else {}))
        elif result.get("tip"):
            note("the job changed no file in its checkout")
        client.fire("cleanup", self._key)


def read_executor_record(job_dir: Path) -> dict[str, Any] | None:
    """executor.json, or None (a local job)."""
    return object_or_none(job_dir / EXECUTOR_FILE, 1 << 16)


def remote_runner(runner: str, executor: Mapping[str, Any]) -> AgentRunner:
    """The job's runner on a Ray node (runners.registry.EXECUTORS["ray"]). Ray is imported
    only for a job that runs on it, and only once the job starts (ray_place.py)."""
    from specialists.executors.settings import require_ray

    require_ray()
    if runner == "native":  # an in-process loop: it runs on the node as a relay process
        from specialists.executors.relay import RelayRunner

        inner: AgentRunner = RelayRunner()
    else:
        inner = registry.make_runner(runner)
    return RemoteJobRunner(inner, executor, _RayConnectorLazy())


class _RayConnectorLazy:
    """Imports what reaches Ray when the job is placed, not when its runner is made: the
    machine's shared connection (no Ray in this process), or Ray itself (`direct`)."""

    def place(self, job_key: str, settings: Mapping[str, Any]) -> Any:
        return _connector(settings).place(job_key, settings)

    def attach(self, node_id: str, settings: Mapping[str, Any]) -> Any:
        return _connector(settings).attach(node_id, settings)


def _connector(settings: Mapping[str, Any]) -> Any:
    if settings.get("connection", "shared") == "direct":
        from specialists.executors.ray_place import RayConnector

        return RayConnector()
    from specialists.executors.bridge_client import BridgeConnector

    return BridgeConnector()
