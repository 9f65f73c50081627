"""Which ceilings a job counts against, found once as its supervisor starts.

- its own (job.json `ceiling`; a workflow's `budget_tokens` is its token ceiling), else, for
  a job no other job started, config's `[spend] max_cost` / `max_tokens`;
- every ceiling of the job that started it (the parent's status.json `ceilings`: the parent
  resolved its own parent's, so one read covers the whole chain), and a watchdog review's,
  those of the worker it reviews (job.json `watchdog.reviews`);
- its mission's (job.json `ceiling.mission`: a workflow or run started on a mission);
- its outside session's (the first owner key that is neither a job nor a person at a
  terminal), from config's `[spend] session_max_cost` / `session_max_tokens`.

A takeover keeps what the first supervisor resolved (status.json already has it).
"""

from __future__ import annotations

from specialists.base.errors import SpecialistsError
from specialists.features.spend.ceiling import Entry, entries
from specialists.features.spend.settings import SpendSettings, spend_settings
from specialists.store.jobs import JobStore
from specialists.store.records import JobRecord, JobStatus

PERSON = "cli-"  # base/owner.py: a person at a terminal is no session to bound


def ceilings_of(store: JobStore, record: JobRecord, status: JobStatus) -> list[Entry]:
    if status.ceilings:
        return entries(status.ceilings)
    from specialists.catalog.config import load_config

    settings = spend_settings(load_config(store.root.parent).raw)
    found: dict[str, Entry] = {}
    parents = [k.removeprefix("job-") for k in record.owner if k.startswith("job-")]
    reviewed = record.watchdog.get("reviews")  # a watchdog review is in its worker's tree
    if isinstance(reviewed, str) and reviewed not in parents:
        parents.append(reviewed)
    mine = _own(record, settings, started_by_job=bool(parents))
    if mine is not None:
        found[mine.of] = mine
    for parent in parents:
        try:
            st = store.read_status(parent)
        except (OSError, SpecialistsError):
            continue  # an unreadable parent: its ceilings cannot be known (nor counted)
        for entry in entries(st.ceilings if st else ()):
            found.setdefault(entry.of, entry.counted(0, 0.0))
    mission = record.ceiling.get("mission")
    if isinstance(mission, str) and f"mission-{mission}" not in found:
        on_mission = _mission(store, mission)
        if on_mission is not None:
            found[on_mission.of] = on_mission
    session = next((k for k in record.owner if not k.startswith(("job-", PERSON))), None)
    limits = (settings.session_max_tokens, settings.session_max_cost)
    if session is not None and limits != (None, None):
        found.setdefault(session, Entry(session, *limits))
    return list(found.values())


def _own(record: JobRecord, settings: SpendSettings, *, started_by_job: bool) -> Entry | None:
    tokens = record.ceiling.get("tokens") or record.runner_options.get("budget_tokens")
    usd = record.ceiling.get("cost_usd")
    if tokens is None and usd is None and not started_by_job:
        tokens, usd = settings.max_tokens, settings.max_cost
    if tokens is None and usd is None:
        return None
    return Entry.of_dict({"of": f"job-{record.id}", "tokens": tokens, "cost_usd": usd})


def _mission(store: JobStore, mission_id: str) -> Entry | None:
    from specialists.features.missions.store import MissionStore

    try:
        ceiling = MissionStore(store.root).load(mission_id).ceiling
    except (OSError, SpecialistsError):
        return None
    data = {"of": f"mission-{mission_id}", **ceiling}
    return Entry.of_dict(data)
