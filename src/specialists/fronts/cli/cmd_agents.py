"""`specialists agents ...`: create, update, delete, eject, disable, enable, reset definitions.

    agents list [--json]
    agents create NAME [--scope project|user] [--description T] [--system T|@FILE]
                  [--task-template T] [--model M] [--runner R] [--permission P]
                  [--thinking L] [--timeout-ms N]
    agents update NAME [the same options] [--scope S] [--force]
    agents delete NAME [--scope S] [--force]
    agents eject NAME [--scope S]          copy a builtin into the scope, to edit it there
    agents disable NAME [--scope S] / agents enable NAME [--scope S]
    agents reset NAME [--scope S] [--force]  back to the builtin

A file a person wrote (or edited after we wrote it) is never changed without --force; see
manage/agents.py and docs/specialists.md.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from specialists.fronts.cli.values import nonempty

if TYPE_CHECKING:
    from specialists.catalog.managed import WritableScope
    from specialists.features.manage.agents import AgentChange
    from specialists.project import Project

_VALUE_OPTIONS = (
    ("--description", "description", "one line on what it does"),
    ("--system", "system", "the system prompt, or @FILE to read it from a file"),
    ("--task-template", "task_template", "the task template ($prompt, $cwd, ...)"),
    ("--model", "model", "provider/model"),
    ("--runner", "runner", "pi, claude, codex, command or native"),
    ("--permission", "permission", "READ_ONLY, BASH_ONLY, LOW, MEDIUM or HIGH"),
    ("--thinking", "thinking", "off, minimal, low, medium, high or xhigh"),
)


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("agents", help="create, edit, eject, disable or reset specialists")
    verbs = p.add_subparsers(dest="verb", metavar="VERB", required=True)
    ls = verbs.add_parser("list", help="every definition by scope, disabled ones included")
    ls.add_argument("--json", action="store_true")
    ls.set_defaults(run=_list)
    for verb, helptext in (
        ("create", "write a new definition"),
        ("update", "change fields of a definition we wrote"),
        ("delete", "remove a definition we wrote"),
        ("eject", "copy a builtin into the scope to edit it"),
        ("disable", "hide a specialist (reversible)"),
        ("enable", "undo disable"),
        ("reset", "back to the builtin: remove the scope's file and disable"),
    ):
        v = verbs.add_parser(verb, help=helptext)
        v.add_argument("name")
        v.add_argument("--scope", choices=("project", "user"), default="project")
        v.add_argument("--json", action="store_true")
        if verb in ("create", "update"):
            for option, dest, text in _VALUE_OPTIONS:
                v.add_argument(option, dest=dest, type=nonempty, help=text)
            v.add_argument("--timeout-ms", dest="timeout_ms", type=int, help="job limit in ms")
        if verb in ("update", "delete", "reset"):
            v.add_argument("--force", action="store_true", help="even over a hand-written file")
        v.set_defaults(run=_change)
    r = verbs.add_parser("refine", help="add project guidance to an agent's system prompt")
    r.add_argument("name")
    r.add_argument("--guidance", help="the guidance itself, or @FILE (default: ask a proposer)")
    r.add_argument("--proposer", default="reviewer", help="read-only specialist that proposes it")
    r.add_argument("--json", action="store_true")
    r.set_defaults(run=_refine)
    for verb, helptext in (
        ("refine-show", "the current overlay and its history"),
        ("refine-rollback", "restore the previous revision"),
    ):
        v = verbs.add_parser(verb, help=helptext)
        v.add_argument("name")
        v.add_argument("--json", action="store_true")
        v.set_defaults(run=_refine)


def _values(args: argparse.Namespace) -> dict[str, Any]:

    values: dict[str, Any] = {}
    for _, dest, _ in _VALUE_OPTIONS:
        value = getattr(args, dest, None)
        if value is None:
            continue
        if dest == "system":
            value = _text_or_file(value, "the system prompt")
        values[dest] = value
    if getattr(args, "timeout_ms", None) is not None:
        values["timeout_ms"] = args.timeout_ms
    return values


def _change(args: argparse.Namespace, project: Project) -> int:
    from specialists.base.errors import UserError
    from specialists.features.manage import agents

    root = project.root
    force = getattr(args, "force", False)
    change: AgentChange
    if args.verb == "create":
        change = agents.create(root, args.scope, args.name, _values(args))
    elif args.verb == "update":
        values = _values(args)
        if not values:
            raise UserError("nothing to update", hint="give at least one field, e.g. --model")
        change = agents.update(root, args.scope, args.name, values, force=force)
    elif args.verb == "delete":
        change = agents.delete(root, args.scope, args.name, force=force)
    elif args.verb == "eject":
        change = agents.eject(root, args.scope, args.name)
    elif args.verb in ("disable", "enable"):
        change = agents.set_disabled(root, args.scope, args.name, args.verb == "disable")
    elif args.verb == "reset":
        change = agents.reset(root, args.scope, args.name, force=force)
    else:
        raise UserError(f"unknown verb {args.verb!r}")
    _show(change, args.json)
    return 0


def _refine(args: argparse.Namespace, project: Project) -> int:
    import time

    from specialists.features.manage import refine

    root = project.root
    now = int(time.time() * 1000)
    if args.verb == "refine-show":
        overlay = refine.show(root, args.name)
    elif args.verb == "refine-rollback":
        overlay = refine.rollback(root, args.name, now_ms=now)
    elif args.guidance is not None:
        text = _text_or_file(args.guidance, "the guidance")
        overlay = refine.save(root, args.name, text, source="person", now_ms=now)
    else:
        text, job_id = _propose(project, args.name, args.proposer)
        overlay = refine.save(root, args.name, text, source=f"job {job_id}", now_ms=now)
    if args.json:
        data = {"agent": overlay.agent, "revision": overlay.revision, "text": overlay.text}
        print(json.dumps({**data, "history": list(overlay.history)}, ensure_ascii=False))
        return 0
    from specialists.base.display import display_line, for_terminal

    if overlay.revision:
        print(f"{overlay.agent}: revision {overlay.revision}")
        print(for_terminal(overlay.text))
    else:
        print(f"{overlay.agent}: no refinement overlay")
    if args.verb == "refine-show":
        for entry in overlay.history:
            print("  " + display_line(json.dumps(entry, ensure_ascii=False), 300))
    return 0


def _propose(project: Project, agent: str, proposer: str) -> tuple[str, str]:
    """Run the proposer read-only over the agent's recent jobs; its answer and job id."""
    from specialists.base.errors import UserError
    from specialists.catalog import load_catalog
    from specialists.features.manage import refine
    from specialists.supervise.plan import JobRequest

    spec = load_catalog(project.root).get(agent)
    prompt = refine.proposal_prompt(
        agent, spec.system_prompt, refine.evidence(project.store, agent)
    )
    request = JobRequest(
        specialist=proposer, prompt=prompt, permission="READ_ONLY", track_bead=False
    )
    warnings: list[str] = []
    record = project.plan(request, foreground=True, warnings=warnings)
    job = project.start(record, here=True, handle_signals=True, warnings=warnings)
    status = job.run()
    answer = project.store.read_result(status.id) if status.status == "done" else None
    if not answer:
        raise UserError(
            f"the proposer job {status.id} ended {status.status} without guidance",
            hint=f"see: specialists feed --job {status.id}",
        )
    return answer, status.id


def _text_or_file(value: str, what: str) -> str:
    from specialists.base.errors import UserError

    if not value.startswith("@"):
        return value
    try:
        return Path(value[1:]).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise UserError(f"cannot read {what} from {value[1:]}: {exc}") from None


def _show(change: AgentChange, as_json: bool) -> None:
    from specialists.base.display import display_line

    for warning in change.warnings:
        print(f"warning: {display_line(warning, 400)}", file=sys.stderr)
    if as_json:
        data = {
            "kind": change.kind,
            "name": change.name,
            "scope": change.scope,
            "path": str(change.path) if change.path else None,
            "changed": change.changed,
            "warnings": list(change.warnings),
        }
        print(json.dumps(data, ensure_ascii=False))
        return
    where = f" ({change.path})" if change.path else ""
    state = "" if change.changed else " (nothing to change)"
    print(display_line(f"{change.kind} {change.name} in {change.scope} scope{where}{state}", 600))


def _list(args: argparse.Namespace, project: Project) -> int:
    from specialists.base.display import display_line
    from specialists.catalog import load_catalog
    from specialists.catalog.managed import digest, read_settings, settings_path

    root = project.root
    catalog = load_catalog(root)
    written: dict[str, str] = {}
    scopes: tuple[WritableScope, ...] = ("project", "user")
    for scope in scopes:
        written.update(read_settings(settings_path(scope, root)).written)
    rows = []
    entries = [(s, "active") for s in catalog.all()]
    entries += [(spec, f"disabled ({scope})") for scope, spec in catalog.disabled.values()]
    entries += [(loser, f"shadowed by {winner.scope}") for winner, loser in catalog.shadowed]
    for spec, state in sorted(entries, key=lambda e: (e[0].name, e[0].scope)):
        source = str(spec.source) if spec.source else ""
        try:
            ours = bool(source) and written.get(source) == digest(Path(source).read_bytes())
        except OSError:
            ours = False
        rows.append(
            {
                "name": spec.name,
                "scope": spec.scope,
                "state": state,
                "source": source,
                "managed": ours,
            }
        )
    problems = [p.one_line() for p in catalog.problems]  # files that failed, as `list` has them
    if args.json:
        print(json.dumps({"agents": rows, "problems": problems}, ensure_ascii=False, indent=1))
        return 0
    for problem in problems:
        print(display_line(problem, 600), file=sys.stderr)
    for row in rows:
        mark = (
            "managed" if row["managed"] else ("builtin" if row["scope"] == "builtin" else "by hand")
        )
        name, source = display_line(row["name"], 64), display_line(row["source"], 300)
        print(f"{name:<22} {row['scope']:<8} {row['state']:<20} {mark:<8} {source}")
    return 0
