"""One entry point over the missions room for programs (the agent tool `mission`, served to
MCP clients, pi and native agents alike): an action and plain arguments in, plain data out.
Refusals leave as UserError, as on the CLI. `owner` is the caller's owner key: a mission made
here sends its goal notices there.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from specialists.base.errors import NotFound, UserError
from specialists.features.missions import index, model, ops
from specialists.features.missions.codec import mission_to_dict
from specialists.features.missions.leftovers import close_left_over
from specialists.features.missions.model import Mission
from specialists.features.missions.state import state_get, state_set
from specialists.features.missions.store import MissionStore
from specialists.features.spend.ceiling import own_ceiling
from specialists.store.ids import is_job_id

ACTIONS = (
    "new", "list", "show", "link", "decide", "resolve", "receipt", "artifact",
    "state_get", "state_set", "pause", "resume", "close",
)  # fmt: skip
MAX_LISTED = 100


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


def _need(args: Mapping[str, Any], key: str) -> Any:
    value = args.get(key)
    if value is None:
        raise UserError(f"this action needs {key!r}")
    return value


def mission_action(
    state_root: Path,
    jobs_store: Any,
    args: Mapping[str, Any],
    *,
    owner: tuple[str, ...] = (),
    index_dir: Path | None = None,
) -> dict[str, Any]:
    action = args.get("action")
    if action not in ACTIONS:
        raise UserError(f"unknown action {str(action)[:20]!r}", hint=", ".join(ACTIONS))
    store = MissionStore(state_root, index_dir=index_dir)
    if action == "list":
        closed: list[str] = []
        if args.get("scope") != "global":
            closed, problems = close_left_over(store, jobs_store)
            store.warnings.extend(problems)
        listed = list_missions(store, args, index_dir)
        return {**listed, "closed": closed, "warnings": store.warnings}
    if action == "new":
        budget = args.get("budget_tokens") if args.get("goal") else None
        if args.get("goal") and budget is None:
            model.check_budget(None)  # one clear line: a goal needs a budget
        mission = ops.create(
            store,
            title=args.get("title"),
            objective=args.get("objective", ""),
            owner=owner,
            labels=args.get("labels", []),
            goal_budget=budget,
            mission_id=args.get("id"),
            ceiling=own_ceiling(args.get("max_tokens"), args.get("max_cost")),
        )
        warnings = list(store.warnings)
        if mission.goal is not None and not mission.owner:
            warnings.append(
                f"goal mission {mission.id} has no owner (no session key): its notices reach "
                "nobody; create it from the session that should be nudged"
            )
        return {**summary(mission), "warnings": warnings}
    mid = model.check_id(_need(args, "mission_id"))
    if action == "show":
        shown = ops.show(store, jobs_store, mid)
        data = mission_to_dict(shown.mission)
        data["runs"] = [
            {"job_id": v.job_id, "specialist": v.specialist, "status": v.status,
             "tokens": v.tokens, "live": v.live, "spent": v.spent}
            for v in shown.runs
        ]  # fmt: skip
        data["spent"] = shown.spent()
        if shown.mission.ceiling:  # counted as the jobs' supervisors count it (spend/)
            from specialists.features.spend.tally import spent_under

            of = f"mission-{mid}"
            under = spent_under(jobs_store, [of])[of]
            data["ceiling"] = {**shown.mission.ceiling, "spent_tokens": under.tokens}
            data["ceiling"]["spent_usd"] = round(under.usd, 6)
        data["state"] = shown.state
        data["warnings"] = shown.warnings
        return data
    if action == "state_get":
        key = args.get("key")
        return {
            "mission_id": mid,
            "key": key,
            "value": state_get(state_root, mid, key, store=store),
        }
    if action == "state_set":
        if "value" not in args:
            raise UserError("state_set needs 'value' (any JSON)")
        size = state_set(state_root, mid, _need(args, "key"), args["value"], store=store)
        return {"mission_id": mid, "key": args["key"], "bytes": size}
    return change(store, mid, str(action), args, jobs_store)


def change(
    store: MissionStore, mid: str, action: str, args: Mapping[str, Any], jobs_store: Any
) -> dict[str, Any]:
    """The actions that change mission.json, each one pure change under the lock."""
    now = ops.now_ms()
    extra: dict[str, Any] = {}
    step: Callable[[Mission], Mission]
    if action == "link":
        job_id = _need(args, "job_id")
        if not isinstance(job_id, str) or not is_job_id(job_id):
            raise UserError(f"invalid job id {str(job_id)[:40]!r}")
        store.load(mid)  # a missing mission is named first
        if not os.path.isdir(jobs_store.job_dir(job_id)):
            raise NotFound(f"no job {job_id}", hint="see: specialists status")
        step = lambda m: model.link_run(m, job_id, "", now)  # noqa: E731
    elif action == "decide":

        def step(m: Mission) -> Mission:
            after, decision = model.add_decision(m, args.get("question"), now)
            extra["decision_id"] = decision.id
            return after
    elif action == "resolve":

        def step(m: Mission) -> Mission:
            after, decision = model.resolve_decision(
                m, args.get("decision_id"), args.get("summary"), now
            )
            extra["decision_id"] = decision.id
            return after
    elif action == "receipt":
        step = lambda m: model.add_receipt(  # noqa: E731
            m, args.get("kind"), args.get("url"), args.get("status"), args.get("note"), now
        )
    elif action == "artifact":
        step = lambda m: model.add_artifact(  # noqa: E731
            m, args.get("kind"), args.get("path"), args.get("note"), now
        )
    elif action in ("pause", "resume"):
        step = lambda m: model.set_paused(m, action == "pause", now)  # noqa: E731
    elif action == "close":
        step = lambda m: model.close(m, args.get("status"), args.get("summary"), now)  # noqa: E731
    else:
        raise UserError(f"unknown action {action[:20]!r}", hint=", ".join(ACTIONS))

    def apply(m: Mission) -> tuple[Mission, Mission]:
        after = step(m)
        return after, after

    mission = store.update(mid, apply)
    return {**summary(mission), **extra, "warnings": store.warnings}


def list_missions(
    store: MissionStore, args: Mapping[str, Any], index_dir: Path | None
) -> dict[str, Any]:
    if args.get("scope") == "global":
        pointers, problems = index.pointers(index_dir or index.default_dir())
        rows = [
            {"id": p.id, "title": p.title, "status": p.status, "updated_ms": p.updated_ms,
             "project_root": p.project_root, "present": p.present}
            for p in pointers
            if args.get("all") or p.status in ("active", "paused")
        ]  # fmt: skip
        return {"missions": rows[:MAX_LISTED], "problems": problems, "more": len(rows) > MAX_LISTED}
    missions, damaged = ops.listing(store, include_closed=bool(args.get("all")))
    return {
        "missions": [summary(m) for m in missions[:MAX_LISTED]],
        "damaged": [{"id": d.id, "problem": d.problem} for d in damaged],
        "more": len(missions) > MAX_LISTED,
    }
