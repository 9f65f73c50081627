"""Per-child output files end to end (seed 004 "File-only output mode"): a declarative
workflow's children write their answers to `reports/<key>.md` in the project; a child whose
output directory is a symlink out of the project fails with the reason and nothing is
written outside. Real jobs on the command runner."""

from __future__ import annotations

from pathlib import Path

import pytest

from specialists.fronts.cli.main import main
from tests.support.workflows import keys, result, wait_ended, workflow_project

pytestmark = pytest.mark.integration

DOC = """\
steps:
  - all:
      items: [alpha, beta]
      child: {key: "{item}", agent: echo, task: "report {item}", output: "reports/{item}.md"}
"""
ESCAPE = "steps:\n  - run: {key: out, agent: echo, task: leak, output: linked/leak.md}\n"


def test_children_write_their_answers_inside_the_project(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    project = workflow_project({"reports.yaml": DOC, "escape.yaml": ESCAPE})
    assert main(["workflow", "run", "reports", "--detach"]) == 0
    wf = capsys.readouterr().out.strip()
    assert wait_ended(project, wf).status == "done"
    for item in ("alpha", "beta"):
        assert (project / "reports" / f"{item}.md").read_text() == f"report {item}"
    assert keys(project, wf)["alpha"].output_file == str(project / "reports" / "alpha.md")
    assert result(project, wf)["alpha"]["output_file"] == str(project / "reports" / "alpha.md")
    capsys.readouterr()
    assert main(["workflow", "show", wf]) == 0
    assert f"output: {project / 'reports' / 'beta.md'}" in capsys.readouterr().out

    outside = tmp_path / "outside"
    outside.mkdir()
    (project / "linked").symlink_to(outside, target_is_directory=True)
    assert main(["workflow", "run", "escape", "--detach"]) == 0
    wf = capsys.readouterr().out.strip()
    status = wait_ended(project, wf)
    assert status.status == "error"
    assert "linked is a symbolic link or not a directory" in (keys(project, wf)["out"].error or "")
    assert list(outside.iterdir()) == []
