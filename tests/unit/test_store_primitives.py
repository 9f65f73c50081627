"""Atomic replace and file locking each live in one module (issue 8 item 6).

`jobs/atomic.py` is the only caller of os.replace in src/ and `jobs/locks.py` the only
user of flock/lockf: a second copy is where the guarantees (no torn file, a temp file that
cannot be redirected, 0600, a lock that cannot be planted) quietly stop holding. Call sites
older than the rule are listed below; the list may only shrink (an entry that no longer
matches fails the test, so it gets removed when its file is converted).
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

SRC = Path(__file__).resolve().parents[2] / "src" / "specialists"

RULES = {
    "atomic replace": (
        re.compile(r"\bos\.replace\(|from os import [^\n]*\breplace\b"),
        "jobs/atomic.py",
    ),
    "file locking": (re.compile(r"\bfcntl\.(flock|lockf)\(|\bimport fcntl\b"), "jobs/locks.py"),
}

# Outside jobs/, not converted yet (owners: see the lead's notes). Shrink, never grow.
NOT_YET_CONVERTED = {
    "atomic replace": {
        "cli/health.py",
        "events/spill.py",
        "install.py",
        "logfile.py",
        "native/breaker.py",
    },
    "file locking": {"events/files.py", "native/breaker.py", "sandbox/meta.py"},
}


def _users(pattern: re.Pattern[str]) -> set[str]:
    return {
        str(path.relative_to(SRC))
        for path in SRC.rglob("*.py")
        if pattern.search(path.read_text(encoding="utf-8"))
    }


@pytest.mark.parametrize("rule", list(RULES))
def test_each_primitive_lives_in_one_module(rule):
    pattern, home = RULES[rule]
    users = _users(pattern)
    assert home in users
    strays = users - {home} - NOT_YET_CONVERTED[rule]
    assert not strays, f"{rule} outside {home}: {sorted(strays)}; use the one in {home}"
    converted = NOT_YET_CONVERTED[rule] - users
    assert not converted, f"remove {sorted(converted)} from NOT_YET_CONVERTED: they are clean now"
