"""Spend ceilings and fan-out approval on real processes: jobs started through the CLI, their
own supervisors, the native runtime over HTTP and the real pi 1.6.0 and Claude Code 2.1.332
against the mock LLM (which reports usage)."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

from specialists.fronts.cli.main import main
from tests.integration.test_cli_pi import SPEC, sp, status
from tests.support.mock_llm import MockLLM, Reply, ToolCall, Usage, write_mockhttp_project
from tests.support.waiting import wait_until
from tests.support.workflows import journal, wait_ended, workflow_project

pytestmark = pytest.mark.integration

SPENDING = Usage(input_tokens=20, output_tokens=5)  # 25 tokens a request


def looking(command: str = "echo looked") -> Reply:
    return Reply(tool_calls=(ToolCall("bash", {"command": command}),), usage=SPENDING)


def ended(job_id: str, timeout: float = 90) -> dict[str, Any]:
    wait_until(lambda: status(job_id)["status"] in ("done", "error", "cancelled"), timeout, "end")
    return status(job_id)


@pytest.fixture
def project(mock_llm: MockLLM) -> Path:
    root = Path(os.environ["SPECIALISTS_PROJECT_ROOT"])
    os.environ["MOCK_KEY"] = "sk-test"
    # $0.02 + $0.005 a request: dollars to count
    prices = "input_price_per_mtok = 1000.0\noutput_price_per_mtok = 1000.0\n"
    return write_mockhttp_project(
        root, mock_llm.openai_base_url, SPEC.format(extra=""), config=prices
    )


def test_a_native_job_stops_before_the_request_that_would_pass_its_ceiling(
    project: Path, mock_llm: MockLLM
) -> None:
    mock_llm.set_default(looking())
    out = sp(
        "run", "tester", "--background", "--runner", "native", "--model", "mockhttp/mock-model",
        "--max-tokens", "50", "--prompt", "look around",
    )  # fmt: skip
    assert out.returncode == 0, out.stderr
    job_id = out.stdout.strip()
    st = ended(job_id)
    assert st["status"] == "error"
    assert st["error"] == f"spend ceiling reached: job {job_id}'s tree spent 50 of 50 tokens"
    assert len(mock_llm.model_requests) == 2  # the third request never left
    assert st["ceilings"][0]["spent_tokens"] == 50
    shown = sp("status", job_id).stdout
    assert f"Ceiling: job {job_id}'s tree: 50 of 50 tokens (0 tokens left)" in shown
    feed = sp("feed", job_id).stdout
    assert f"ceiling job-{job_id}: REACHED: 50 of 50 tokens" in feed


def test_dollars_count_from_configured_prices(project: Path, mock_llm: MockLLM) -> None:
    mock_llm.set_default(looking())
    job_id = sp(
        "run", "tester", "--background", "--runner", "native", "--model", "mockhttp/mock-model",
        "--max-cost", "0.06", "--prompt", "look around",
    ).stdout.strip()  # fmt: skip
    st = ended(job_id)
    assert st["status"] == "error" and len(mock_llm.model_requests) == 3  # $0.075 > $0.06
    assert st["error"] == f"spend ceiling reached: job {job_id}'s tree spent $0.0750 of $0.0600"
    assert st["cost_usd"] == pytest.approx(0.075)


def test_a_bad_spend_table_refuses_the_run_before_a_job_exists(project: Path) -> None:
    with (project / ".specialists" / "config.toml").open("a") as f:
        f.write("[spend]\nmax_cost = -3\n")
    out = sp("run", "tester", "--runner", "native", "--model", "mockhttp/mock-model", "-p", "x")
    assert out.returncode == 2
    assert "[spend] max_cost must be US dollars over 0" in out.stderr
    assert not list((project / ".specialists" / "jobs").glob("????????"))


# --- a tree: a workflow and its children under one ceiling ------------------------------------

SEQUENTIAL = """
async def main(runs, args):
    out = []
    for n in range(int(args["n"])):
        r = await runs.run(f"look-{n}", agent="nat", task=f"look {n}", check=False)
        out.append(r.status)
    return out
"""

ALL_AT_ONCE = """
async def main(runs, args):
    rs = await runs.all([{"key": f"k{n}", "agent": "nat", "task": f"t{n}"} for n in range(2)])
    return [r.output for r in rs]
"""


def _workflow(name: str, *argv: str, capsys: pytest.CaptureFixture[str]) -> str:
    assert main(["workflow", "run", name, "--detach", *argv]) == 0
    return capsys.readouterr().out.strip()


def test_a_ceiling_on_a_workflow_covers_every_child(
    mock_llm: MockLLM, capsys: pytest.CaptureFixture[str]
) -> None:
    mock_llm.set_default(
        lambda req: looking("echo child") if not req.tool_results() else Reply("ok", usage=SPENDING)
    )
    root = workflow_project({"seq.py": SEQUENTIAL})
    wf = _workflow("seq", "--arg", "n=4", "--max-tokens", "110", capsys=capsys)
    st = wait_ended(root, wf, timeout=180)
    # Child 1 and 2 spend 50 each; child 3's first request (100 < 110) goes, its second
    # does not; child 4 never starts, and the workflow itself stops at the ceiling.
    assert st.status == "error" and "spend ceiling reached" in (st.error or ""), st.error
    assert len(mock_llm.model_requests) == 5
    launched = [e["key"] for e in journal(root, wf) if e.get("e") == "launch"]
    assert "look-3" not in launched
    children = [e["job"] for e in journal(root, wf) if e.get("e") == "launch"]
    third = status(children[2])
    assert third["status"] == "error"
    assert third["error"] == f"spend ceiling reached: job {wf}'s tree spent 125 of 110 tokens"
    view = json.loads(sp("workflow", "show", wf, "--json").stdout)
    assert view["spend"]["actual"]["tokens"] == 125
    assert view["spend"]["ceilings"][0]["of"] == f"job-{wf}"


# --- approval before a costly fan-out ----------------------------------------------------------


def _history(root: Path, mock_llm: MockLLM) -> None:
    """One finished `nat` job of 25 tokens: what each `nat` child is estimated at."""
    mock_llm.enqueue(Reply("history", usage=SPENDING))
    out = sp("run", "nat", "--prompt", "warm up")
    assert out.returncode == 0, out.stderr


def _approve_over(root: Path, **limits: str) -> None:
    lines = [f"{k} = {v}" for k, v in limits.items()]
    (root / ".specialists" / "config.toml").write_text("[spend]\n" + "\n".join(lines) + "\n")


def _open_ask(timeout: float = 60) -> dict[str, Any]:
    found: list[dict[str, Any]] = []

    def asked() -> bool:
        found[:] = json.loads(sp("asks", "--json").stdout)["asks"]
        return bool(found)

    wait_until(asked, timeout, "an ask")
    return found[0]


def test_a_costly_fan_out_waits_for_the_owners_yes(
    mock_llm: MockLLM, capsys: pytest.CaptureFixture[str]
) -> None:
    root = workflow_project({"both.py": ALL_AT_ONCE})
    _history(root, mock_llm)
    _approve_over(root, approve_over_tokens=30)
    mock_llm.set_default(Reply("child ok", usage=SPENDING))
    wf = _workflow("both", capsys=capsys)
    ask = _open_ask()
    assert ask["job_id"] == wf and "2 children in all so far, estimated at" in ask["message"]
    assert "50 tokens" in ask["message"] and "1 x nat" not in ask["message"]
    assert len(mock_llm.model_requests) == 1  # nothing launched while it waits
    assert sp("reply", ask["id"], "yes").returncode == 0
    st = wait_ended(root, wf, timeout=120)
    assert st.status == "done", st.error
    view = json.loads(sp("workflow", "show", wf, "--json").stdout)
    spend = view["spend"]
    assert spend["estimate"] == {"children": 2, "usd": 0.0, "tokens": 50}
    assert spend["actual"]["tokens"] == 50 and spend["actual"]["jobs"] == 3
    (approval,) = spend["approvals"]
    assert approval["outcome"] == "approved" and approval["tokens"] == 100
    shown = sp("workflow", "show", wf).stdout
    assert "estimated: $0.00, 50 tokens (2 children) · spent: $0.00, 50 tokens (3 jobs)" in shown
    assert "approval: approved up to $0.00, 100 tokens by cli-" in shown


def test_a_refused_fan_out_fails_with_the_owners_words(
    mock_llm: MockLLM, capsys: pytest.CaptureFixture[str]
) -> None:
    root = workflow_project({"both.py": ALL_AT_ONCE})
    _history(root, mock_llm)
    _approve_over(root, approve_over_tokens=30)
    wf = _workflow("both", capsys=capsys)
    ask = _open_ask()
    assert sp("reply", ask["id"], "no, too costly for a probe").returncode == 0
    st = wait_ended(root, wf, timeout=120)
    assert st.status == "error"
    assert "fan-out not approved" in (st.error or "")
    assert "the owner answered: no, too costly for a probe" in (st.error or "")
    assert len(mock_llm.model_requests) == 1  # only the history job's


def test_a_pre_approval_or_a_ceiling_covers_a_fan_out(
    mock_llm: MockLLM, capsys: pytest.CaptureFixture[str]
) -> None:
    root = workflow_project({"both.py": ALL_AT_ONCE})
    with (root / ".specialists" / "config.toml").open("a") as f:  # $0.025 a request
        f.write(
            "[providers.openai]\ninput_price_per_mtok = 1000.0\noutput_price_per_mtok = 1000.0\n"
        )
    _history(root, mock_llm)
    with (root / ".specialists" / "config.toml").open("a") as f:
        f.write("[spend]\napprove_over_cost = 0.03\n")
    mock_llm.set_default(Reply("child ok", usage=SPENDING))
    wf = _workflow("both", "--approve-cost", "1", capsys=capsys)
    assert wait_ended(root, wf, timeout=120).status == "done"
    wf2 = _workflow("both", "--max-cost", "0.5", capsys=capsys)  # its ceiling bounds it
    assert wait_ended(root, wf2, timeout=120).status == "done"
    assert json.loads(sp("asks", "--all", "--json").stdout)["asks"] == []
    first = [e for e in journal(root, wf) if e.get("e") in ("estimate", "approval")]
    assert first[0]["usd"] == pytest.approx(0.05) and first[1]["outcome"] == "approved"
    second = [e for e in journal(root, wf2) if e.get("e") == "approval"]
    assert second[0]["outcome"] == f"covered by the ceiling of job {wf2}'s tree"


# --- the agent CLIs: stopped at their ceiling ---------------------------------------------------


def test_a_pi_job_stops_at_the_end_of_the_turn_that_passed_its_ceiling(
    project: Path, mock_llm: MockLLM, pi_bin: Path
) -> None:
    mock_llm.set_default(looking())
    job_id = sp(
        "run", "tester", "--background", "--max-tokens", "60", "--prompt", "look around"
    ).stdout.strip()
    st = ended(job_id)
    assert st["status"] == "error"
    assert st["error"].startswith(f"spend ceiling reached: job {job_id}'s tree spent ")
    assert st["ceilings"][0]["spent_tokens"] >= 60
    assert len(mock_llm.model_requests) <= 4  # 3 passed the ceiling; at most one more raced it


def test_claude_code_stops_at_its_own_budget_option(
    project: Path, mock_llm: MockLLM, claude_bin: Path
) -> None:
    mock_llm.set_default(looking())
    job_id = sp(
        "run", "tester", "--background", "--runner", "claude", "--model", "claude-sonnet-4-5",
        "--max-cost", "0.001", "--prompt", "look around",
    ).stdout.strip()  # fmt: skip
    st = ended(job_id)
    # Claude Code prices each mock request at $0.000135 (Sonnet's list price for 20 in and 5
    # out) and stops itself once the 8th passes its --max-budget-usd of $0.001.
    assert st["status"] == "error"
    assert st["error"] == f"spend ceiling reached: job {job_id}'s tree spent $0.0011 of $0.0010"
    assert len(mock_llm.model_requests) == 8 and st["cost_usd"] == pytest.approx(0.00108)
