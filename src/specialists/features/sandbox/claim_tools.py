"""claim_files, release_files, list_claims: the agent tools over file claims (store/claims.py).

A job claims the files it is about to change; every front's write guard then refuses another
job's write to them with the holder's name (native/guards.py), until the holder releases them
or ends. Paths are the caller's, relative to its working directory (its sandbox worktree).
"""

from __future__ import annotations

from typing import Any

from specialists.base.display import one_line
from specialists.base.errors import UserError
from specialists.native.agent_tools import AgentTool, Reply, ToolCall, arg_str, check_known
from specialists.store.claims import MAX_PATHS_PER_CALL, Claim, Claims, key_of_arg


def _paths(call: ToolCall, *, required: bool) -> list[tuple[str, bool]] | None:
    raw = call.args.get("paths")
    if raw is None and not required:
        return None
    if not isinstance(raw, list) or not raw or len(raw) > MAX_PATHS_PER_CALL:
        raise UserError(f"paths must be a list of 1 to {MAX_PATHS_PER_CALL} paths")
    project = call.caller.state_root.parent
    return [key_of_arg(p, call.caller.cwd, project) for p in raw]


def _job(call: ToolCall) -> str:
    if call.caller.job_id is None:
        raise UserError(
            "only a job can claim files", hint="claims end with the job that holds them"
        )
    return call.caller.job_id


def _rows(claims: list[Claim]) -> list[dict[str, Any]]:
    return [c.to_dict() for c in claims]


def claim_files(call: ToolCall) -> Reply:
    check_known(call.args, {"paths", "note"})
    job = _job(call)
    keys = _paths(call, required=True)
    assert keys is not None
    note = one_line(arg_str(call.args, "note", required=False, max_len=2000), 300)
    claims = Claims(call.caller.state_root)
    specialist = ""
    try:
        specialist = claims.jobs.read_record(job).specialist
    except (UserError, OSError, ValueError):
        pass  # a claim without its specialist's name still holds
    new = claims.claim(job, keys, specialist=specialist, note=note, now_ms=_ms(call))
    held = [c for c in claims.live() if c.job == job]
    text = f"claimed {len(keys)} path(s); you hold {len(held)}: " + ", ".join(
        c.shown() for c in held[:20]
    )
    return Reply(text, {"claimed": _rows(new), "held": _rows(held)})


def release_files(call: ToolCall) -> Reply:
    check_known(call.args, {"paths"})
    job = _job(call)
    gone = Claims(call.caller.state_root).release(job, _paths(call, required=False))
    return Reply(f"released {len(gone)} claim(s)", {"released": _rows(gone)})


def list_claims(call: ToolCall) -> Reply:
    check_known(call.args, set())
    live = Claims(call.caller.state_root).live()
    if not live:
        return Reply("no files are claimed", {"claims": []})
    lines = [f"{c.shown()}: {c.holder()}" + (f" ({c.note})" if c.note else "") for c in live]
    return Reply("\n".join(lines), {"claims": _rows(live)})


def _ms(call: ToolCall) -> int:
    return int(call.caller.clock() * 1000)


_PATHS = {"type": "array", "items": {"type": "string"}, "maxItems": MAX_PATHS_PER_CALL}

CLAIM_TOOLS = (
    AgentTool(
        "claim_files",
        "Claim the files you are about to change, so agents working in parallel are refused "
        "when they write them (and you on theirs). paths: files, or directories ending in '/', "
        "relative to your working directory. All or none: if another live job holds one, "
        "nothing is claimed and the error names that job. Your claims end with your job; "
        "release_files gives them back earlier. note: what you are doing, shown to others.",
        {
            "type": "object",
            "properties": {"paths": _PATHS, "note": {"type": "string"}},
            "required": ["paths"],
            "additionalProperties": False,
        },
        claim_files,
        guidance="When other agents work in parallel, claim_files before you change files.",
        scope="job",
    ),
    AgentTool(
        "release_files",
        "Give back your claims on paths (as you claimed them), or all of them when paths is "
        "omitted. Claims also end by themselves when your job ends.",
        {"type": "object", "properties": {"paths": _PATHS}, "additionalProperties": False},
        release_files,
        scope="job",
    ),
    AgentTool(
        "list_claims",
        "Which files are claimed now, by which live job, and why: read it before planning "
        "parallel work. A claim of a job that ended or crashed is not listed.",
        {"type": "object", "properties": {}, "additionalProperties": False},
        list_claims,
    ),
)
