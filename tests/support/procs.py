"""Proc jobs in tests: options, a launch spec over a temp store, the owner's events."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from specialists.events.inbox import Inbox
from specialists.events.model import Event, EventSource
from specialists.features.procs.spec import ProcOptions, WatchSettings
from specialists.runners.base import LaunchSpec
from specialists.store.jobs import JobStore

OWNER = "cli-tests"


def state_root(tmp_path: Path) -> Path:
    return tmp_path / ".specialists"


def proc_options(command: str, cwd: Path, **kw: Any) -> ProcOptions:
    settings = kw.pop("settings", WatchSettings())
    base: dict[str, Any] = {
        "command": command,
        "cwd": str(cwd),
        "owner": OWNER,
        "nonce": "0badc0de",
        "source": EventSource("bg_run", "call-1", {"command": command}),
        "settings": settings,
    }
    base.update(kw)
    return ProcOptions(**base)


def proc_spec(
    tmp_path: Path, command: str, env: dict[str, str] | None = None, **kw: Any
) -> LaunchSpec:
    """A job directory in tmp_path/.specialists and the spec the proc runner starts from."""
    store = JobStore(state_root(tmp_path), news=None)
    job_id, job_dir = store.create_job_dir()
    options = proc_options(command, tmp_path, **kw)
    return LaunchSpec(
        job_id=job_id,
        job_dir=job_dir,
        cwd=tmp_path,
        prompt=command,
        system_prompt="",
        model=None,
        env=env or {},
        options=options.to_dict(),
    )


def events(tmp_path: Path, kind: str | None = None, owner: str = OWNER) -> list[Event]:
    """The owner's undelivered events, deduplicated as a front would see them."""
    batch = Inbox(state_root(tmp_path), owner).pending()
    return [e for e in batch.events if kind is None or e.kind == kind]


def raw_lines(tmp_path: Path, owner: str = OWNER) -> int:
    """How many lines the owner's inbox file holds (duplicates included)."""
    path = state_root(tmp_path) / "owners" / owner / "events.jsonl"
    return len(path.read_bytes().splitlines()) if path.exists() else 0
