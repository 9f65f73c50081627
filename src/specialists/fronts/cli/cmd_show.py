"""How `specialists show NAME` prints for people (the command is generated from the show op,
features/manage/verbs.py)."""

from __future__ import annotations

import json
from argparse import Namespace
from typing import Any


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


def describe(spec: dict[str, Any]) -> str:
    """Human text for one resolved definition (the op's data)."""
    lines = [
        f"name:           {spec['name']}",
        f"description:    {' '.join(spec['description'].split())}",
        f"scope:          {spec['scope']}",
        f"source:         {spec['source']}",
    ]
    lines += [f"shadows:        {path}" for path in spec["shadowed"]]
    if spec["aliases"]:
        lines.append(f"aliases:        {', '.join(spec['aliases'])}")
    if spec["version"]:
        lines.append(f"version:        {spec['version']}")
    runner = spec["runner"] or "default (from config)"
    if spec["runner_options"]:
        runner += f" {json.dumps(spec['runner_options'], default=str)}"
    fallback = spec["fallback_model"]
    lines += [
        f"runner:         {runner}",
        f"model:          {spec['model'] or 'default'}"
        + (f" (fallback {fallback})" if fallback else ""),
        f"permission:     {spec['permission']}",
    ]
    if spec["tools"] is not None:
        lines.append(f"tools:          {', '.join(spec['tools']) or 'none (no agent tool)'}")
    if spec["thinking_level"]:
        lines.append(f"thinking:       {spec['thinking_level']}")
    lines += [
        f"timeout:        {_ms(spec['timeout_ms'])}",
        f"stall timeout:  {_ms(spec['stall_timeout_ms'])}"
        + (" (kill)" if spec["stall_kill"] else ""),
        f"interactive:    {'yes' if spec['interactive'] else 'no'}",
    ]
    if spec["max_turns"]:
        lines.append(f"max turns:      {spec['max_turns']}")
    if spec["max_tokens"]:
        lines.append(f"max tokens:     {spec['max_tokens']}")
    if spec["response_format"]:
        lines.append(f"response:       {spec['response_format']}")
    lines.append(f"beads:          {spec['beads_integration']}")
    lines += [f"skill path:     {p}" for p in spec["skill_paths"]]
    if spec["skill_inherit"]:
        lines.append(f"skill inherit:  {spec['skill_inherit']}")
    for script in spec["scripts"]:
        inject = ", inject output" if script["inject_output"] else ""
        lines.append(f"script:         [{script['phase']}{inject}] {script['path']}")
    for key, value in spec["variables"].items():
        lines.append(f"variable:       {key}={value}")
    lines += [f"warning:        {w}" for w in spec["warnings"]]
    lines += ["", "task template:", _indent(spec["task_template"]), "", "system prompt:"]
    lines.append(_indent(spec["system_prompt"] or "(none)"))
    return "\n".join(lines)


def _indent(text: str) -> str:
    return "\n".join(f"  {line}" if line else "" for line in text.rstrip().splitlines())


TEXT = {"show": _show}
OWN_JSON = ("show",)
