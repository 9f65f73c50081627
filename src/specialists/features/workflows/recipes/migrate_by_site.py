"""Migrate by site: one child per site (a file, a package, a directory), each in its own git
worktree so parallel writers never collide; each site's change is checked by the gate when
one is given. Nothing is merged into your working copy: every site's patch and stat are in
the handoff manifest (`specialists worktree show`), and `specialists sandboxes squash`
takes the ones you want.

Args: sites (separated by ','), instructions (what the migration changes), gate (one
verification command run in each site's worktree, e.g. "pytest -q"), agent (default
executor).
"""

from __future__ import annotations

import re
from typing import Any


def _key(site: str) -> str:
    slug = re.sub(r"[^a-z0-9]+", "-", site.lower()).strip("-")[:60] or "site"
    return f"migrate-{slug}"


async def main(runs: Any, args: dict[str, Any]) -> dict[str, Any]:
    sites = [s.strip() for s in str(args.get("sites") or "").split(",") if s.strip()]
    if not sites:
        raise ValueError("give sites: 'src/a.py, src/b.py'")
    keys = [_key(s) for s in sites]
    if len(set(keys)) != len(keys):
        raise ValueError("two sites give the same key; name each site differently")
    instructions = args.get("instructions")
    if not instructions:
        raise ValueError("give instructions: what the migration changes")
    agent = args.get("agent") or "executor"
    gate = args.get("gate") or None
    runs.phase("migrate")
    results = await runs.all(
        [
            {
                "key": key,
                "agent": agent,
                "worktree": True,
                **({"gate": gate} if gate else {}),
                "task": f"Migrate {site} only: {instructions}\nChange nothing outside {site}; "
                "say what you changed and anything you could not migrate.",
            }
            for key, site in zip(keys, sites, strict=True)
        ],
        check=False,  # one site failing must not hide the others' work
    )
    done = [s for s, r in zip(sites, results, strict=True) if r.ok]
    failed = {s: r.error for s, r in zip(sites, results, strict=True) if not r.ok}
    return {"migrated": done, "failed": failed, "review": "specialists worktree show"}
