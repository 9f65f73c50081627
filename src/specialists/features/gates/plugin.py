"""What gates add to a job's life: `run --gate`, a command whose failure fails the job."""

from __future__ import annotations

from specialists.supervise.hooks import HOOKS

TYPE_CHECKING = False
if TYPE_CHECKING:
    from specialists.supervise.hooks import JobEnd


def register() -> None:
    HOOKS.gate.append(_verdict)


def _verdict(ending: JobEnd) -> tuple[str, str | None] | None:
    from specialists.features.gates.job import gate_verdict

    record = ending.record
    if not record.gate:
        return None
    ending.event("gate_start", command=record.gate.get("command"))
    failure, result = gate_verdict(ending.store.root, record, ending.store.job_dir(record.id))
    if result is not None:
        evidence = None if result.evidence is None else str(result.evidence)
        ending.event(
            "gate", outcome=result.outcome, memo=result.memo, evidence=evidence,
            reason=result.reason(),
        )  # fmt: skip
        for warning in result.warnings:
            ending.event("notice", message=warning)
    return ("error", failure) if failure else ("done", None)
