"""The local side of "the code travels with the job": a snapshot out, a sandbox back.

Out: the job works on the tree the user would see locally. `take_snapshot` records the
working copy as a commit without touching it (a copy of the index, `git add -A` into the
copy, `git commit-tree`): committed work, uncommitted changes and untracked files that are
not ignored. Ignored files (.env, build output, node_modules) never travel; neither does
`.specialists/`. A clean working copy's snapshot is HEAD itself. The snapshot is pinned by
`refs/specialists/jobs/<id>/base` and sent as a git bundle (once per node: a node that has
the commit is sent nothing).

Back: the node's commits after the snapshot, plus what the agent left uncommitted (committed
on the node), arrive as a bundle. `land` fetches them to `refs/specialists/jobs/<id>/tip` and
lands them as the sandbox `<id>` (branch `sandbox-<id>`, sandbox/), created at the snapshot,
so `squash_sandbox` merges exactly the job's changes, and only when someone asks.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import socket
import tempfile
from collections.abc import Mapping
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, Literal

from specialists.base.errors import UserError
from specialists.executors import nodework
from specialists.process.short import run_short

STATE_DIR = ".specialists"
SNAPSHOT_IDENTITY = {
    "GIT_AUTHOR_NAME": "specialists",
    "GIT_AUTHOR_EMAIL": "specialists@localhost",
    "GIT_COMMITTER_NAME": "specialists",
    "GIT_COMMITTER_EMAIL": "specialists@localhost",
}


class WorkspaceProblem(UserError):
    """The job's code cannot travel: not a repository, no commit, git failed."""


@dataclass(frozen=True)
class Snapshot:
    toplevel: Path  # the working copy
    subdir: str  # the job's cwd, relative to it
    base: str  # the commit the job starts from (HEAD, or a snapshot of the working tree)
    head: str  # HEAD when the snapshot was taken
    carried: int  # uncommitted or untracked paths in the snapshot
    repo_key: str  # names this repository's cache on a node

    def to_record(self) -> dict[str, object]:
        """For executor.json: a restarted supervisor lands the job's changes from it."""
        return {**asdict(self), "toplevel": str(self.toplevel)}

    @classmethod
    def of_record(cls, data: Mapping[str, Any]) -> Snapshot:
        return cls(
            toplevel=Path(str(data["toplevel"])),
            subdir=str(data["subdir"]),
            base=str(data["base"]),
            head=str(data["head"]),
            carried=int(data["carried"]),
            repo_key=str(data["repo_key"]),
        )


def ref_of(job_id: str, what: str) -> str:
    return f"refs/specialists/jobs/{job_id}/{what}"


def _git(cwd: Path, *args: str, env: dict[str, str] | None = None) -> str:
    try:
        return nodework.git(cwd, *args, env={"GIT_OPTIONAL_LOCKS": "0", **(env or {})})
    except nodework.WorkspaceError as exc:
        raise WorkspaceProblem(str(exc)) from None


def take_snapshot(cwd: Path, job_id: str) -> Snapshot:
    """The working tree `cwd` is in, as a commit (see the module docstring)."""
    probe = run_short(["git", "rev-parse", "--show-toplevel"], cwd=cwd, timeout=30)
    if not probe.ok:
        raise WorkspaceProblem(
            f"{cwd} is not in a git repository, so its code cannot travel to a Ray node",
            hint="run the job inside a repository, or set workspace = 'shared' in [executor]",
        )
    top = Path(probe.stdout.strip())
    head = _git(top, "rev-parse", "--verify", "--quiet", "HEAD^{commit}").strip()
    if not head:
        raise WorkspaceProblem(f"{top} has no commit yet", hint="commit something first")
    common = Path(_git(top, "rev-parse", "--path-format=absolute", "--git-common-dir").strip())
    index = Path(_git(top, "rev-parse", "--path-format=absolute", "--git-path", "index").strip())
    with tempfile.TemporaryDirectory(prefix="specialists-snapshot-") as tmp:
        copy = Path(tmp) / "index"
        if index.is_file():
            shutil.copyfile(index, copy)  # keeps stat data: only changed files are hashed
        env = {"GIT_INDEX_FILE": str(copy)}
        if not index.is_file():
            _git(top, "read-tree", "HEAD", env=env)
        _git(top, "add", "-A", env=env)
        # Our own state never travels, ignored or not (an exclude pathspec fails when it is).
        _git(top, "rm", "-r", "-q", "--cached", "--ignore-unmatch", "--", STATE_DIR, env=env)
        tree = _git(top, "write-tree", env=env).strip()
    carried = len([p for p in _git(top, "diff", "--name-only", "-z", head, tree).split("\0") if p])
    base = head
    if carried:
        message = f"specialists: the working tree job {job_id} started from"
        base = _git(top, "commit-tree", tree, "-p", head, "-m", message, env=SNAPSHOT_IDENTITY)
        base = base.strip()
    _git(top, "update-ref", ref_of(job_id, "base"), base)
    subdir = os.path.relpath(os.path.realpath(cwd), os.path.realpath(top))
    key = hashlib.sha256(f"{socket.gethostname()}:{os.path.realpath(common)}".encode())
    return Snapshot(top, subdir, base, head, carried, key.hexdigest()[:24])


def make_bundle(snapshot: Snapshot, job_id: str) -> bytes:
    """The snapshot and its history, as one git bundle."""
    with tempfile.TemporaryDirectory(prefix="specialists-bundle-") as tmp:
        path = Path(tmp) / "base.bundle"
        _git(snapshot.toplevel, "bundle", "create", "--quiet", str(path), ref_of(job_id, "base"))
        return path.read_bytes()


@dataclass(frozen=True)
class Landed:
    """What became of the job's changes. `kind`: none (nothing changed), sandbox (landed as
    sandbox `name`), branch (fetched as branch `name` only), failed (`message` says why)."""

    kind: Literal["none", "sandbox", "branch", "failed"]
    name: str | None
    message: str


def land(project: Path, snapshot: Snapshot, job_id: str, bundle: bytes, node: str) -> Landed:
    """Fetch the node's bundle and land it as sandbox `job_id` (see the module docstring)."""
    tip_ref = ref_of(job_id, "tip")
    try:
        with tempfile.TemporaryDirectory(prefix="specialists-result-") as tmp:
            path = Path(tmp) / "result.bundle"
            path.write_bytes(bundle)
            heads = _git(snapshot.toplevel, "bundle", "list-heads", str(path)).split()
            ref = next((r for r in heads if r.startswith("refs/")), None)
            if ref is None:
                return Landed("failed", None, "the node's bundle names no branch")
            _git(snapshot.toplevel, "fetch", "--quiet", str(path), f"+{ref}:{tip_ref}")
        tip = _git(snapshot.toplevel, "rev-parse", tip_ref).strip()
    except WorkspaceProblem as exc:
        return Landed("failed", None, f"could not fetch the changes from {node}: {exc.message}")
    return _as_sandbox(project, snapshot, job_id, tip, node)


def _as_sandbox(project: Path, snapshot: Snapshot, job_id: str, tip: str, node: str) -> Landed:
    from specialists.features.sandbox.backend import SandboxError
    from specialists.features.sandbox.git import GitSandbox

    short = tip[:12]
    try:
        backend = GitSandbox(project)
        name = job_id if backend.get(job_id) is None else f"{job_id}-remote"
        sandbox = backend.create(name, origin=snapshot.toplevel, start=snapshot.base)
        _git(sandbox.path, "merge", "--quiet", "--ff-only", tip)
    except (SandboxError, WorkspaceProblem) as exc:
        branch = f"specialists/job-{job_id}"
        try:
            _git(snapshot.toplevel, "update-ref", f"refs/heads/{branch}", tip)
        except WorkspaceProblem as again:
            return Landed("failed", None, f"changes from {node} kept as {tip}: {again.message}")
        why = exc.message if isinstance(exc, UserError) else str(exc)
        return Landed("branch", branch, f"changes from {node} are on branch {branch} ({why})")
    return Landed(
        "sandbox",
        sandbox.id,
        f"changes from {node} landed as sandbox {sandbox.id} (branch {sandbox.branch} at "
        f"{short}); squash it to take them",
    )
