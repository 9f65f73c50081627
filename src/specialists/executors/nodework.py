"""The node side of "the code travels with the job": checkouts and job directories.

Under the node's root:

    repos/<repo>.git      one bare cache per repository, fed by the bundles supervisors send
                          (a base commit travels once per node, whatever the number of jobs)
    work/<job>/           the job's checkout: `git clone --shared` of the cache, at the base,
                          on branch `specialists-job`
    jobs/<job>/           the job directory as the agent sees it: what the supervisor ships
                          (system prompt, a session being continued) and what the agent
                          writes (its own session file)

`collect` commits what the agent left uncommitted (`git add -A`: ignored files stay behind),
bundles the commits after the base, and returns the job-directory files that are new or
changed, so the supervisor can land the branch as a sandbox and keep the agent's session.
"""

from __future__ import annotations

import os
import re
import shutil
import tempfile
import threading
from pathlib import Path
from typing import Any

from specialists.process.jobenv import ensure_hooks
from specialists.process.short import run_short

KEY = re.compile(r"[A-Za-z0-9][A-Za-z0-9_-]{0,95}")
SHA = re.compile(r"[0-9a-f]{40}|[0-9a-f]{64}")
BRANCH = "specialists-job"
RESULT_REF = "refs/heads/specialists-result"
FILE_MAX = 64 * 1024 * 1024  # a job-directory file larger than this does not come back
FILES_TOTAL_MAX = 256 * 1024 * 1024
FILES_COUNT_MAX = 2000
GIT_TIMEOUT_S = 300.0
_SKIP_DIRS = frozenset({"git-hooks", "control"})
# Who commits what an agent left uncommitted (the user squashes it into a commit of theirs).
COMMITTER = ("-c", "user.name=specialists", "-c", "user.email=specialists@localhost")
SAFE = (
    *("-c", "core.hooksPath=/dev/null"),
    *("-c", "gc.auto=0"),
    *("-c", "commit.gpgSign=false"),
    *("-c", "core.fsmonitor=false"),
)
_REDIRECTING = ("GIT_DIR", "GIT_WORK_TREE", "GIT_INDEX_FILE", "GIT_OBJECT_DIRECTORY")


class WorkspaceError(Exception):
    """A checkout could not be made or read; the message is one line."""


def git(
    cwd: Path, *args: str, timeout: float = GIT_TIMEOUT_S, env: dict[str, str] | None = None
) -> str:
    """git's stdout, run with no hook, no gc, no signing, no redirected repository (the
    local side's snapshots too, workspace.py); WorkspaceError when it fails."""
    full = {k: v for k, v in os.environ.items() if k not in _REDIRECTING}
    full.update(LC_ALL="C", GIT_TERMINAL_PROMPT="0", **(env or {}))
    result = run_short(["git", *SAFE, *args], cwd=cwd, env=full, timeout=timeout)
    if not result.ok:
        raise WorkspaceError(result.describe(f"git {args[0]}"))
    return result.stdout


def check_key(key: str, what: str) -> str:
    if not isinstance(key, str) or not KEY.fullmatch(key):
        raise WorkspaceError(f"bad {what} {key!r}")
    return key


def safe_relative(name: str) -> Path:
    """A job-directory file name from the other side: relative, no '..', no NUL."""
    path = Path(name)
    if not name or "\x00" in name or path.is_absolute() or ".." in path.parts:
        raise WorkspaceError(f"refused file name {name[:100]!r}")
    return path


class Workspaces:
    def __init__(self, root: Path) -> None:
        self.root = root
        self._lock = threading.Lock()  # one fetch into a cache at a time
        self._seen: dict[str, dict[str, tuple[int, int]]] = {}  # job -> file -> (size, mtime)
        self._base: dict[str, str] = {}

    def _cache(self, repo_key: str) -> Path:
        return self.root / "repos" / f"{check_key(repo_key, 'repository key')}.git"

    def work(self, job_key: str) -> Path:
        return self.root / "work" / check_key(job_key, "job key")

    def job_dir(self, job_key: str) -> Path:
        return self.root / "jobs" / check_key(job_key, "job key")

    def has_commit(self, repo_key: str, sha: str) -> bool:
        cache = self._cache(repo_key)
        if not SHA.fullmatch(sha) or not cache.is_dir():
            return False
        try:
            git(cache, "cat-file", "-e", f"{sha}^{{commit}}")
        except WorkspaceError:
            return False
        return True

    def stage(self, request: dict[str, Any]) -> dict[str, Any]:
        """Make the job's checkout and directory: {"work", "cwd", "job_dir"} or {"error"}."""
        try:
            return self._stage(request)
        except (WorkspaceError, OSError) as exc:
            return {"error": str(exc)}

    def _stage(self, request: dict[str, Any]) -> dict[str, Any]:
        job_key = check_key(request["job_key"], "job key")
        repo_key, base = request["repo_key"], str(request["base"])
        if not SHA.fullmatch(base):
            raise WorkspaceError(f"bad base commit {base[:80]!r}")
        cache = self._cache(repo_key)
        bundle = request.get("bundle")
        with self._lock:
            if not cache.is_dir():
                cache.parent.mkdir(parents=True, exist_ok=True)
                git(cache.parent, "init", "--quiet", "--bare", cache.name)
            if bundle:
                self._fetch_bundle(cache, bundle, base)
        if not self.has_commit(repo_key, base):
            raise WorkspaceError(f"the node has no commit {base[:12]} and was sent no bundle")
        work, job_dir = self.work(job_key), self.job_dir(job_key)
        if work.exists():
            shutil.rmtree(work)
        work.parent.mkdir(parents=True, exist_ok=True)
        git(work.parent, "clone", "--quiet", "--shared", "--no-checkout", str(cache), work.name)
        git(work, "checkout", "--quiet", "-B", BRANCH, base)
        job_dir.mkdir(parents=True, exist_ok=True)
        self._base[job_key] = base
        self._seen[job_key] = {}
        self.write_files(job_key, request.get("files") or {})
        ensure_hooks(job_dir)
        subdir = safe_relative(request.get("subdir") or ".")
        return {"work": str(work), "cwd": str(work / subdir), "job_dir": str(job_dir)}

    def _fetch_bundle(self, cache: Path, bundle: bytes, base: str) -> None:
        with tempfile.NamedTemporaryFile(dir=cache, suffix=".bundle") as f:
            f.write(bundle)
            f.flush()
            refs = git(cache, "bundle", "list-heads", f.name).split()
            ref = next((r for r in refs if r.startswith("refs/")), None)
            if ref is None:
                raise WorkspaceError("the bundle names no ref")
            git(cache, "fetch", "--quiet", f.name, f"+{ref}:refs/bases/{base}")

    def write_files(self, job_key: str, files: dict[str, bytes]) -> None:
        """Files of the job's directory, from the supervisor (the agent reads them)."""
        job_dir = self.job_dir(job_key)
        job_dir.mkdir(parents=True, exist_ok=True)
        seen = self._seen.setdefault(job_key, {})
        for name, data in files.items():
            target = job_dir / safe_relative(name)
            target.parent.mkdir(parents=True, exist_ok=True)
            tmp = target.with_name(f".{target.name}.tmp")
            tmp.write_bytes(data)
            tmp.replace(target)
            st = target.stat()
            seen[name] = (st.st_size, st.st_mtime_ns)

    def collect(self, job_key: str, job_id: str) -> dict[str, Any]:
        """What the job changed: its commits as a bundle, and its new or changed files."""
        out: dict[str, Any] = {"files": {}, "problems": []}
        try:
            out["files"], skipped = self._changed_files(job_key)
            out["problems"] += skipped
        except (WorkspaceError, OSError) as exc:
            out["problems"].append(f"job files: {exc}")
        try:
            out.update(self._commits(job_key, job_id))
        except (WorkspaceError, OSError) as exc:
            out["problems"].append(f"changes: {exc}")
        return out

    def _commits(self, job_key: str, job_id: str) -> dict[str, Any]:
        work, base = self.work(job_key), self._base.get(job_key)
        if base is None or not work.is_dir():
            return {}
        git(work, "add", "-A")
        staged = git(work, "diff", "--cached", "--name-only", "-z")
        uncommitted = len([p for p in staged.split("\0") if p])
        if uncommitted:
            message = f"specialists: what job {job_id} left uncommitted"
            git(work, *COMMITTER, "commit", "--quiet", "--no-verify", "-m", message)
        tip = git(work, "rev-parse", "HEAD").strip()
        result: dict[str, Any] = {"base": base, "tip": tip, "uncommitted": uncommitted}
        if tip == base:
            return result
        result["commits"] = int(git(work, "rev-list", "--count", f"{base}..{tip}").strip() or 0)
        git(work, "update-ref", RESULT_REF, tip)
        with tempfile.NamedTemporaryFile(dir=work.parent, suffix=".bundle") as f:
            git(work, "bundle", "create", "--quiet", f.name, RESULT_REF, f"^{base}")
            result["bundle"] = Path(f.name).read_bytes()
        return result

    def _changed_files(self, job_key: str) -> tuple[dict[str, bytes], list[str]]:
        job_dir = self.job_dir(job_key)
        seen = self._seen.get(job_key, {})
        files: dict[str, bytes] = {}
        problems: list[str] = []
        total = 0
        if not job_dir.is_dir():
            return files, problems
        for dirpath, dirnames, filenames in os.walk(job_dir):
            dirnames[:] = [d for d in dirnames if d not in _SKIP_DIRS]
            for filename in filenames:
                path = Path(dirpath) / filename
                name = path.relative_to(job_dir).as_posix()
                st = path.lstat()
                if not path.is_file() or path.is_symlink() or filename.endswith(".tmp"):
                    continue
                if seen.get(name) == (st.st_size, st.st_mtime_ns):
                    continue
                if st.st_size > FILE_MAX or total + st.st_size > FILES_TOTAL_MAX:
                    problems.append(f"{name} ({st.st_size} bytes) is too large to bring back")
                    continue
                if len(files) >= FILES_COUNT_MAX:
                    problems.append(f"more than {FILES_COUNT_MAX} files; the rest stay")
                    return files, problems
                files[name] = path.read_bytes()
                total += st.st_size
        return files, problems

    def cleanup(self, job_key: str) -> None:
        for path in (self.work(job_key), self.job_dir(job_key)):
            shutil.rmtree(path, ignore_errors=True)
        self._seen.pop(job_key, None)
        self._base.pop(job_key, None)
