"""The gate of a plain job (`specialists run ... --gate "<cmd>"`): run where the job ends.

The supervisor calls `gate_verdict` once the job would end `done` and its agent is dead, so
nothing writes into the tree while the gate looks at it: a failed gate turns the ending into
`error` with the gate's reason (its command and output tail). The job's `gate` record field
holds the spec (`GateSpec.to_dict`); a record whose gate is damaged fails the job, since it
asked for a verification that cannot happen.
"""

from __future__ import annotations

from pathlib import Path

from specialists.features.gates.run import GateResult, run_gate
from specialists.features.gates.spec import GateError, from_dict
from specialists.store.records import JobRecord


def gate_verdict(
    state_root: Path, record: JobRecord, job_dir: Path
) -> tuple[str | None, GateResult | None]:
    """(the error that fails the job, or None when it stands; the gate's result)."""
    if not record.gate:
        return None, None
    try:
        spec = from_dict(record.gate)
    except GateError as exc:
        return f"gate not run: {exc.one_line()}", None
    result = run_gate(spec, Path(record.cwd), project=state_root.parent, job_dir=job_dir)
    return (None if result.passed else result.reason()), result
