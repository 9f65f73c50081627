"""A child's structured acceptance report, found in its final answer and validated.

The child ends its answer with a fenced block tagged `acceptance` (the last one counts):

    ```acceptance
    {"status": "done", "summary": "what was done",
     "changed_files": ["src/a.py"], "checks": [{"command": "pytest -q", "exit_code": 0}]}
    ```

or its whole answer is a JSON object with an `acceptance` member holding that object (a child
whose output follows a schema). `status` is done, partial or blocked; `changed_files` are
paths relative to its working copy; `checks` are commands it says it ran, with their exit
codes. Anything else is malformed, and said so in one line.
"""

from __future__ import annotations

import json
import re

from specialists.store.fields import EMPTY, Declared

MAX_REPORT_CHARS = 64 * 1024
MAX_FILES = 2000
MAX_CHECKS = 100
MAX_TEXT = 8 * 1024
MAX_PATH = 4096
_STATUSES = ("done", "partial", "blocked")
_FENCE = re.compile(r"^```[ \t]*acceptance[ \t]*\n(.*?)^```[ \t]*$", re.MULTILINE | re.DOTALL)
_FIELDS = {"status", "summary", "changed_files", "checks", "notes"}

INSTRUCTIONS = (
    "When you finish, end your answer with an acceptance report: a fenced block tagged "
    "`acceptance` holding one JSON object with status (done, partial or blocked), summary "
    "(one paragraph), changed_files (paths you changed, relative to your working directory's "
    "repository root) and checks (each command you ran to verify the work, as "
    '{"command": ..., "exit_code": ...}). Report only what you did and saw.'
)


class Check(Declared):
    command: str
    exit_code: int


class AcceptanceReport(Declared):
    status: str  # done, partial or blocked
    summary: str
    changed_files: list[str] = EMPTY
    checks: list[Check] = EMPTY
    notes: str = ""


def extract_report(answer: str | None) -> tuple[AcceptanceReport | None, str | None]:
    """(report, None), (None, None) when the answer holds none, (None, why) when malformed."""
    if not answer:
        return None, None
    raw = _raw_report(answer)
    if raw is None:
        return None, None
    if isinstance(raw, str):
        if len(raw) > MAX_REPORT_CHARS:
            return None, f"the acceptance report is longer than {MAX_REPORT_CHARS} characters"
        try:
            raw = json.loads(raw)
        except RecursionError:
            return None, "the acceptance report is nested too deeply"
        except ValueError as exc:
            return None, f"the acceptance report is not valid JSON: {str(exc)[:120]}"
    return _validated(raw)


def _raw_report(answer: str) -> object:
    blocks = _FENCE.findall(answer)
    if blocks:
        return blocks[-1]
    stripped = answer.strip()
    if stripped.startswith("{") and len(stripped) <= MAX_REPORT_CHARS:
        try:
            whole = json.loads(stripped)
        except (ValueError, RecursionError):
            return None  # not a structured answer: no report in it
        if isinstance(whole, dict) and "acceptance" in whole:
            return whole["acceptance"]
    return None


def _validated(raw: object) -> tuple[AcceptanceReport | None, str | None]:
    if not isinstance(raw, dict):
        return None, "the acceptance report is not a JSON object"
    unknown = sorted(set(raw) - _FIELDS)
    if unknown:
        return None, f"the acceptance report has an unknown field {unknown[0][:60]!r}"
    status = raw.get("status")
    if status not in _STATUSES:
        return None, "the acceptance report's status must be done, partial or blocked"
    summary = raw.get("summary")
    if not isinstance(summary, str) or not summary.strip() or len(summary) > MAX_TEXT:
        return None, f"the acceptance report needs a summary (text up to {MAX_TEXT} characters)"
    notes = raw.get("notes", "")
    if not isinstance(notes, str) or len(notes) > MAX_TEXT:
        return None, f"the acceptance report's notes must be text up to {MAX_TEXT} characters"
    files = raw.get("changed_files", [])
    if not isinstance(files, list) or len(files) > MAX_FILES:
        return None, f"the acceptance report's changed_files must be a list of at most {MAX_FILES}"
    for path in files:
        if not isinstance(path, str) or not path or len(path) > MAX_PATH or "\0" in path:
            return None, f"the acceptance report's changed_files holds {str(path)[:80]!r}"
    checks = raw.get("checks", [])
    if not isinstance(checks, list) or len(checks) > MAX_CHECKS:
        return None, f"the acceptance report's checks must be a list of at most {MAX_CHECKS}"
    parsed = []
    for check in checks:
        if (
            not isinstance(check, dict)
            or set(check) != {"command", "exit_code"}
            or not isinstance(check["command"], str)
            or not check["command"].strip()
            or len(check["command"]) > MAX_TEXT
            or type(check["exit_code"]) is not int
        ):
            return None, (
                "each check in the acceptance report must be "
                '{"command": "<text>", "exit_code": <integer>}'
            )
        parsed.append(Check(check["command"], check["exit_code"]))
    report = AcceptanceReport(
        status, summary.strip(), [_normal_path(p) for p in files], parsed, notes
    )
    return report, None


def _normal_path(path: str) -> str:
    while path.startswith("./"):
        path = path[2:]
    return path
