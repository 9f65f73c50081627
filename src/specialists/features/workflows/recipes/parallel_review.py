"""Parallel review: each dimension reviewed by its own child, its findings then attacked by a
verifier that tries to refute each one; a pipeline, so a dimension's verification starts as
soon as its review is done. Only findings that survive are reported.

Args: target (what to review; default the working copy's uncommitted changes), dimensions
(comma-separated; default correctness, tests, security, maintainability), reviewer and
verifier (specialists; default reviewer for both).
"""

from __future__ import annotations

import json
from typing import Any

DIMENSIONS = "correctness,tests,security,maintainability"
FINDINGS = {
    "type": "object",
    "properties": {
        "findings": {
            "type": "array",
            "items": {
                "type": "object",
                "properties": {
                    "id": {"type": "string"},
                    "where": {"type": "string"},
                    "problem": {"type": "string"},
                },
                "required": ["id", "problem"],
            },
        }
    },
    "required": ["findings"],
}
VERDICTS = {
    "type": "object",
    "properties": {
        "confirmed": {"type": "array", "items": {"type": "string"}},
        "refuted": {"type": "array", "items": {"type": "string"}},
    },
    "required": ["confirmed", "refuted"],
}


async def main(runs: Any, args: dict[str, Any]) -> dict[str, Any]:
    target = args.get("target") or "the uncommitted changes of this working copy (git diff HEAD)"
    dimensions = [d.strip() for d in str(args.get("dimensions") or DIMENSIONS).split(",")]
    reviewer = args.get("reviewer") or "reviewer"
    verifier = args.get("verifier") or reviewer
    runs.phase("review and verify")

    def review(dimension: str, _prev: Any) -> dict[str, Any]:
        return {
            "key": f"review-{dimension}",
            "agent": reviewer,
            "task": f"Review {target} for {dimension} only. Do not edit files. List each "
            "finding with a short id, where it is, and the problem.",
            "schema": FINDINGS,
        }

    def verify(dimension: str, found: Any) -> dict[str, Any]:
        return {
            "key": f"verify-{dimension}",
            "agent": verifier,
            "task": f"Try to refute each of these {dimension} findings about {target}. Read "
            "the code; confirm a finding only if you can show it is real. Findings:\n"
            + json.dumps(found.data["findings"], indent=1),
            "schema": VERDICTS,
        }

    verdicts = await runs.pipeline([d for d in dimensions if d], review, verify)
    report: dict[str, Any] = {}
    for dimension, verdict in zip([d for d in dimensions if d], verdicts, strict=True):
        found = runs.results[f"review-{dimension}"].data["findings"]
        kept = set(verdict.data["confirmed"])
        report[dimension] = [f for f in found if f["id"] in kept]
    return {"target": target, "confirmed": report}
