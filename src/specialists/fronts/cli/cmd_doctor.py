"""`specialists doctor`: agent CLIs, config, catalog and store health. Never used by status."""

from __future__ import annotations

import argparse
import json
import os
import shutil
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from concurrent.futures import Executor
    from pathlib import Path

    from specialists.fronts.cli.entry_points import Finding
    from specialists.project import Project

AGENTS = (
    ("node", "SPECIALISTS_NODE", "install Node.js >= 22.19 (scripts/setup puts one in .tools)"),
    ("pi", "SPECIALISTS_PI_BIN", "npm install -g @earendil-works/pi-coding-agent@1.6.0"),
    ("claude", "SPECIALISTS_CLAUDE_BIN", "npm install -g @anthropic-ai/claude-code"),
    ("codex", "SPECIALISTS_CODEX_BIN", "npm install -g @openai/codex"),
    ("bd", "SPECIALISTS_BD_BIN", "optional: the beads issue tracker"),
)


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("doctor", help="check agent CLIs, config, specialists and the job store")
    p.add_argument("--json", action="store_true")
    p.set_defaults(run=run)


def tool_version(name: str, env_var: str, ask: bool = True) -> tuple[str | None, str | None]:
    """(path, version line) of an agent CLI, or (None, None) when it is not installed; `ask`
    False: its path alone."""
    path = os.environ.get(env_var) or shutil.which(name)
    if not path or not ask:
        return path, None
    from specialists.process.short import run_short

    out = run_short([path, "--version"], timeout=15)
    if out.error is not None:
        return path, f"unusable: {out.error}"
    text = (out.stdout or out.stderr).strip().splitlines()
    return path, (text[0] if text else f"exit {out.code}")


def _entry_points(root: Path, report: dict[str, object], problems: list[str]) -> list[Finding]:
    """What .mcp.json, the hooks and pi's settings run, and whether it still runs."""
    from specialists.fronts.cli.entry_points import check, entry_points

    points, unreadable = entry_points(root)
    findings = check(points)
    report["entry_points"] = [
        {"python": f.python, "used_by": f.used_by, "problem": f.problem} for f in findings
    ]
    problems.extend(f"entry points: {p}" for p in unreadable)
    problems.extend(f"entry points: {f.problem}" for f in findings if f.problem)
    return findings


def _check_pi(tools: dict[str, dict[str, object]], pool: Executor) -> list[str]:
    """pi as a job starts it: with the Node its package accepts (shown as `node`), and a
    real start with our extension (cli/pi_probe.py) while the versions are asked."""
    from specialists.base.errors import AgentUnavailable
    from specialists.fronts.cli.pi_probe import probe_pi
    from specialists.process.short import run_short
    from specialists.runners.pi import resolve_pi_command

    try:
        command = resolve_pi_command({}, os.environ)
    except AgentUnavailable as exc:
        tools["pi"]["version"] = "unusable"
        return [f"pi: {exc.one_line()}"]
    ran_by = command[0] if len(command) == 2 else None  # [node, pi]: the Node that runs it
    node = pool.submit(run_short, [ran_by, "--version"], timeout=15) if ran_by else None
    version = pool.submit(run_short, [*command, "--version"], timeout=30)
    probe = probe_pi()
    if node is not None:
        said = node.result().stdout.strip()
        tools["node"] = {"path": ran_by, "version": said, "hint": None}
    out = version.result()
    tools["pi"]["version"] = out.stdout.strip() if out.ok else f"unusable: {out.describe()}"
    tools["pi"]["extension"] = {"ok": probe.ok, "detail": probe.line}
    return [] if probe.ok else [f"pi: {probe.line}"]


def run(args: argparse.Namespace, project: Project) -> int:
    from concurrent.futures import ThreadPoolExecutor

    from specialists.base.errors import SpecialistsError
    from specialists.catalog import load_catalog
    from specialists.catalog.config import load_config
    from specialists.store.view import all_statuses

    root = project.root
    report: dict[str, object] = {"project_root": str(root)}
    problems: list[str] = []
    tools: dict[str, dict[str, object]] = {}
    # The CLIs are asked at once (each `--version` starts a Node: a second or two in a row);
    # pi's version is asked as a job starts it (_check_pi), not through PATH's shim too.
    with ThreadPoolExecutor(len(AGENTS) + 2) as pool:
        asked = [
            (name, hint, pool.submit(tool_version, name, env_var, name != "pi"))
            for name, env_var, hint in AGENTS
        ]
        for name, hint, found in asked:
            path, version = found.result()
            tools[name] = {"path": path, "version": version, "hint": None if path else hint}
        report["tools"] = tools
        findings = _entry_points(root, report, problems)
        if tools["pi"]["path"]:
            problems.extend(_check_pi(tools, pool))
    named = {p.split(":")[0] for p in problems}  # a CLI that is there but does not run
    problems.extend(
        f"{n}: {t['version']}" for n, t in tools.items() if _broken(t) and n not in named
    )
    try:
        config = load_config(root)
        report["config"] = {
            "default_runner": config.default_runner,
            "default_model": config.default_model,
            "providers": sorted(config.providers),
        }
    except SpecialistsError as exc:
        problems.append(f"config: {exc.one_line()}")
    catalog = load_catalog(root)
    report["specialists"] = len(catalog.all())
    problems.extend(f"specialist: {p.one_line()}" for p in catalog.problems)
    store = project.store
    try:
        statuses, store_problems = all_statuses(store)
    except OSError as exc:  # e.g. .specialists is a file: report it, check the rest
        statuses, store_problems = [], [f"{exc.filename}: {exc.strerror or exc}"]
    problems.extend(f"store: {p}" for p in store_problems)
    report["jobs"] = {"total": len(statuses), "active": sum(s.active for s in statuses)}
    report["store"] = str(store.root) if store.root.is_dir() else None
    report["problems"] = problems
    if args.json:
        print(json.dumps(report, indent=1))
    else:
        print(f"project: {root}")
        for name, info in tools.items():
            if info["path"]:
                mark = "✗" if _broken(info) else "✓"
                print(f"  {mark} {name:<7} {info['version']}  ({info['path']})")
                probed = info.get("extension")
                if isinstance(probed, dict) and probed["ok"]:
                    print(f"    ✓ {probed['detail']}")
            else:
                print(f"  ✗ {name:<7} not found: {info['hint']}")
        for finding in findings:
            if finding.problem is None:
                files = sorted({u.split(": ")[0] for u in finding.used_by})
                print(f"  ✓ entry points run {finding.python} ({', '.join(files)})")
        print(f"  specialists: {report['specialists']} loaded")
        where = store.root if store.root.is_dir() else "not initialised (run: specialists init)"
        jobs = report["jobs"]
        assert isinstance(jobs, dict)
        print(f"  store: {where}; {jobs['total']} jobs, {jobs['active']} active")
        from specialists.base.display import display_line

        for problem in problems:
            print(f"  ! {display_line(problem, 500)}")
    essential = [n for n in ("node", "pi") if not tools[n]["path"]]
    return 1 if problems or essential else 0


def _broken(tool: dict[str, object]) -> bool:
    return str(tool["version"] or "").startswith("unusable")
