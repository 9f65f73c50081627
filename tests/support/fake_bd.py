#!/usr/bin/env python3
"""A stand-in `bd` (beads) implementing the subset specialists uses; it records its calls.

The real bd downloads a binary at install time, so tests use this instead. It mirrors the
real CLI where specialists depends on it (checked against steveyegge/beads cmd/bd):
- `create <title> [--title] [-d|--description] [-t|--type] [-p|--priority] [-l|--labels]
  [--notes] [--json] [--silent]` -> the new issue as a JSON object
- `show <id>... --json` -> a JSON array of issue details with `dependencies` (each the
  dependency's issue fields plus `dependency_type`) and `dependents`
- `update <id> [--notes | --append-notes] [-s|--status] [--title] --json` -> JSON array
- `close <id> [-r|--reason] --json` -> JSON array
- `--version`
- An unknown flag is an error ("Error: unknown flag: --x", exit 1), as cobra does.
- An unknown id is reported on stderr with exit status 0 and no JSON, as real bd does.

Environment:
- FAKE_BD_STATE: JSON file with {"next": int, "prefix": str, "issues": {id: issue}}.
  Tests seed issues by writing it (see `seed`); `dependencies` are [{"id", "type"}].
- FAKE_BD_LOG: JSONL file; one {"argv": [...], "cwd": ...} line per call.
- FAKE_BD_FAIL: a subcommand name that fails with exit 1 (to test error paths).
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Any

FLAGS: dict[str, dict[str, str]] = {
    # flag -> canonical name; a value of "" marks a boolean flag
    "create": {
        "--title": "title",
        "--description": "description",
        "-d": "description",
        "--type": "type",
        "-t": "type",
        "--priority": "priority",
        "-p": "priority",
        "--labels": "labels",
        "-l": "labels",
        "--notes": "notes",
        "--json": "",
        "--silent": "",
    },
    "show": {"--json": ""},
    "update": {
        "--notes": "notes",
        "--append-notes": "append_notes",
        "--status": "status",
        "-s": "status",
        "--title": "title",
        "--json": "",
    },
    "close": {"--reason": "reason", "-r": "reason", "--json": ""},
}


def load_state(path: Path) -> dict[str, Any]:
    if path.exists():
        return json.loads(path.read_text())
    return {"next": 1, "prefix": "bd", "issues": {}}


def seed(path: Path, issues: list[dict[str, Any]]) -> None:
    """Write a state with these issues (each needs id and title)."""
    state = {"next": 100, "prefix": "bd", "issues": {}}
    for issue in issues:
        state["issues"][issue["id"]] = {
            "status": "open",
            "description": "",
            "notes": "",
            "dependencies": [],
            **issue,
        }
    path.write_text(json.dumps(state))


def install_wrapper(bin_dir: Path) -> Path:
    """An executable `bd` in bin_dir that runs this script with the current interpreter."""
    bin_dir.mkdir(parents=True, exist_ok=True)
    wrapper = bin_dir / "bd"
    wrapper.write_text(f'#!/bin/sh\nexec "{sys.executable}" "{Path(__file__).resolve()}" "$@"\n')
    wrapper.chmod(0o755)
    return wrapper


def read_calls(log: Path) -> list[list[str]]:
    """argv of every recorded call, oldest first."""
    if not log.exists():
        return []
    return [json.loads(line)["argv"] for line in log.read_text().splitlines() if line.strip()]


def parse(command: str, args: list[str]) -> tuple[list[str], dict[str, Any]]:
    spec = FLAGS[command]
    positional: list[str] = []
    opts: dict[str, Any] = {}
    i = 0
    while i < len(args):
        arg = args[i]
        if arg == "--":
            positional += args[i + 1 :]
            break
        if arg.startswith("-") and len(arg) > 1:
            name, eq, value = arg.partition("=")
            if name not in spec:
                raise SystemExit(_fail(f"Error: unknown flag: {name}"))
            key = spec[name]
            if key == "":
                opts[name.lstrip("-")] = True
            elif eq:
                opts[key] = value
            else:
                if i + 1 >= len(args):
                    raise SystemExit(_fail(f"Error: flag needs an argument: {name}"))
                opts[key] = args[i + 1]
                i += 1
        else:
            positional.append(arg)
        i += 1
    return positional, opts


def _fail(message: str) -> int:
    print(message, file=sys.stderr)
    return 1


def details(state: dict[str, Any], issue: dict[str, Any]) -> dict[str, Any]:
    issues = state["issues"]
    out = {k: v for k, v in issue.items() if k != "dependencies"}
    deps = []
    for dep in issue.get("dependencies", []):
        target = issues.get(dep["id"])
        if target is not None:
            fields = {k: v for k, v in target.items() if k != "dependencies"}
            deps.append({**fields, "dependency_type": dep.get("type", "blocks")})
    dependents = []
    for other in issues.values():
        for dep in other.get("dependencies", []):
            if dep["id"] == issue["id"]:
                fields = {k: v for k, v in other.items() if k != "dependencies"}
                dependents.append({**fields, "dependency_type": dep.get("type", "blocks")})
    if deps:
        out["dependencies"] = deps
    if dependents:
        out["dependents"] = dependents
    return out


def main(argv: list[str]) -> int:
    log = os.environ.get("FAKE_BD_LOG")
    if log:
        with open(log, "a", encoding="utf-8") as f:
            f.write(json.dumps({"argv": argv, "cwd": os.getcwd()}) + "\n")
    if argv in (["--version"], ["version"]):
        print("bd version 0.0.0-fake")
        return 0
    if not argv or argv[0] not in FLAGS:
        return _fail(f'Error: unknown command {argv[:1]!r} for "bd"')
    command = argv[0]
    if os.environ.get("FAKE_BD_FAIL") == command:
        return _fail(f"Error: simulated failure of {command}")
    state_path = Path(os.environ.get("FAKE_BD_STATE") or ".fake-bd-state.json")
    state = load_state(state_path)
    positional, opts = parse(command, argv[1:])
    issues = state["issues"]
    answer: Any = None

    if command == "create":
        title = opts.get("title") or (positional[0] if positional else "")
        if not title:
            return _fail("Error: title required")
        issue_id = f"{state['prefix']}-{state['next']:03x}"
        state["next"] += 1
        issue = {
            "id": issue_id,
            "title": title,
            "description": opts.get("description", ""),
            "notes": opts.get("notes", ""),
            "status": "open",
            "priority": int(str(opts.get("priority", "2")).lstrip("Pp")),
            "issue_type": opts.get("type", "task"),
            "labels": [x for x in str(opts.get("labels", "")).split(",") if x],
            "dependencies": [],
        }
        issues[issue_id] = issue
        answer = details(state, issue)
        if opts.get("silent"):
            print(issue_id)
            answer = None
    else:
        if not positional:
            return _fail("Error: no issue ID provided and no last touched issue")
        found = []
        for issue_id in positional:
            issue = issues.get(issue_id)
            if issue is None:
                print(f"Error fetching {issue_id}: no issue found", file=sys.stderr)
                continue
            if command == "update":
                if "notes" in opts and "append_notes" in opts:
                    return _fail("Error: cannot specify both --notes and --append-notes")
                if "notes" in opts:
                    issue["notes"] = opts["notes"]
                if "append_notes" in opts:
                    issue["notes"] = (issue["notes"] + "\n" if issue["notes"] else "") + opts[
                        "append_notes"
                    ]
                for key in ("status", "title"):
                    if key in opts:
                        issue[key] = opts[key]
            elif command == "close":
                issue["status"] = "closed"
                issue["close_reason"] = opts.get("reason") or "Closed"
            plain = {k: v for k, v in issue.items() if k != "dependencies"}
            found.append(details(state, issue) if command == "show" else plain)
        answer = found or None  # real bd prints nothing when no issue matched
    state_path.write_text(json.dumps(state, indent=1))
    if answer is not None:
        if opts.get("json"):
            print(json.dumps(answer))
        else:
            print(f"ok {command}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
