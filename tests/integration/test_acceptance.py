"""Acceptance levels (issue 11 item 3): each level on a real git working copy, the report
validated (malformed reports rejected, one line each), checked against gate evidence and the
paths that really changed, and `verified` running its commands as memoized gates."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from specialists.features.gates.acceptance import (
    AcceptancePolicy,
    judge,
    parse_acceptance,
    policy_for,
    report_instructions,
)
from specialists.features.gates.report import extract_report
from specialists.features.gates.spec import GateError, GateSpec
from tests.integration.test_gates import new_repo

pytestmark = pytest.mark.integration


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    return new_repo(tmp_path / "repo", {".gitignore": ".specialists/\n", "a.py": "x = 1\n"})


def job(repo: Path, name: str = "j") -> Path:
    path = repo / ".specialists" / "jobs" / name
    path.mkdir(parents=True, exist_ok=True)
    return path


def answer(**report: object) -> str:
    body = {"status": "done", "summary": "changed a.py", **report}
    return f"All done.\n\n```acceptance\n{json.dumps(body)}\n```\n"


def decide(policy: AcceptancePolicy, repo: Path, text: str | None, **kw: object):
    return judge(policy, answer=text, cwd=repo, project=repo, job_dir=job(repo), **kw)  # type: ignore[arg-type]


def test_none_accepts_without_looking(repo: Path):
    policy = parse_acceptance({"level": "none", "reason": "a lookup"})
    outcome = decide(policy, repo, "```acceptance\nnot json\n```")
    assert outcome.accepted and outcome.reason == "a lookup" and outcome.level == "none"


def test_attested_needs_a_done_report(repo: Path):
    policy = parse_acceptance("attested")
    assert policy.wants_report and report_instructions(policy)
    assert decide(policy, repo, answer()).accepted
    missing = decide(policy, repo, "I did it, trust me")
    assert not missing.accepted and "no acceptance report" in missing.reason
    blocked = decide(policy, repo, answer(status="blocked", summary="no access"))
    assert not blocked.accepted and blocked.reason == "the child reports blocked: no access"


@pytest.mark.parametrize(
    ("text", "why"),
    [
        ("```acceptance\n{not json\n```", "not valid JSON"),
        ("```acceptance\n[1, 2]\n```", "not a JSON object"),
        (answer(status="finished"), "status must be done, partial or blocked"),
        (answer(summary=""), "needs a summary"),
        (answer(extra=1), "unknown field 'extra'"),
        (answer(changed_files="a.py"), "changed_files must be a list"),
        (answer(changed_files=[""]), "changed_files holds"),
        (answer(checks=[{"command": "pytest"}]), "each check"),
        (answer(checks=[{"command": "pytest", "exit_code": "0"}]), "each check"),
        ("```acceptance\n" + "[" * 100_000 + "\n```", "longer than"),
        ("```acceptance\n" + "[" * 20_000 + "]" * 20_000 + "\n```", "nested too deeply"),
    ],
)
def test_malformed_reports_are_rejected_in_one_line(repo: Path, text: str, why: str):
    for level in ("attested", "checked"):
        outcome = decide(parse_acceptance(level), repo, text)
        assert not outcome.accepted and why in outcome.reason, (level, outcome.reason)
        assert outcome.reason.startswith("malformed report: ") and "\n" not in outcome.reason


def test_a_structured_answer_carries_its_report_in_a_member():
    text = json.dumps({"result": 42, "acceptance": {"status": "done", "summary": "s"}})
    report, problem = extract_report(text)
    assert problem is None and report is not None and report.summary == "s"
    assert extract_report('{"result": 42}') == (None, None)
    assert extract_report("plain words") == (None, None)


def test_checked_compares_claims_with_the_evidence_and_the_changes(repo: Path):
    """A claimed exit code the evidence contradicts rejects, so does a file claimed but not
    changed; a claim without evidence and an unreported change are warnings."""
    policy = parse_acceptance("checked")
    (repo / "a.py").write_text("x = 2\n")
    verify = judge(
        AcceptancePolicy("verified", (GateSpec("exit 1"),), report=False),
        answer=None, cwd=repo, project=repo, job_dir=job(repo),
    )  # fmt: skip
    assert not verify.accepted  # evidence now says `exit 1` exited 1
    lie = decide(policy, repo, answer(checks=[{"command": "exit  1", "exit_code": 0}]))
    assert not lie.accepted and "the gate evidence says exit 1" in lie.reason
    honest = decide(
        policy, repo, answer(checks=[{"command": "exit 1", "exit_code": 1}, {"command": "make",
        "exit_code": 0}], changed_files=["a.py"]), changed_files=("a.py", "b.py"),
    )  # fmt: skip
    assert honest.accepted, honest.reason
    assert any("unverified claim: `make`" in w for w in honest.warnings)
    assert any("changed but not reported: b.py" in w for w in honest.warnings)
    phantom = decide(policy, repo, answer(changed_files=["./c.py"]), changed_files=("a.py",))
    assert not phantom.accepted and "claims changes to c.py, which did not change" in phantom.reason
    unknown = decide(policy, repo, answer(changed_files=["a.py"]))
    assert unknown.accepted and any("changed_files not checked" in w for w in unknown.warnings)


def test_verified_runs_its_commands_as_gates_and_memoizes_them(repo: Path, tmp_path: Path):
    counter = tmp_path / "count"
    policy = parse_acceptance(
        {"level": "verified", "verify": [f"echo >> {counter}; grep -q 2 a.py", "true"]}
    )
    outcome = decide(policy, repo, answer(changed_files=["a.py"]), changed_files=("a.py",))
    assert not outcome.accepted and "gate `echo" in outcome.reason and "exit 1" in outcome.reason
    assert len(outcome.gates) == 1  # the first failure decides
    (repo / "a.py").write_text("x = 2\n")
    passed = decide(policy, repo, answer(changed_files=["a.py"]), changed_files=("a.py",))
    assert passed.accepted and passed.level == "verified" and len(passed.gates) == 2
    assert passed.reason == "2 verify commands passed; report checked"
    again = decide(policy, repo, answer(changed_files=["a.py"]), changed_files=("a.py",))
    assert again.accepted and "(2 from the memo)" in again.reason
    assert len(counter.read_text().splitlines()) == 2
    evidence = sorted(p.name for p in (job(repo) / "evidence").iterdir())
    assert evidence == ["verify-1.json", "verify-2.json"]
    recorded = again.to_dict()
    assert recorded["kind"] == "accepted" and recorded["gates"][0]["memo"] == "hit"
    json.dumps(recorded)  # the runtime can store it as it is


def test_a_gate_is_verified_without_a_report_and_auto_picks_from_what_is_set(repo: Path):
    gate = policy_for(gate="true")
    assert gate.effective == "verified" and not gate.wants_report
    outcome = decide(gate, repo, "no report here")
    assert outcome.accepted and outcome.gates[0].evidence == job(repo) / "evidence" / "gate.json"
    malformed = decide(gate, repo, "```acceptance\n{}\n```")
    assert not malformed.accepted  # a report given is validated even when not required
    assert policy_for().effective == "none"
    assert parse_acceptance({"verify": "true"}).effective == "verified"
    assert parse_acceptance({"report": True}).effective == "checked"


@pytest.mark.parametrize(
    ("gate", "acceptance", "message"),
    [
        ("true", "checked", "gate cannot be combined with acceptance"),
        (None, "strict", "level 'strict' is unknown"),
        (None, "verified", "verified needs verify commands"),
        (None, {"level": "checked", "verify": ["true"]}, "runs no verify commands"),
        (None, {"level": "attested", "report": False}, "cannot be off"),
        (None, {"level": "auto", "verify": [""]}, r"acceptance.verify\[0\] needs"),
        (None, {"levle": "auto"}, "unknown field 'levle'"),
        (None, 3, "must be a level"),
    ],
)
def test_bad_acceptance_options_are_one_clear_error(gate: object, acceptance: object, message: str):
    with pytest.raises(GateError, match=message):
        policy_for(gate=gate, acceptance=acceptance)
