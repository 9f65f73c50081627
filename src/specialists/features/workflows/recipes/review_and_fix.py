"""Review and fix, in rounds: a reviewer lists findings, a fixer fixes them (checked by a
gate when one is given), and the next round reviews again. Every loop here has an explicit
end: it stops when a review finds nothing, or after `rounds` rounds (default 3), and then
says what is still open rather than claiming success.

Args: target (what to review; default the working copy's uncommitted changes), rounds (1-10),
gate (a verification command run after each fix, e.g. "pytest -q"), reviewer (default
reviewer), fixer (default executor).
"""

from __future__ import annotations

import json
from typing import Any

from specialists.features.workflows.recipes.parallel_review import (
    FINDINGS,  # the same finding shape
)


def _rounds(raw: object) -> int:
    try:
        rounds = int(str(raw if raw is not None else 3))
    except ValueError:
        raise ValueError(f"rounds must be a whole number from 1 to 10, not {raw!r}") from None
    if not 1 <= rounds <= 10:
        raise ValueError(f"rounds must be from 1 to 10, not {rounds}")
    return rounds


async def main(runs: Any, args: dict[str, Any]) -> dict[str, Any]:
    target = args.get("target") or "the uncommitted changes of this working copy (git diff HEAD)"
    rounds = _rounds(args.get("rounds"))
    reviewer = args.get("reviewer") or "reviewer"
    fixer = args.get("fixer") or "executor"
    gate = args.get("gate") or None
    fixed: list[dict[str, Any]] = []
    findings: list[dict[str, Any]] = []
    for n in range(1, rounds + 1):
        runs.phase(f"round {n}: review")
        review = await runs.run(
            f"review-{n}",
            agent=reviewer,
            task=f"Review {target}. Do not edit files. List each real problem with a short "
            "id, where it is, and what is wrong; an empty list if there is none.",
            schema=FINDINGS,
        )
        findings = list(review.data["findings"])
        if not findings:
            return {"target": target, "rounds": n, "clean": True, "fixed": fixed, "open": []}
        runs.phase(f"round {n}: fix")
        fix = {"gate": gate} if gate else {}
        await runs.run(
            f"fix-{n}",
            agent=fixer,
            task=f"Fix these findings about {target}, each with the smallest change that "
            "solves it; leave unrelated code alone. Findings:\n" + json.dumps(findings, indent=1),
            **fix,
        )
        fixed.extend(findings)
    runs.emit(f"stopped after {rounds} rounds with findings still open")
    return {"target": target, "rounds": rounds, "clean": False, "fixed": fixed, "open": findings}
