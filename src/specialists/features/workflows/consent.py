"""Gates in a model's workflow: run only with the project's consent.

A gate (and each `acceptance.verify` command) runs `/bin/sh -c` on the host with the user's
rights, so a document a model submits (the MCP `workflow` tool, a workflow the MCP
`schedule` tool starts) is host code wherever it names one. Such a document may name only
the commands the user's or the project's config.toml lists, exactly as written:

    [workflows]
    gates = ["pytest -q", "make check"]

Anything else is refused before any child runs, with the command and where to allow it. A
person running `specialists workflow run` needs no list: their document is theirs.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from specialists.base.errors import ConfigError, UserError

CONFIG_TABLE = "workflows"
CONFIG_KEY = "gates"


def allowed_gates(raw_config: Mapping[str, Any]) -> frozenset[str]:
    """config.toml's `[workflows] gates`, checked: a list of command strings."""
    table = raw_config.get(CONFIG_TABLE, {})
    if not isinstance(table, Mapping):
        raise ConfigError(f"config [{CONFIG_TABLE}] must be a table")
    listed = table.get(CONFIG_KEY, [])
    if not isinstance(listed, list) or not all(isinstance(c, str) and c.strip() for c in listed):
        raise ConfigError(
            f"config {CONFIG_TABLE}.{CONFIG_KEY} must be a list of commands",
            hint='e.g. [workflows] gates = ["pytest -q"]',
        )
    return frozenset(c.strip() for c in listed)


def project_gates(project_root: Path) -> frozenset[str]:
    from specialists.catalog.config import load_config

    return allowed_gates(load_config(project_root).raw)


def gate_commands(doc: Mapping[str, Any]) -> list[str]:
    """Every gate and acceptance.verify command of a declarative document (checked by
    `check_document` first, so its shape is known)."""
    from specialists.features.gates.acceptance import policy_for
    from specialists.features.workflows.declarative import child_templates

    commands: list[str] = []
    for _n, template in child_templates(doc):
        gate, acceptance = template.get("gate"), template.get("acceptance")
        if gate is None and acceptance is None:
            continue
        policy = policy_for(gate=gate, acceptance=acceptance)
        commands += [spec.command for spec in policy.verify]
    return commands


def check_consent(doc: Mapping[str, Any], allowed: frozenset[str], *, via: str) -> None:
    """Refuse a model's document that names a gate command the config does not list."""
    for command in gate_commands(doc):
        if command.strip() not in allowed:
            shown = " ".join(command.split())[:120]
            raise UserError(
                f"the {via} does not run gate `{shown}`: a gate is a host command, and a "
                "model's workflow may run only the gates config.toml allows",
                hint=f'add it to [{CONFIG_TABLE}] {CONFIG_KEY} = ["..."] in '
                ".specialists/config.toml, or ask the user to run the workflow themselves",
            )


def model_source(project_root: Path, ref: str, *, via: str) -> Any:
    """The workflow a model named, as the engine will run it: a declarative file of the
    project (never Python, never a path outside it), read now and pinned, checked whole,
    its gates allowed by config.toml."""
    from specialists.features.workflows.declarative import check_document
    from specialists.features.workflows.source import Source, find_workflow, load_document

    source = find_workflow(project_root, ref, cwd=project_root, any_path=False)
    if source.kind == "python":
        raise UserError(
            f"workflow {source.name!r} is Python, which the {via} does not start: a Python "
            "workflow is code run on the host",
            hint=f"ask the user to run `specialists workflow run {source.name}` (or `specialists "
            f"schedule create --workflow {source.name}`)",
        )
    document = load_document(source)
    check_document(document)
    check_consent(document, project_gates(project_root), via=via)
    return Source(source.kind, source.name, source.path, document)
