"""SessionStart: a few lines on active jobs and the specialists one can start.

Fast by construction:
- Active jobs: jobs in the finished-jobs index (kept by `status`) are skipped unread. A live
  supervisor rewrites status.json at least every 5 s (its heartbeat), so of the rest only
  status files modified in the last LIVE_WINDOW_S seconds are read. An "active" status older
  than that belongs to a dead supervisor, which `specialists status` recovers.
- Specialists: names come from definition file names (names.py), without parsing YAML.
"""

from __future__ import annotations

import os
import time

from specialists.base.display import display_line, duration
from specialists.base.errors import StoreError
from specialists.base.owner import Owner, reading_owner
from specialists.fronts.hooks.common import hook_reply, log
from specialists.fronts.hooks.delivery import has_pending
from specialists.fronts.hooks.names import specialist_names
from specialists.store.files import read_object
from specialists.store.ids import is_job_id

# `typing` costs ~5 ms to import; annotations are strings here, so only type checkers need it.
TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any, TextIO

EVENT = "SessionStart"
LIVE_WINDOW_S = 60.0
MAX_JOBS_SHOWN = 5
MAX_NAMES_SHOWN = 30
ACTIVE = frozenset({"starting", "running", "waiting"})
INDEX_NAME = ".finished.json"  # as jobs.index.INDEX_NAME
INDEX_VERSION = 3  # as store.index.INDEX_VERSION
MAX_STATUS_BYTES = 1 << 20  # as store.jobs.MAX_STATUS
MAX_INDEX_BYTES = 64 << 20  # as store.index.MAX_INDEX
MAX_MISSIONS_READ = 200
MISSION_HEAD = 256  # missions/model.py writes schema, id and status first


def active_jobs(state_dir: str, now: float | None = None) -> list[dict[str, Any]]:
    """Statuses of jobs whose supervisor wrote recently and that are not finished."""
    now = time.time() if now is None else now
    jobs_dir = os.path.join(state_dir, "jobs")
    found: list[dict[str, Any]] = []
    try:
        entries = list(os.scandir(jobs_dir))
    except FileNotFoundError:
        return found
    finished = finished_ids(jobs_dir)
    for entry in entries:
        if not is_job_id(entry.name) or entry.name in finished:
            continue
        path = entry.path + "/status.json"
        try:
            if now - os.stat(path).st_mtime > LIVE_WINDOW_S:
                continue
            status = read_object(path, MAX_STATUS_BYTES)  # never a link, a FIFO or a huge file
        except FileNotFoundError:
            continue
        except (StoreError, OSError) as exc:
            log("session-start", f"job {entry.name}: unreadable status.json: {exc}")
            continue
        if status.get("status") in ACTIVE:
            status.setdefault("id", entry.name)
            found.append(status)
    found.sort(key=lambda s: s.get("started_at_ms") or 0)
    return found


def finished_ids(jobs_dir: str) -> frozenset[str]:
    """Ids in the finished-jobs index (store/index.py) that `status` keeps; read, never written.

    Read here without importing jobs.index (it pulls in the store); a test keeps the formats
    in step. A missing or unknown index only means more status files are looked at.
    """
    try:
        data = read_object(os.path.join(jobs_dir, INDEX_NAME), MAX_INDEX_BYTES)
        if data.get("v") != INDEX_VERSION:
            return frozenset()
        return frozenset(row[0] for row in data["jobs"])
    except FileNotFoundError:
        return frozenset()
    except (StoreError, OSError, TypeError, KeyError, IndexError) as exc:
        log("session-start", f"ignoring the finished-jobs index: {exc}")
        return frozenset()


def open_missions(state_dir: str) -> list[str]:
    """Ids of active or paused missions, from the head of each mission.json (no JSON parse:
    a bounded read of MISSION_HEAD bytes, no link followed, no FIFO opened)."""
    folder = os.path.join(state_dir, "missions")
    try:
        names = sorted(n for n in os.listdir(folder) if not n.startswith("."))
    except (FileNotFoundError, NotADirectoryError):
        return []
    found = []
    for name in names[:MAX_MISSIONS_READ]:
        try:
            mission_file = os.path.join(folder, name, "mission.json")
            fd = os.open(mission_file, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
        except OSError:
            continue  # missing or planted: `mission list` names it
        try:
            head = os.read(fd, MISSION_HEAD)
        except OSError:
            continue
        finally:
            os.close(fd)
        if b'"status": "active"' in head or b'"status": "paused"' in head:
            found.append(name)
    return found


def without_left_over(state_dir: str, missions: list[str]) -> list[str]:
    """The open missions less those that plain runs left open and that are closed now
    (missions/leftovers.py): a session is told only of missions someone keeps open. Only
    paid when open missions exist."""
    from pathlib import Path

    from specialists.features.missions.leftovers import close_left_over
    from specialists.features.missions.store import MissionStore
    from specialists.store.jobs import JobStore
    from specialists.store.news import NEWS

    stores = MissionStore(Path(state_dir)), JobStore(state_dir, news=NEWS)
    closed, problems = close_left_over(*stores)
    for problem in problems:
        log("session-start", problem)
    return [m for m in missions if m not in closed]


def context(
    state_dir: str, project_root: str, now: float | None = None, owner: Owner | None = None
) -> str:
    now = time.time() if now is None else now
    owner = reading_owner() if owner is None else owner
    lines: list[str] = []
    jobs = active_jobs(state_dir, now)
    if jobs:
        shown = []
        for st in jobs[:MAX_JOBS_SHOWN]:
            started = (st.get("started_at_ms") or now * 1000) / 1000
            shown.append(
                f"{st['id']} {display_line(st.get('specialist', '?'), 40)} "
                f"{display_line(st.get('status'), 12)} {duration(now - started)}"
            )
        extra = f" (+{len(jobs) - MAX_JOBS_SHOWN} more)" if len(jobs) > MAX_JOBS_SHOWN else ""
        lines.append(
            f"[specialists] {len(jobs)} active job(s): {'; '.join(shown)}{extra}. "
            "Check: specialists status"
        )
    if has_pending(state_dir, owner.keys):
        lines.append(
            "[specialists] events for this session are waiting (finished jobs, timers); "
            "they come with the next prompt."
        )
    missions = open_missions(state_dir)
    if missions:
        missions = without_left_over(state_dir, missions)
    if missions:
        lines.append(
            f"[specialists] {len(missions)} open mission(s): {', '.join(missions[:5])}. After "
            "compaction recover with: specialists mission list, then specialists mission show <id>"
        )
    names = specialist_names(project_root)
    if names:
        listed = ", ".join(names[:MAX_NAMES_SHOWN])
        if len(names) > MAX_NAMES_SHOWN:
            listed += f", … (+{len(names) - MAX_NAMES_SHOWN}; specialists list)"
        lines.append(
            f"[specialists] available: {listed}. Start: specialists run <name> "
            '--prompt "..." --background (MCP tool: run); collect: specialists result <job> '
            "(MCP tool: result)"
        )
    return "\n".join(lines)


def run(data: dict[str, Any], state_dir: str, out: TextIO) -> None:
    if os.path.lexists(os.path.join(state_dir, "ready")):  # wave 1's notices: events from now on
        from pathlib import Path

        from specialists.events.notices import migrate_ready

        for problem in migrate_ready(Path(state_dir)):
            log("session-start", problem)
    # source (startup/resume/clear/compact) does not change what we say; the session does.
    owner = reading_owner(data.get("session_id"))
    text = context(state_dir, os.path.dirname(state_dir), owner=owner)
    if text:
        out.write(hook_reply(EVENT, text) + "\n")
        out.flush()
