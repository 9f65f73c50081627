"""Acceptance levels (seed 004): whether a child's work is accepted, and why.

- `none`: nothing is checked; accepted (the policy's `reason` says why that is fine).
- `attested`: the child's structured acceptance report (gates/report.py) is required, must be
  well formed and say `done`. A malformed report is rejected, never guessed at.
- `checked`: attested, and the report is checked against the evidence there is: each claimed
  check against the gate evidence of the job (a claim the evidence contradicts rejects; one
  without evidence is a warning), each claimed changed file against the paths that really
  changed (a file claimed but unchanged rejects; a change not claimed is a warning).
- `verified`: the verify commands run as gates (memoized, with evidence) and must all pass;
  a report, when given or required, is then checked as above, with their evidence too.
  `gate: "<cmd>"` is verified with that one command and no report required.
- `auto`: verified when verify commands are configured, else checked when a report is
  required, else none.
A report is validated whenever the answer holds one: a malformed report is rejected at every
level but none.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal, assert_never

from specialists.features.gates.evidence import read_evidence
from specialists.features.gates.report import INSTRUCTIONS, AcceptanceReport, extract_report
from specialists.features.gates.run import GateResult, run_gate
from specialists.features.gates.spec import GateError, GateSpec, parse_gate

Level = Literal["auto", "none", "attested", "checked", "verified"]
Applied = Literal["none", "attested", "checked", "verified"]  # what `auto` resolves to
LEVELS: tuple[Level, ...] = ("auto", "none", "attested", "checked", "verified")
MAX_VERIFY = 16
_FIELDS = {"level", "verify", "reason", "report"}


@dataclass(frozen=True)
class AcceptancePolicy:
    level: Level = "auto"
    verify: tuple[GateSpec, ...] = ()
    reason: str | None = None  # why this level (a `none` says why nothing is checked)
    report: bool | None = None  # a report required; None: as the level says

    @property
    def effective(self) -> Applied:
        """The level `auto` picks, or the level itself."""
        if self.level != "auto":
            return self.level
        if self.verify:
            return "verified"
        return "checked" if self.report else "none"

    @property
    def wants_report(self) -> bool:
        """The child must end with an acceptance report (tell it: `report_instructions`)."""
        if self.report is not None:
            return self.report
        return self.effective in ("attested", "checked", "verified")

    def to_dict(self) -> dict[str, Any]:
        return {
            "level": self.level,
            "verify": [g.to_dict() for g in self.verify],
            "reason": self.reason,
            "report": self.report,
        }


@dataclass(frozen=True)
class AcceptanceOutcome:
    """What the runtime records for a child: accepted or rejected, at which level, why."""

    kind: Literal["accepted", "rejected"]
    level: Applied  # the level applied (what `auto` resolved to)
    requested: Level
    reason: str
    report: AcceptanceReport | None = None
    gates: tuple[GateResult, ...] = ()
    warnings: tuple[str, ...] = field(default=())

    @property
    def accepted(self) -> bool:
        return self.kind == "accepted"

    def to_dict(self) -> dict[str, Any]:
        return {
            "kind": self.kind,
            "level": self.level,
            "requested": self.requested,
            "reason": self.reason,
            "report": None if self.report is None else self.report.to_dict(),
            "gates": [
                {
                    "command": g.command,
                    "outcome": g.outcome,
                    "exit_code": g.exit_code,
                    "memo": g.memo,
                    "evidence": None if g.evidence is None else str(g.evidence),
                }
                for g in self.gates
            ],
            "warnings": list(self.warnings),
        }


def parse_acceptance(value: object, *, where: str = "acceptance") -> AcceptancePolicy:
    """A policy from its option: a level name, or {level, verify?, reason?, report?}."""
    if isinstance(value, str):
        return _checked(AcceptancePolicy(_level(value, where)), where)
    if not isinstance(value, Mapping):
        raise GateError(f"{where} must be a level ({', '.join(LEVELS)}) or an object")
    unknown = sorted(set(value) - _FIELDS)
    if unknown:
        raise GateError(
            f"{where} has unknown field {str(unknown[0])[:60]!r}",
            hint="use level, verify, reason, report",
        )
    verify = value.get("verify", [])
    if isinstance(verify, str):
        verify = [verify]
    if not isinstance(verify, list) or len(verify) > MAX_VERIFY:
        raise GateError(f"{where}.verify must be a list of at most {MAX_VERIFY} commands")
    reason = value.get("reason")
    if reason is not None and (not isinstance(reason, str) or len(reason) > 2000):
        raise GateError(f"{where}.reason must be text (up to 2000 characters)")
    report = value.get("report")
    if report is not None and type(report) is not bool:
        raise GateError(f"{where}.report must be true or false")
    policy = AcceptancePolicy(
        _level(value.get("level", "auto"), where),
        tuple(parse_gate(v, where=f"{where}.verify[{i}]") for i, v in enumerate(verify)),
        reason,
        report,
    )
    return _checked(policy, where)


def policy_for(*, gate: object = None, acceptance: object = None) -> AcceptancePolicy:
    """A child's policy from its `gate` and `acceptance` options (at most one of them)."""
    if gate is not None and acceptance is not None:
        raise GateError(
            "gate cannot be combined with acceptance",
            hint="use acceptance.verify for several commands or custom criteria",
        )
    if gate is not None:
        return AcceptancePolicy("verified", (parse_gate(gate),), report=False)
    if acceptance is not None:
        return parse_acceptance(acceptance)
    return AcceptancePolicy()


def report_instructions(policy: AcceptancePolicy) -> str | None:
    """Text to append to the child's task when its policy wants a report."""
    return INSTRUCTIONS if policy.wants_report else None


def judge(
    policy: AcceptancePolicy,
    *,
    answer: str | None,
    cwd: Path,
    project: Path,
    job_dir: Path | None,
    changed_files: tuple[str, ...] | None = None,
    environ: Mapping[str, str] | None = None,
    clock: Callable[[], float] | None = None,
) -> AcceptanceOutcome:
    """Apply `policy` to a finished child: its final `answer`, its working tree `cwd`, the
    gate evidence in `job_dir`, and the paths it really changed (None: not known)."""
    level = policy.effective
    requested = policy.level
    if level == "none":
        why = policy.reason or "acceptance none: nothing checked"
        return AcceptanceOutcome("accepted", level, requested, why)
    report, malformed = extract_report(answer)
    if malformed:
        return AcceptanceOutcome("rejected", level, requested, f"malformed report: {malformed}")
    if report is None and policy.wants_report:
        return AcceptanceOutcome(
            "rejected", level, requested, "no acceptance report in the child's answer"
        )
    if report is not None and report.status != "done":
        return AcceptanceOutcome(
            "rejected", level, requested, f"the child reports {report.status}: {report.summary}",
            report,
        )  # fmt: skip
    if level == "attested":
        return AcceptanceOutcome("accepted", level, requested, "attested by the child", report)
    gates: tuple[GateResult, ...] = ()
    if level == "verified":
        gates = _verify(policy, cwd, project, job_dir, environ, clock)
        failed = next((g for g in gates if not g.passed), None)
        warnings = tuple(w for g in gates for w in g.warnings)
        if failed is not None:
            return AcceptanceOutcome(
                "rejected", level, requested, failed.reason(), report, gates, warnings
            )
        if report is None:
            return AcceptanceOutcome(
                "accepted", level, requested, _passed(gates), None, gates, warnings
            )
    elif level != "checked":
        assert_never(level)
    assert report is not None  # checked wants one; verified without one returned above
    problem, warnings = check_report(report, job_dir, changed_files)
    warnings = (*(w for g in gates for w in g.warnings), *warnings)
    if problem is not None:
        return AcceptanceOutcome("rejected", level, requested, problem, report, gates, warnings)
    why = _passed(gates) + "; report checked" if gates else "report checked against the evidence"
    return AcceptanceOutcome("accepted", level, requested, why, report, gates, warnings)


def check_report(
    report: AcceptanceReport, job_dir: Path | None, changed_files: tuple[str, ...] | None
) -> tuple[str | None, tuple[str, ...]]:
    """(the contradiction that rejects the report, or None; warnings)."""
    warnings: list[str] = []
    evidence: list[dict[str, Any]] = []
    if job_dir is not None:
        evidence, unreadable = read_evidence(job_dir)
        warnings += unreadable
    latest = {_normal(e["command"]): e for e in evidence}  # oldest first: the last one wins
    for claim in report.checks:
        seen = latest.get(_normal(claim.command))
        if seen is None:
            warnings.append(f"unverified claim: `{claim.command[:120]}` has no gate evidence")
            continue
        if seen.get("exit_code") != claim.exit_code:
            actual = seen.get("exit_code")
            shown = f"exit {actual}" if actual is not None else str(seen.get("outcome"))
            return (
                f"the report claims `{claim.command[:120]}` exited {claim.exit_code}, "
                f"the gate evidence says {shown}",
                tuple(warnings),
            )
    if changed_files is None:
        warnings.append("no record of the paths changed: changed_files not checked")
    else:
        actual_set = set(changed_files)
        phantom = [p for p in report.changed_files if p not in actual_set]
        if phantom:
            more = f" and {len(phantom) - 5} more" if len(phantom) > 5 else ""
            return (
                f"the report claims changes to {', '.join(phantom[:5])}{more}, "
                "which did not change",
                tuple(warnings),
            )
        unclaimed = sorted(actual_set - set(report.changed_files))
        if unclaimed:
            warnings.append(f"changed but not reported: {', '.join(unclaimed[:10])}")
    if not report.checks and not evidence and changed_files is None:
        warnings.append("nothing to check the report against")
    return None, tuple(warnings)


def _verify(
    policy: AcceptancePolicy,
    cwd: Path,
    project: Path,
    job_dir: Path | None,
    environ: Mapping[str, str] | None,
    clock: Callable[[], float] | None,
) -> tuple[GateResult, ...]:
    results = []
    single = len(policy.verify) == 1
    for i, spec in enumerate(policy.verify, 1):
        label = "gate" if single else f"verify-{i}"
        extra: dict[str, Any] = {} if clock is None else {"clock": clock}
        result = run_gate(
            spec, cwd, project=project, job_dir=job_dir, label=label, environ=environ, **extra
        )
        results.append(result)
        if not result.passed:
            break  # the first failure decides; later commands would only cost time
    return tuple(results)


def _passed(gates: tuple[GateResult, ...]) -> str:
    hits = sum(g.memo == "hit" for g in gates)
    memo = f" ({hits} from the memo)" if hits else ""
    n = len(gates)
    return f"{n} verify command{'s' if n != 1 else ''} passed{memo}"


def _normal(command: str) -> str:
    return " ".join(command.split())


def _level(value: object, where: str) -> Level:
    for level in LEVELS:
        if value == level:
            return level
    raise GateError(f"{where} level {str(value)[:40]!r} is unknown", hint=", ".join(LEVELS))


def _checked(policy: AcceptancePolicy, where: str) -> AcceptancePolicy:
    if policy.report is False and policy.level in ("attested", "checked"):
        raise GateError(f"{where} {policy.level} is about the child's report: it cannot be off")
    if policy.level == "verified" and not policy.verify:
        raise GateError(f"{where} verified needs verify commands", hint='verify: ["pytest -q"]')
    if policy.verify and policy.level not in ("verified", "auto"):
        raise GateError(
            f"{where} level {policy.level} runs no verify commands",
            hint="use level verified (or auto) with verify",
        )
    return policy
