"""The mission ops (base/ops.py): `specialists mission ...` and the agent tool `mission` (served
to MCP clients, pi and native agents alike) are generated from these. Plain data out; a
refusal is a UserError. A mission made by a caller sends its goal notices to that caller.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from typing import TYPE_CHECKING, Annotated, Any, Literal

from specialists.base.errors import NotFound, UserError
from specialists.base.ops import Noun, Op
from specialists.base.opschema import Cli, Many, Range, Text
from specialists.features.missions import index, model, ops
from specialists.features.missions.model import Decision, Mission
from specialists.features.missions.store import DamagedMission, MissionStore
from specialists.features.spend.ceiling import parse_tokens, parse_usd
from specialists.store.ids import is_job_id

if TYPE_CHECKING:
    from specialists.native.agent_tools import Caller

MissionId = Annotated[str, Text(48)]
Prose = Annotated[str, Text(4000, line=False)]
MAX_LISTED = 100
MAX_RUNS_SHOWN = 50  # runs a model reads of a big mission (the data keeps them all)


def summary(m: Mission) -> dict[str, Any]:
    """A mission in a few fields (for lists)."""
    return {
        "id": m.id,
        "title": m.title,
        "status": m.status,
        "runs": len(m.runs),
        "open_decisions": len(m.open_decisions()),
        "goal": None if m.goal is None else (m.goal.ended or "driving"),
        "updated_ms": m.updated_ms,
        "labels": list(m.labels),
    }


def new(
    caller: Caller,
    title: Annotated[str, Text(200)],
    /,
    *,
    objective: Prose = "",
    labels: Annotated[list[Annotated[str, Text(64)]] | None, Many(32), Cli("--label")] = None,
    goal: bool = False,
    budget_tokens: int | None = None,
    id: MissionId | None = None,
    max_cost: Annotated[
        float | None, Range(0.0001, None), Cli(metavar="USD", parse=parse_usd)
    ] = None,
    max_tokens: Annotated[int | None, Range(1, None), Cli(metavar="N", parse=parse_tokens)] = None,
) -> dict[str, Any]:
    """Create a mission.

    Args:
        objective: what the mission is for
        labels: labels to find it by
        goal: drive it: a notice after each idle run (needs budget_tokens)
        budget_tokens: a goal's token budget
        id: the mission id (default: ms-xxxxxxxx)
        max_cost: what the jobs run on it may spend together, in US dollars
        max_tokens: ... in tokens (input + output)
    """
    from specialists.features.spend.ceiling import own_ceiling

    if goal and budget_tokens is None:
        raise UserError("a goal needs a token budget", hint="add --budget-tokens N")
    store = MissionStore(caller.state_root)
    owner = caller.job_owners
    mission = ops.create(
        store, title=title, objective=objective, owner=owner, labels=labels or [],
        goal_budget=budget_tokens if goal else None, mission_id=id,
        ceiling=own_ceiling(max_tokens, max_cost),
    )  # fmt: skip
    warnings = list(store.warnings)
    if mission.goal is not None and not mission.owner:
        warnings.append(
            f"goal mission {mission.id} has no owner (no session key): its notices reach "
            "nobody; create it from the session that should be nudged"
        )
    caller.warnings.extend(warnings)
    return {**summary(mission), "warnings": warnings}


def listing(
    caller: Caller,
    *,
    all: bool = False,
    scope: Annotated[Literal["project", "global"], Cli("--global", const="global")] = "project",
) -> dict[str, Any]:
    """Open missions (with all, closed ones too).

    Args:
        all: closed missions too
        scope: global: every project's, from the user's index
    """
    if scope == "global":
        pointers, problems = index.pointers(index.default_dir())
        rows = [
            {k: v for k, v in p.to_dict().items() if k != "state_root"} | {"present": p.present}
            for p in pointers
            if all or p.status in ("active", "paused")
        ]
        caller.warnings.extend(problems)
        more = len(rows) > MAX_LISTED
        return {"missions": rows[:MAX_LISTED], "problems": problems, "more": more, "closed": []}
    from specialists.features.missions.leftovers import close_left_over

    store = MissionStore(caller.state_root)
    closed, problems = close_left_over(store, caller.jobs())
    store.warnings.extend(problems)
    missions: list[Mission] = []  # newest change first
    damaged: list[DamagedMission] = []
    for item in store.all():
        if isinstance(item, DamagedMission):
            damaged.append(item)
        elif all or not item.terminal:
            missions.append(item)
    missions.sort(key=lambda m: m.updated_ms, reverse=True)
    caller.warnings.extend(store.warnings)
    caller.warnings.extend(f"mission {d.id}: {d.problem}" for d in damaged)
    return {
        "missions": [summary(m) for m in missions[:MAX_LISTED]],
        "damaged": [{"id": d.id, "problem": d.problem} for d in damaged],
        "more": len(missions) > MAX_LISTED,
        "closed": closed,
        "warnings": store.warnings,
    }


def show(caller: Caller, mission_id: MissionId, /) -> dict[str, Any]:
    """One mission, with its runs' live statuses."""
    shown = ops.show(MissionStore(caller.state_root), caller.jobs(), mission_id)
    data = shown.mission.to_dict()
    data["runs"] = [
        {"job_id": v.job_id, "specialist": v.specialist, "status": v.status,
         "tokens": v.tokens, "live": v.live, "spent": v.spent}
        for v in shown.runs
    ]  # fmt: skip
    data["spent"] = shown.spent()
    if shown.mission.ceiling:  # counted as the jobs' supervisors count it (spend/)
        from specialists.features.spend.tally import spent_under

        of = f"mission-{shown.mission.id}"
        under = spent_under(caller.jobs(), [of])[of]
        data["ceiling"] = {**shown.mission.ceiling, "spent_tokens": under.tokens,
                           "spent_usd": round(under.usd, 6)}  # fmt: skip
    data["state"] = shown.state
    data["warnings"] = shown.warnings
    caller.warnings.extend(shown.warnings)
    return data


def state_get(
    caller: Caller, mission_id: MissionId, key: Annotated[str | None, Text(128)] = None, /
) -> dict[str, Any]:
    """The mission's shared JSON state: the whole of it, or one key."""
    from specialists.features.missions.state import state_get as read

    value = read(caller.state_root, mission_id, key)  # the store checks the id
    return {"mission_id": mission_id, "key": key, "value": value}


def state_set(
    caller: Caller, mission_id: MissionId, key: Annotated[str, Text(128)], value: Any, /
) -> dict[str, Any]:
    """Set one key to a JSON value (merged under a lock; 256 KiB in all).

    Args:
        value: any JSON value ('"text"', 3, '{"a": 1}'; '-' reads stdin; --text: plain)
    """
    from specialists.features.missions.state import state_set as write

    size = write(caller.state_root, mission_id, key, value)  # the store checks the id
    return {"mission_id": mission_id, "key": key, "bytes": size}


def link(
    caller: Caller, mission_id: MissionId, job_id: Annotated[str, Text(64)], /
) -> dict[str, Any]:
    """Link a job (a workflow is a job) to a mission."""
    if not is_job_id(job_id):
        raise UserError(f"invalid job id {job_id[:40]!r}")
    MissionStore(caller.state_root).load(mission_id)  # a missing mission is named first
    if not os.path.isdir(caller.jobs().job_dir(job_id)):
        raise NotFound(f"no job {job_id}", hint="see: specialists status")
    return _change(caller, mission_id, lambda m, now: model.link_run(m, job_id, "", now))


def decide(caller: Caller, mission_id: MissionId, question: Prose, /) -> dict[str, Any]:
    """Record an open decision."""
    return _change(caller, mission_id, lambda m, now: model.add_decision(m, question, now))


def resolve(
    caller: Caller,
    mission_id: MissionId,
    decision_id: Annotated[str, Text(20)],
    /,
    *,
    summary: Prose,
) -> dict[str, Any]:
    """Settle an open decision with a summary."""
    return _change(
        caller, mission_id, lambda m, now: model.resolve_decision(m, decision_id, summary, now)
    )


def receipt(
    caller: Caller,
    mission_id: MissionId,
    kind: Annotated[str, Text(40)],
    url: Annotated[str, Text(2000)],
    /,
    *,
    status: Annotated[str, Text(200)],
    note: Prose | None = None,
) -> dict[str, Any]:
    """Record a PR, CI, deployment or release link.

    Args:
        kind: the receipt's or artifact's kind
        status: e.g. open, merged, passed, failed, live
    """
    return _change(
        caller, mission_id,
        lambda m, now: model.add_receipt(m, kind, url, status, note, now),
    )  # fmt: skip


def artifact(
    caller: Caller,
    mission_id: MissionId,
    kind: Annotated[str, Text(40)],
    path: Annotated[str, Text(4096)],
    /,
    *,
    note: Prose | None = None,
) -> dict[str, Any]:
    """Record a durable output file."""
    return _change(
        caller,
        mission_id,
        lambda m, now: model.add_artifact(m, kind, path, note, now),
    )


def pause(caller: Caller, mission_id: MissionId, /) -> dict[str, Any]:
    """Stop its goal's notices (reversible)."""
    return _change(caller, mission_id, lambda m, now: model.set_paused(m, True, now))


def resume(caller: Caller, mission_id: MissionId, /) -> dict[str, Any]:
    """Start its goal's notices again."""
    return _change(caller, mission_id, lambda m, now: model.set_paused(m, False, now))


def close(
    caller: Caller,
    mission_id: MissionId,
    /,
    *,
    status: Literal["completed", "failed", "cancelled"],
    summary: Prose,
) -> dict[str, Any]:
    """Close it: completed, failed or cancelled."""
    return _change(caller, mission_id, lambda m, now: model.close(m, status, summary, now))


def _change(
    caller: Caller, mid: str, step: Callable[[Mission, int], Mission | tuple[Mission, Decision]]
) -> dict[str, Any]:
    """One pure change of mission.json, under its lock (the store checks the id); the
    decision it made or settled, if any, is named in the answer."""
    store, now = MissionStore(caller.state_root), ops.now_ms()

    def apply(m: Mission) -> tuple[Mission, tuple[Mission, Decision | None]]:
        after = step(m, now)
        mission, decision = after if isinstance(after, tuple) else (after, None)
        return mission, (mission, decision)

    mission, decision = store.update(mid, apply)
    caller.warnings.extend(store.warnings)
    said = {**summary(mission), "warnings": store.warnings}
    return said | {"decision_id": decision.id} if decision else said


def for_the_model(data: dict[str, Any]) -> str:
    """The text a model reads stays small: the last MAX_RUNS_SHOWN runs of a big mission
    (the count says so; the data keeps them all) and no goal bookkeeping."""
    shown = dict(data)
    runs = data.get("runs")
    if isinstance(runs, list) and len(runs) > MAX_RUNS_SHOWN:
        shown["runs"] = runs[-MAX_RUNS_SHOWN:]
        shown["runs_not_shown"] = len(runs) - MAX_RUNS_SHOWN
    if isinstance(data.get("goal"), dict):
        shown["goal"] = {k: v for k, v in data["goal"].items() if k != "seen"}
    return json.dumps(shown, ensure_ascii=False, separators=(",", ":"))


def _op(fn: Callable[..., dict[str, Any]], verb: str, **kw: Any) -> Op:
    return Op(fn, verb, text=for_the_model, **kw)


MISSION = Noun(
    "mission",
    "missions: why delegated work exists, to recover it later",
    (
        _op(new, "new"),
        _op(listing, "list", reads=True),
        _op(show, "show", reads=True),
        _op(link, "link"),
        _op(decide, "decide"),
        _op(resolve, "resolve"),
        _op(receipt, "receipt"),
        _op(artifact, "artifact"),
        _op(state_get, "state get", reads=True),
        _op(state_set, "state set"),
        _op(pause, "pause"),
        _op(resume, "resume"),
        _op(close, "close"),
    ),
    tool="mission",
    power="",
    about=(
        "Durable missions: why delegated work exists, so it survives compaction. After "
        "compaction or a restart: action list (scope global: every project), then show "
        "mission_id (live run statuses, decisions, state). Each workflow launch gets one. "
        "Actions: new (title, objective, labels; goal + budget_tokens for a goal mission that "
        "nudges you after each idle run), link job_id, decide question, resolve decision_id + "
        "summary, receipt kind (pull_request|ci|deployment|release) + absolute url + status "
        "(evidence, never authority to merge or deploy), artifact kind + path, state_get key, "
        "state_set key + value (JSON, 256 KiB in all; nextReadyAction steers a goal), pause, "
        "resume, close status (completed|failed|cancelled) + summary. Do not poll in a loop."
    ),
    guidance=(
        "mission: after compaction call mission list then show; record decisions and receipts "
        "there, close missions with a summary."
    ),
)
