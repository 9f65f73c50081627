"""How `specialists show NAME` prints for people (the command is generated from the show op,
features/manage/verbs.py)."""

from __future__ import annotations

import json
from typing import Any

TYPE_CHECKING = False
if TYPE_CHECKING:
    from argparse import Namespace


def _show(data: dict[str, Any], args: Namespace) -> int:
    if args.json:
        print(json.dumps(data, indent=2))
        return 0
    from specialists.base.display import for_terminal

    print(for_terminal(describe(data)))
    return 0


def _ms(value: int | None) -> str:
    if value is None:
        return "none"
    return f"{value} ms ({value / 1000:g} s)"


NO = object()  # a line left out


def describe(spec: dict[str, Any]) -> str:
    """Human text for one resolved definition (the op's data)."""
    runner = spec["runner"] or "default (from config)"
    if spec["runner_options"]:
        runner += f" {json.dumps(spec['runner_options'], default=str)}"
    fallback = f" (fallback {spec['fallback_model']})" if spec["fallback_model"] else ""
    tools, kill = spec["tools"], " (kill)" if spec["stall_kill"] else ""
    rows = [
        ("name", spec["name"]),
        ("description", " ".join(spec["description"].split())),
        ("scope", spec["scope"]),
        ("source", spec["source"]),
        *(("shadows", path) for path in spec["shadowed"]),
        ("aliases", ", ".join(spec["aliases"]) or NO),
        ("version", spec["version"] or NO),
        ("runner", runner),
        ("model", f"{spec['model'] or 'default'}{fallback}"),
        ("permission", spec["permission"]),
        ("tools", NO if tools is None else ", ".join(tools) or "none (no agent tool)"),
        ("thinking", spec["thinking_level"] or NO),
        ("timeout", _ms(spec["timeout_ms"])),
        ("stall timeout", _ms(spec["stall_timeout_ms"]) + kill),
        ("interactive", "yes" if spec["interactive"] else "no"),
        ("max turns", spec["max_turns"] or NO),
        ("max tokens", spec["max_tokens"] or NO),
        ("response", spec["response_format"] or NO),
        ("beads", spec["beads_integration"]),
        *(("skill path", path) for path in spec["skill_paths"]),
        ("skill inherit", spec["skill_inherit"] or NO),
        *(("script", f"[{c['phase']}{', inject output' if c['inject_output'] else ''}] {c['path']}")
          for c in spec["scripts"]),
        *(("variable", f"{key}={value}") for key, value in spec["variables"].items()),
        *(("warning", w) for w in spec["warnings"]),
    ]  # fmt: skip
    lines = [f"{label + ':':<16}{value}" for label, value in rows if value is not NO]
    lines += ["", "task template:", _indent(spec["task_template"]), "", "system prompt:"]
    lines.append(_indent(spec["system_prompt"] or "(none)"))
    return "\n".join(lines)


def _indent(text: str) -> str:
    return "\n".join(f"  {line}" if line else "" for line in text.rstrip().splitlines())


TEXT = {"show": _show}
OWN_JSON = ("show",)
