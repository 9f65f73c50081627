"""A specialist's `response_format` (text | json | markdown), for agents with no switch for it.

pi has no structured-output option, so the format is asked for in the system prompt and a
JSON answer is checked when it arrives: one that does not parse is kept as it is (never
lost, never an error) and a notice says so.
"""

from __future__ import annotations

import json

INSTRUCTIONS = {
    "json": (
        "Give your final answer as a single JSON value and nothing else: "
        "no prose before or after it, no Markdown code fence."
    ),
    "markdown": "Format your final answer as Markdown.",
    "text": "Give your final answer as plain text, without Markdown formatting.",
}


def format_instruction(response_format: str | None) -> str | None:
    """The line to append to the system prompt for `response_format`, if any."""
    return INSTRUCTIONS.get(response_format or "")


def format_problem(response_format: str | None, answer: str) -> str | None:
    """Why `answer` does not have the asked-for format, or None (only JSON is checked)."""
    if response_format != "json":
        return None
    text = answer.strip()
    if text.startswith("```") and text.endswith("```"):  # a fenced block despite the ask
        text = text.split("\n", 1)[1] if "\n" in text else ""
        text = text[: text.rfind("```")]
    try:
        json.loads(text)
    except ValueError as exc:
        return f"the answer is not valid JSON (response_format json): {exc}"
    return None
