"""Render a specialist's task template into the text sent to the agent.

`$name` / `${name}` placeholders, `string.Template.safe_substitute` rules: unknown
placeholders stay as written, `$$` is a literal `$`, values are not re-expanded. The system
prompt is never rendered (it is the specialist's fixed identity).
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from string import Template

from specialists.catalog.model import Specialist

BUILTIN_VARIABLES = ("prompt", "cwd", "pre_script_output")


def render_task(
    spec: Specialist,
    prompt: str,
    cwd: Path,
    pre_script_output: str = "",
    variables: Mapping[str, str] | None = None,
) -> str:
    """Fill `spec.task_template`.

    Precedence: the built-in names ($prompt, $cwd, $pre_script_output) over the caller's
    `variables` over the definition's `prompt.variables` defaults. If the template never
    mentions $pre_script_output, non-empty script output is appended after a blank line so
    an `inject_output` script is never dropped silently.
    """
    values: dict[str, str] = {**spec.variables, **(variables or {})}
    values.update(prompt=prompt, cwd=str(cwd), pre_script_output=pre_script_output)
    template = Template(spec.task_template)
    text = template.safe_substitute(values)
    if pre_script_output.strip() and not mentions(template, "pre_script_output"):
        text = f"{text.rstrip()}\n\n{pre_script_output.strip()}\n"
    return text


def mentions(template: Template, name: str) -> bool:
    """Whether `name` appears as a placeholder (not inside `$$`)."""
    for match in template.pattern.finditer(template.template):
        if (match.group("named") or match.group("braced")) == name:
            return True
    return False


def placeholders(template_text: str) -> list[str]:
    """Names used in a template, in order, without repeats (for `show` and validation)."""
    template = Template(template_text)
    seen: list[str] = []
    for match in template.pattern.finditer(template.template):
        found = match.group("named") or match.group("braced")
        if found and found not in seen:
            seen.append(found)
    return seen
