"""Managing definitions on a project that already has hand-written ones (issue 12 item 5).

What these prove: a file a person wrote (YAML or a Markdown agent file), or one edited
after we wrote it, is never changed or removed without --force; create and eject never
write over anything; a refusal leaves every file byte for byte as it was; disable is
reversible per scope with the project's word winning; reset goes back to the builtin.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from specialists.base.errors import NotFound, UserError
from specialists.catalog import load_catalog
from specialists.catalog.discovery import BUILTIN_DIR
from specialists.catalog.managed import settings_path
from specialists.features.manage import agents
from specialists.fronts.cli.main import main

HAND_YAML = """\
# my own reviewer, tuned by hand
metadata:
  name: reviewer
execution:
  permission_required: READ_ONLY
prompt:
  system: Review carefully.
"""
HAND_MD = """\
---
name: scout
description: a Claude Code agent someone wrote
---
Look around.
"""


@pytest.fixture
def root() -> Path:
    root = Path(os.environ["SPECIALISTS_PROJECT_ROOT"])
    (root / "specialists").mkdir()
    (root / "specialists" / "reviewer.specialist.yaml").write_text(HAND_YAML)
    (root / ".claude" / "agents").mkdir(parents=True)
    (root / ".claude" / "agents" / "scout.md").write_text(HAND_MD)
    return root


def snapshot(root: Path) -> dict[str, bytes]:
    return {
        str(p.relative_to(root)): p.read_bytes()
        for p in root.rglob("*")
        if p.is_file() and ".git" not in p.parts and not p.name.endswith(".lock")
    }


def test_create_writes_a_loading_definition_and_records_its_hash(root):
    change = agents.create(root, "project", "helper", {"description": "helps", "model": "a/b"})
    assert change.path == root / "specialists" / "helper.specialist.yaml"
    spec = load_catalog(root).get("helper")
    assert (spec.scope, spec.model, spec.description) == ("project", "a/b", "helps")
    recorded = json.loads(settings_path("project", root).read_text())["written"]
    assert str(change.path) in recorded
    assert not [p for p in change.path.parent.iterdir() if p.name.startswith(".")]


def test_update_changes_our_file_and_refuses_hand_written_ones(root):
    agents.create(root, "project", "helper", {"description": "helps"})
    agents.update(root, "project", "helper", {"thinking": "high"})
    assert load_catalog(root).get("helper").thinking_level == "high"
    before = snapshot(root)
    with pytest.raises(UserError, match="written by hand"):
        agents.update(root, "project", "reviewer", {"model": "x/y"})
    with pytest.raises(UserError, match="Markdown agent file"):
        agents.update(root, "project", "scout", {"model": "x/y"})
    assert snapshot(root) == before
    agents.update(root, "project", "reviewer", {"model": "x/y"}, force=True)
    assert load_catalog(root).get("reviewer").model == "x/y"


def test_a_file_edited_after_we_wrote_it_is_the_person_s(root):
    change = agents.create(root, "project", "helper", {"description": "helps"})
    assert change.path is not None
    with change.path.open("a") as fh:
        fh.write("# my note\n")
    before = snapshot(root)
    for attempt in (
        lambda: agents.update(root, "project", "helper", {"model": "a/b"}),
        lambda: agents.delete(root, "project", "helper"),
    ):
        with pytest.raises(UserError, match="edited since we wrote it"):
            attempt()
    assert snapshot(root) == before
    agents.delete(root, "project", "helper", force=True)
    assert "helper" not in load_catalog(root)


def test_create_and_eject_never_write_over_a_file(root):
    before = snapshot(root)
    with pytest.raises(UserError, match="defined in project scope already"):
        agents.create(root, "project", "reviewer", {})
    with pytest.raises(UserError, match="defined in project scope already"):
        agents.eject(root, "project", "reviewer")
    # A file that fails to load still stands where the new one would go.
    broken = root / "specialists" / "planner.specialist.yaml"
    broken.write_text("metadata: [not, a, mapping\n")
    before = snapshot(root)
    with pytest.raises(UserError, match="exists already; not written over"):
        agents.eject(root, "project", "planner")
    with pytest.raises(UserError, match="exists already; not written over"):
        agents.create(root, "project", "planner", {})
    assert snapshot(root) == before
    assert not settings_path("project", root).exists()


def test_eject_copies_the_builtin_verbatim_and_reset_removes_it(root):
    change = agents.eject(root, "user", "planner")
    assert change.path is not None
    assert change.path.read_bytes() == (BUILTIN_DIR / "planner.specialist.yaml").read_bytes()
    assert load_catalog(root).get("planner").scope == "user"
    agents.reset(root, "user", "planner")
    assert load_catalog(root).get("planner").scope == "builtin"
    assert not change.path.exists()
    with pytest.raises(UserError, match="not a builtin"):
        agents.eject(root, "project", "scout")


def test_reset_refuses_a_hand_written_override_and_a_name_with_no_builtin(root):
    before = snapshot(root)
    with pytest.raises(UserError, match="written by hand"):
        agents.reset(root, "project", "reviewer")
    with pytest.raises(UserError, match="no builtin to reset to"):
        agents.reset(root, "project", "scout")
    assert snapshot(root) == before
    agents.reset(root, "project", "reviewer", force=True)
    assert load_catalog(root).get("reviewer").scope == "builtin"


def test_disable_is_reversible_per_scope_and_the_project_wins(root):
    agents.set_disabled(root, "user", "planner", True)
    with pytest.raises(NotFound, match="disabled in user scope"):
        load_catalog(root).get("planner")
    enabled = agents.set_disabled(root, "project", "planner", False)
    assert enabled.changed and not enabled.warnings
    assert load_catalog(root).get("planner").scope == "builtin"  # project's false wins
    agents.set_disabled(root, "project", "scout", True)
    cat = load_catalog(root)
    assert "scout" not in cat and cat.disabled["scout"][0] == "project"
    agents.set_disabled(root, "project", "scout", False)
    assert "scout" in load_catalog(root)
    agents.set_disabled(root, "project", "reviewer", True)
    agents.reset(root, "project", "reviewer", force=True)  # drops the disable too
    assert load_catalog(root).get("reviewer").scope == "builtin"
    with pytest.raises(NotFound, match="unknown specialist"):
        agents.set_disabled(root, "project", "nobody", True)


def test_a_damaged_settings_file_is_reported_and_never_rewritten(root):
    path = settings_path("project", root)
    path.parent.mkdir(exist_ok=True)
    path.write_text("{broken")
    cat = load_catalog(root)
    assert any("not valid JSON" in p.problem for p in cat.problems)
    with pytest.raises(UserError, match="not changed"):
        agents.set_disabled(root, "project", "planner", True)
    with pytest.raises(UserError, match="not changed"):
        agents.create(root, "project", "helper", {})
    assert path.read_text() == "{broken"
    assert not (root / "specialists" / "helper.specialist.yaml").exists()


def test_the_cli_gives_one_line_and_exit_2(root, capsys):
    assert main(["agents", "eject", "reviewer"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("error: ") and "reset it first" in err
    assert main(["agents", "create", "bad", "--permission", "NOPE"]) == 2
    assert "would not load" in capsys.readouterr().err
    assert not (root / "specialists" / "bad.specialist.yaml").exists()
    assert main(["agents", "create", "ok-one", "--system", "Be brief.", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["kind"] == "created" and out["changed"]
    assert main(["agents", "list", "--json"]) == 0
    rows = {(r["name"], r["scope"]): r for r in json.loads(capsys.readouterr().out)["agents"]}
    assert rows[("ok-one", "project")]["managed"] is True
    assert rows[("reviewer", "project")]["managed"] is False
    assert rows[("reviewer", "builtin")]["state"] == "shadowed by project"


def test_the_mcp_tool_manages_definitions_and_refuses_hand_written_files(root):
    """manage_specialist over the MCP table: the same rules, as one-line error results."""
    import jsonschema

    from specialists.fronts.mcp.handlers import ServerContext
    from specialists.fronts.mcp.table import TOOLS_BY_NAME, call_tool

    ctx = ServerContext()
    spec = TOOLS_BY_NAME["manage_specialist"]
    made = call_tool(
        ctx,
        "manage_specialist",
        {"action": "create", "name": "helper", "fields": {"system": "Help.", "model": "a/b"}},
    )
    assert not made.is_error, made.text
    jsonschema.validate(made.data, spec.output_schema)
    assert load_catalog(root).get("helper").model == "a/b"
    before = snapshot(root)
    refused = call_tool(
        ctx,
        "manage_specialist",
        {"action": "update", "name": "reviewer", "fields": {"model": "x/y"}},
    )
    assert refused.is_error and "written by hand" in refused.text
    bad = call_tool(ctx, "manage_specialist", {"action": "explode", "name": "helper"})
    assert bad.is_error and "action" in bad.text
    stray = call_tool(
        ctx, "manage_specialist", {"action": "disable", "name": "helper", "fields": {"model": "a"}}
    )
    assert stray.is_error and "unknown argument 'fields'" in stray.text
    assert snapshot(root) == before
    off = call_tool(ctx, "manage_specialist", {"action": "disable", "name": "helper"})
    assert not off.is_error and "helper" not in load_catalog(root)
