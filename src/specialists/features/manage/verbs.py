"""The definition ops (base/ops.py): `specialists agents ...` and the MCP tool
`manage_specialist` are generated from these. A file a person wrote (or edited after we
wrote it) is never changed without force (agents.py; docs/specialists.md).
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, Literal, TypedDict

from specialists.base.errors import UserError
from specialists.base.ops import Noun, Op
from specialists.base.opschema import Range, Text
from specialists.features.manage import agents

if TYPE_CHECKING:
    from specialists.features.manage.agents import AgentChange
    from specialists.features.manage.refine import Overlay
    from specialists.native.agent_tools import Caller


def _overlay(o: Overlay) -> dict[str, Any]:
    return {"agent": o.agent, "revision": o.revision, "text": o.text, "history": list(o.history)}


Name = Annotated[str, Text(64, 1)]
Scope = Literal["project", "user"]
Field = Annotated[str, Text(64_000, 1, line=False)]


class DefinitionFields(TypedDict, total=False):
    """A definition's fields.

    Args:
        description: one line on what it does
        system: the system prompt (on the command line @FILE reads it from a file)
        task_template: the task template ($prompt, $cwd, ...)
        model: provider/model
        runner: pi, claude, codex, command or native
        permission: READ_ONLY, BASH_ONLY, LOW, MEDIUM or HIGH
        thinking: off, minimal, low, medium, high or xhigh
        timeout_ms: the job's time limit in ms
    """

    description: Field
    system: Field
    task_template: Field
    model: Annotated[str, Text(256, 1)]
    runner: Annotated[str, Text(64, 1)]
    permission: Annotated[str, Text(16, 1)]
    thinking: Annotated[str, Text(16, 1)]
    timeout_ms: Annotated[int, Range(1, 31_622_400_000)]


def _done(change: AgentChange) -> dict[str, Any]:
    return {
        "action": change.kind, "kind": change.kind, "name": change.name, "scope": change.scope,
        "path": str(change.path) if change.path else None, "changed": change.changed,
        "warnings": list(change.warnings),
    }  # fmt: skip


def _said(caller: Caller, change: AgentChange) -> dict[str, Any]:
    caller.warnings.extend(change.warnings)
    return _done(change)


def create(
    caller: Caller,
    name: Name,
    /,
    *,
    scope: Scope = "project",
    fields: DefinitionFields | None = None,
) -> dict[str, Any]:
    """Write a new definition."""
    return _said(caller, agents.create(caller.root, scope, name, dict(fields or {})))


def update(
    caller: Caller,
    name: Name,
    /,
    *,
    scope: Scope = "project",
    fields: DefinitionFields | None = None,
    force: bool = False,
) -> dict[str, Any]:
    """Change fields of a definition we wrote.

    Args:
        force: even over a hand-written file
    """
    if not fields:
        raise UserError("nothing to update", hint='give fields, e.g. --model a/b, {"model": "a/b"}')
    change = agents.update(caller.root, scope, name, dict(fields), force=force)
    return _said(caller, change)


def delete(
    caller: Caller, name: Name, /, *, scope: Scope = "project", force: bool = False
) -> dict[str, Any]:
    """Remove a definition we wrote."""
    return _said(caller, agents.delete(caller.root, scope, name, force=force))


def eject(caller: Caller, name: Name, /, *, scope: Scope = "project") -> dict[str, Any]:
    """Copy a builtin into the scope to edit it."""
    return _said(caller, agents.eject(caller.root, scope, name))


def disable(caller: Caller, name: Name, /, *, scope: Scope = "project") -> dict[str, Any]:
    """Hide a specialist (reversible)."""
    return _said(caller, agents.set_disabled(caller.root, scope, name, True))


def enable(caller: Caller, name: Name, /, *, scope: Scope = "project") -> dict[str, Any]:
    """Undo disable."""
    return _said(caller, agents.set_disabled(caller.root, scope, name, False))


def reset(
    caller: Caller, name: Name, /, *, scope: Scope = "project", force: bool = False
) -> dict[str, Any]:
    """Back to the builtin: remove the scope's file and disable."""
    return _said(caller, agents.reset(caller.root, scope, name, force=force))


def listing(caller: Caller) -> dict[str, Any]:
    """Every definition by scope, disabled ones included."""
    from specialists.catalog import load_catalog
    from specialists.catalog.managed import digest, read_settings, settings_path

    catalog = load_catalog(caller.root)
    written: dict[str, str] = {}
    for scope in ("project", "user"):
        written.update(read_settings(settings_path(scope, caller.root)).written)
    entries = [(s, "active") for s in catalog.all()]
    entries += [(spec, f"disabled ({scope})") for scope, spec in catalog.disabled.values()]
    entries += [(loser, f"shadowed by {winner.scope}") for winner, loser in catalog.shadowed]
    rows = []
    for spec, state in sorted(entries, key=lambda e: (e[0].name, e[0].scope)):
        source = str(spec.source) if spec.source else ""
        try:
            ours = bool(source) and written.get(source) == digest(Path(source).read_bytes())
        except OSError:
            ours = False
        rows.append(
            {"name": spec.name, "scope": spec.scope, "state": state, "source": source,
             "managed": ours}
        )  # fmt: skip
    problems = [p.one_line() for p in catalog.problems]  # files that failed, as `list` has them
    return {"agents": rows, "problems": problems}


def refine(
    caller: Caller,
    name: Name,
    /,
    *,
    guidance: Annotated[str | None, Text(64_000, 1, line=False)] = None,
    proposer: Name = "reviewer",
) -> dict[str, Any]:
    """Add project guidance to an agent's system prompt.

    Args:
        guidance: the guidance itself, or @FILE (default: ask a proposer)
        proposer: read-only specialist that proposes it
    """
    from specialists.features.manage import refine as overlays

    now = int(time.time() * 1000)
    if guidance is not None:
        return _overlay(overlays.save(caller.root, name, guidance, source="person", now_ms=now))
    text, job_id = _propose(caller, name, proposer)
    return _overlay(overlays.save(caller.root, name, text, source=f"job {job_id}", now_ms=now))


def _propose(caller: Caller, agent: str, proposer: str) -> tuple[str, str]:
    """Run the proposer read-only over the agent's recent jobs; its answer and job id."""
    from specialists.catalog import load_catalog
    from specialists.features.manage import refine as overlays
    from specialists.supervise.plan import JobRequest, plan_job
    from specialists.supervise.start import start

    store = caller.jobs()
    spec = load_catalog(caller.root).get(agent)
    prompt = overlays.proposal_prompt(agent, spec.system_prompt, overlays.evidence(store, agent))
    request = JobRequest(specialist=proposer, prompt=prompt, permission="READ_ONLY",
                         track_bead=False)  # fmt: skip
    record = plan_job(store, request, foreground=True, warnings=caller.warnings)
    record = record.replace(owner=list(caller.keys))
    job = start(store, record, here=True, handle_signals=True, housekeep=True,
                warnings=caller.warnings)  # fmt: skip
    status = job.run()
    answer = store.read_result(status.id) if status.status == "done" else None
    if not answer:
        raise UserError(
            f"the proposer job {status.id} ended {status.status} without guidance",
            hint=f"see: specialists feed --job {status.id}",
        )
    return answer, status.id


def refine_show(caller: Caller, name: Name, /) -> dict[str, Any]:
    """The current overlay and its history."""
    from specialists.features.manage import refine as overlays

    return _overlay(overlays.show(caller.root, name))


def refine_rollback(caller: Caller, name: Name, /) -> dict[str, Any]:
    """Restore the previous revision."""
    from specialists.features.manage import refine as overlays

    return _overlay(overlays.rollback(caller.root, name, now_ms=int(time.time() * 1000)))


AGENTS = Noun(
    "agents",
    "create, edit, eject, disable or reset specialists",
    (
        Op(listing, "list", tool=None, reads=True),
        *(Op(fn, fn.__name__) for fn in (create, update, delete, eject, disable, enable, reset)),
        Op(refine, "refine", tool=None),
        Op(refine_show, "refine-show", tool=None, reads=True),
        Op(refine_rollback, "refine-rollback", tool=None),
    ),
    tool="manage_specialist",
    about=(
        "Create, update, delete, eject, disable, enable or reset a specialist definition (the "
        "roles run and list_specialists use). create writes <project>/specialists/NAME."
        "specialist.yaml (scope user: the user's directory) from fields; update changes "
        "fields of a file this tool wrote; eject copies a builtin into the scope to be edited "
        "there; disable hides a name (reversible, per scope; the project's setting wins); "
        "reset goes back to the builtin. A file a person wrote, or edited since, is never "
        "changed unless force is true; create and eject never write over a file. Only change "
        "definitions when the user asked for it."
    ),
)


def show(caller: Caller, name: str, /) -> dict[str, Any]:
    """One specialist's resolved definition (after scope precedence), and what it shadows.

    Args:
        name: specialist name, as printed by 'specialists list'
    """
    from specialists.catalog import load_catalog, specialist_to_dict

    catalog = load_catalog(caller.root)
    spec = catalog.get(name)  # NotFound: one line with suggestions, exit 2
    data = specialist_to_dict(spec)
    data["shadowed"] = [str(s.source) for s in catalog.shadowed_by(spec.name)]
    return data


SHOW = Noun("show", "show one specialist's resolved definition", (Op(show, reads=True, tool=None),))
