"""Parallel research with synthesis: each question researched by its own child at once (a
barrier), then one writer combines the answers into a single report.

Args: questions (separated by ';'), topic (optional context for every researcher),
researcher (default explorer), writer (default doc-writer).
"""

from __future__ import annotations

import re
from typing import Any


def _key(question: str) -> str:
    slug = re.sub(r"[^a-z0-9]+", "-", question.lower()).strip("-")[:60] or "q"
    return f"research-{slug}"


async def main(runs: Any, args: dict[str, Any]) -> str:
    questions = [q.strip() for q in str(args.get("questions") or "").split(";") if q.strip()]
    if not questions:
        raise ValueError("give questions: 'first question; second question'")
    topic = args.get("topic") or ""
    researcher = args.get("researcher") or "explorer"
    writer = args.get("writer") or "doc-writer"
    runs.phase("research")
    answers = await runs.all(
        [
            {
                "key": _key(q),
                "agent": researcher,
                "task": (f"Context: {topic}\n" if topic else "")
                + f"Research this question and answer it with evidence (files, lines, "
                f"commands you ran): {q}",
            }
            for q in questions
        ]
    )
    runs.phase("synthesis")
    notes = "\n\n".join(f"## {q}\n{a.output}" for q, a in zip(questions, answers, strict=True))
    summary = await runs.run(
        "synthesis",
        agent=writer,
        task="Combine these research notes into one report: what is known, what conflicts, "
        f"what is still open. Keep every claim tied to its evidence.\n\n{notes}",
    )
    return str(summary.output)
