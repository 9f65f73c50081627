"""`mandatory_rules` of a definition (the Node original's, 3.17): rules the agent must keep,
put into its system prompt as one `## MANDATORY_RULES` block.

    mandatory_rules:
      template_sets: [git-safe]          # rule sets by name (files, below)
      disable_default_globals: false     # accepted; we add no global rules to disable
      inline_rules:
        - {id: no-force-push, level: error, text: "Never force-push."}

A set `<name>` is the first of `<project>/.specialists/mandatory-rules/<name>.md` and
`<project>/config/mandatory-rules/<name>.md` (the Node original's places): a file whose
frontmatter holds `rules:` (each `{id, level, text, when}`), else whose whole body is one
rule. A set that is not there is a warning on the definition, and skipped, as the original
does. The block reads as the original's: `### <set>` then `- [<level>] <text>` per rule,
the definition's own rules under `### specialist-inline-rules` with their ids. `when` is
kept in the file but not judged: it is the original's hook language, not ours (said once,
as a warning).
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from specialists.base.reader import Fields, Invalid, describe
from specialists.base.reader.textfile import read_text_file
from specialists.catalog.files import parse_yaml

SET_NAME = re.compile(r"[a-z][a-z0-9-]{0,63}")
LEVELS = ("error", "warn", "info", "required")
MAX_RULES = 200
MAX_RULE_CHARS = 4000
SET_DIRS = (".specialists/mandatory-rules", "config/mandatory-rules")


def mandatory_rules_block(
    fields: Fields | None, project_root: Path | None, warnings: list[str]
) -> str:
    """The block for the definition's `mandatory_rules` section ('' when it has none)."""
    if fields is None:
        return ""
    sets = fields.text_list("template_sets", max_chars=64)
    fields.flag("disable_default_globals")  # nothing to disable: we add no global rules
    inline = _rules(fields.raw("inline_rules"), fields.field("inline_rules"), warnings)
    fields.finish()
    sections = []
    for name in dict.fromkeys(sets):
        if not SET_NAME.fullmatch(name):
            raise Invalid.wrong(fields.field("template_sets"), "kebab-case set names", repr(name))
        found = _read_set(name, project_root, warnings)
        if found:
            sections.append(f"### {name}\n" + "\n".join(f"- [{lv}] {tx}" for _, lv, tx in found))
    if inline:
        lines = [
            f"- [{level}] {text} (id: {rule_id or f'inline-{n}'})"
            for n, (rule_id, level, text) in enumerate(inline, 1)
        ]
        sections.append("### specialist-inline-rules\n" + "\n".join(lines))
    return "## MANDATORY_RULES\n" + "\n\n".join(sections) if sections else ""


def _rules(value: object, field: str, warnings: list[str]) -> list[tuple[str, str, str]]:
    """(id, level, text) per rule; the first bad one is refused with its field."""
    if value is None:
        return []
    if not isinstance(value, list):
        raise Invalid.wrong(field, "a list of rules", describe(value))
    if len(value) > MAX_RULES:
        raise Invalid.wrong(field, f"at most {MAX_RULES} rules", f"{len(value)}")
    out = []
    for i, item in enumerate(value):
        rule = Fields(item, f"{field}[{i}]", warnings)
        text = rule.text("text", max_chars=MAX_RULE_CHARS)
        if not text or not text.strip():
            raise Invalid(rule.field("text"), "a rule needs its text")
        rule_id = rule.text("id", form="line", max_chars=128) or ""
        level = rule.choice("level", LEVELS) or "error"
        if rule.has("when"):
            rule.text("when", max_chars=MAX_RULE_CHARS)
            warnings.append(f"{rule.field('when')}: not judged here; the rule always applies")
        rule.finish()
        out.append((rule_id, level, " ".join(text.split())))
    return out


def _read_set(
    name: str, project_root: Path | None, warnings: list[str]
) -> list[tuple[str, str, str]]:
    where = f"mandatory_rules.template_sets: {name!r}"
    for folder in SET_DIRS if project_root is not None else ():
        assert project_root is not None
        path = project_root / folder / f"{name}.md"
        try:
            text = read_text_file(path)
        except FileNotFoundError:
            continue
        except Invalid as exc:
            warnings.append(f"{where}: {path} {exc.problem}; skipped")
            return []
        try:
            rules = _set_rules(text, str(path), warnings)
        except Invalid as exc:
            warnings.append(f"{where}: {path}: {exc}; skipped")
            return []
        if not rules:
            warnings.append(f"{where}: {path} holds no rule; skipped")
        return rules
    places = " or ".join(f"{d}/{name}.md" for d in SET_DIRS)
    warnings.append(f"{where} not found ({places}); skipped")
    return []


def _set_rules(text: str, where: str, warnings: list[str]) -> list[tuple[str, str, str]]:
    front, body = _split(text)
    data: Any = parse_yaml(front, what="frontmatter YAML") if front is not None else None
    if isinstance(data, dict) and data.get("rules") is not None:
        return _rules(data["rules"], f"{where} rules", warnings)
    body = " ".join(body.split())
    return [("", "required", body[:MAX_RULE_CHARS])] if body else []


def _split(text: str) -> tuple[str | None, str]:
    lines = text.splitlines(keepends=True)
    if not lines or lines[0].strip() != "---":
        return None, text
    for i in range(1, len(lines)):
        if lines[i].strip() == "---":
            return "".join(lines[1:i]), "".join(lines[i + 1 :])
    return None, text
