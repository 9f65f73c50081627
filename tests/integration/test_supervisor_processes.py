"""The tests of tests/unit/test_supervisor.py that start processes (git, a runner, a
supervisor): the integration tier, as the unit tier starts none (tests/conftest.py)."""

from __future__ import annotations

from specialists.runners.base import (
    RunFinished,
)
from tests.support.supervising import Harness
from tests.unit.test_supervisor import h  # noqa: F401 - fixtures


def test_pre_script_output_is_injected_and_failure_not_fatal(h: Harness) -> None:
    runner = h.runner([RunFinished(text="ok")])
    status = h.run(
        runner,
        task="context: \u27eapre_script_output\u27eb",
        pre_scripts=[
            {"path": "echo from-script", "phase": "pre", "inject_output": True},
            {"path": "exit 3", "phase": "pre", "inject_output": False},
        ],
        post_scripts=[{"path": "touch post-ran", "phase": "post", "inject_output": False}],
    )
    assert status.status == "done"
    assert runner.spec is not None and runner.spec.prompt == "context: from-script"
    scripts = [e for e in h.events() if e["event"] == "script"]
    assert [s["exit_code"] for s in scripts] == [0, 3, 0]
    assert (h.tmp_path / "post-ran").exists()
