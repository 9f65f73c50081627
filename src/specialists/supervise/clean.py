"""The `clean` op (base/ops.py; `gc` is its older name): finished jobs deleted (store/gc.py),
with the notices nobody will read and what features remove beside them (HOOKS.clean)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated, Any

from specialists.base.errors import UserError
from specialists.base.ops import Noun, Op
from specialists.base.opschema import Cli

if TYPE_CHECKING:
    from specialists.native.agent_tools import Caller


def clean(
    caller: Caller,
    *,
    days: Annotated[float | None, Cli(group="age")] = None,
    all: Annotated[bool, Cli(group="age")] = False,
    keep: Annotated[int | None, Cli(metavar="N")] = None,
    dry_run: bool = False,
) -> dict[str, Any]:
    """Delete finished jobs older than SPECIALISTS_JOB_TTL_DAYS (7), as every `run` start does;
    active jobs are never removed.

    Args:
        days: override the age limit
        all: every finished job, whatever its age
        keep: keep the N newest
        dry_run: list what would go; remove nothing
    """
    from specialists.events.notices import prune
    from specialists.store.gc import collect
    from specialists.supervise.hooks import HOOKS

    if days is not None and not days >= 0:  # also refuses nan
        raise UserError("--days must be zero or more")
    if keep is not None and keep < 0:
        raise UserError("--keep must be zero or more")
    report = collect(caller.jobs(), days=days, every=all, keep=keep, dry_run=dry_run)
    caller.warnings.extend(report.problems)  # damaged jobs, kept
    said: list[str] = []
    if not dry_run:
        caller.warnings.extend(prune(caller.state_root))
        for chore in HOOKS.clean:
            lines, warnings = chore(caller.state_root)
            said += lines
            caller.warnings.extend(warnings)
    return {
        "removed": report.removed, "dry_run": dry_run, "freed_bytes": report.freed_bytes,
        "kept_active": report.kept_active, "said": said,
    }  # fmt: skip


CLEAN = Noun(
    "clean",
    "delete finished jobs (older than SPECIALISTS_JOB_TTL_DAYS, 7, by default)",
    (Op(clean, tool=None),),
)
GC = Noun("gc", "the older name of clean", (Op(clean, tool=None),))
