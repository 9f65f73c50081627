"""Gates, acceptance and worktree handoffs inside workflows (the gates room, merged, wired
into the runtime): real children, real git, real gate commands."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from specialists.cli.main import main
from specialists.sandbox.handoff_manifest import manifest_path, read_manifest
from tests.support.workflows import journal, store, wait_ended, workflow_project

pytestmark = pytest.mark.integration


def _run(capsys: pytest.CaptureFixture[str], *argv: str) -> str:
    assert main(["workflow", "run", *argv, "--detach"]) == 0
    return capsys.readouterr().out.strip()


def _end(project: Path, wf: str, key: str) -> dict:
    return [e for e in journal(project, wf) if e.get("e") == "end" and e["key"] == key][-1]


def _commit(project: Path) -> None:
    subprocess.run(["git", "add", "-A"], cwd=project, check=True, capture_output=True)
    subprocess.run(["git", "commit", "-qm", "setup"], cwd=project, check=True, capture_output=True)


def test_a_failed_gate_fails_the_child_then_it_passes_and_a_rerun_hits_the_memo(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The gate runs on the host after the child; a failure fails the child with the
    command's tail as the reason; once it passes, a later run on the same workspace state
    takes the pass from the memo instead of running it."""
    flag = tmp_path / "green"
    gate = f"test -e {flag} && echo gate-ok || (echo gate-says-no; exit 3)"
    doc = f'steps:\n  - run: {{key: build, agent: echo, task: build it, gate: "{gate}"}}\n'
    project = workflow_project({"gated.yaml": doc})
    (project / ".gitignore").write_text(".specialists/\n")
    _commit(project)
    first = _run(capsys, "gated")
    status = wait_ended(project, first)
    assert status.status == "error" and "gate-says-no" in (status.error or "")
    end = _end(project, first, "build")
    assert end["status"] == "error" and end["acceptance"]["acceptance"]["kind"] == "rejected"
    flag.write_text("")
    assert main(["workflow", "resume", first, "--detach"]) == 0
    second = capsys.readouterr().out.strip()
    assert wait_ended(project, second).status == "done"
    gates = _end(project, second, "build")["acceptance"]["acceptance"]["gates"]
    assert gates[0]["outcome"] == "passed" and gates[0]["memo"] == "miss"
    third = _run(capsys, "gated")
    assert wait_ended(project, third).status == "done"
    gates = _end(project, third, "build")["acceptance"]["acceptance"]["gates"]
    assert gates[0]["memo"] == "hit"


WRITER = "cat >/dev/null; echo made-by-child > child.txt; echo wrote"


def test_a_worktree_child_works_in_its_own_worktree_and_its_patch_is_captured(
    capsys: pytest.CaptureFixture[str],
) -> None:
    doc = "steps:\n  - run: {key: edit, agent: writer, task: write a file, worktree: true}\n"
    project = workflow_project({"wt.yaml": doc}, writer=WRITER)
    (project / ".gitignore").write_text(".specialists/\n")
    _commit(project)
    wf = _run(capsys, "wt")
    assert wait_ended(project, wf).status == "done"
    assert not (project / "child.txt").exists()  # the root working copy is untouched
    handoff = _end(project, wf, "edit")["acceptance"]["handoff"]
    assert handoff["state"] == "captured" and "child.txt" in Path(handoff["patch"]).read_text()
    manifest = read_manifest(manifest_path(project, wf))
    (child,) = manifest.children
    assert child.key == "edit" and child.state == "captured"
    record = store(project).read_record(_end(project, wf, "edit")["job"])
    assert record.sandbox == child.sandbox and record.cwd.startswith(child.worktree)


def test_worktree_children_refuse_a_dirty_tree_with_one_line(
    capsys: pytest.CaptureFixture[str],
) -> None:
    doc = "steps:\n  - run: {key: edit, agent: writer, task: write, worktree: true}\n"
    project = workflow_project({"wt.yaml": doc}, writer=WRITER)
    (project / ".gitignore").write_text(".specialists/\n")
    _commit(project)
    (project / "stray.txt").write_text("uncommitted")
    assert main(["workflow", "run", "wt"]) == 1
    err = capsys.readouterr().err
    assert "worktree children need a clean working copy" in err and "stray.txt" in err


def test_hostile_values_reach_a_gate_as_data_never_as_code(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Arguments and items holding `$(...)`, backticks and quotes reach the gate as its
    environment (it writes them to a file, byte for byte) and no command in them runs
    (issue 21 item 2)."""
    pwned = tmp_path / "pwned"
    hostile = [
        f"$(touch {pwned})",
        f"`touch {pwned}`",
        f"'; touch {pwned}; '",
        f'"; touch {pwned}"',
    ]
    gate = 'printf %s "$SPECIALISTS_ARG_T|$SPECIALISTS_ITEM" > "../seen-$SPECIALISTS_INDEX"'
    doc = (
        "steps:\n  - all:\n      items: '{args.list}'\n      child: {key: 'c-{index}', "
        f"agent: echo, task: 'say {{item}}', gate: '{gate}'}}\n"
    )
    project = workflow_project({"hostile.yaml": doc})
    args = json.dumps({"t": hostile[0], "list": hostile})
    wf = _run(capsys, "hostile", "--args-json", args)
    assert wait_ended(project, wf).status == "done"
    for i, value in enumerate(hostile):
        assert (project.parent / f"seen-{i}").read_text() == f"{hostile[0]}|{value}"
    assert not pwned.exists()
