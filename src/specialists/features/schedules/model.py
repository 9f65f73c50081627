"""A schedule's definition and its firing state, as plain data with explicit dicts.

The definition (`definition.json`) says what to run and when; it changes only on
pause/resume. The state (`state.json`) says how far firing has got: the last slot handled
(fired, skipped or missed) and the next one due, so `run-due` over a thousand schedules reads
one small file each and parses nothing else for those not yet due.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, replace
from typing import Any, Literal, assert_never

from specialists.base.errors import StoreError, UserError
from specialists.features.schedules.triggers import Trigger, trigger_from_dict, trigger_to_dict
from specialists.store.fields import Declared, describe

SCHEMA = 1
_ID = re.compile(r"[a-z0-9][a-z0-9_-]{0,47}")
ID_HINT = "1-48 of a-z, 0-9, '-', '_', starting with a letter or digit"
MAX_PROMPT = 64 * 1024
OUTCOMES = ("fired", "skipped", "missed", "failed", "interrupted")  # how a slot went

CatchUp = Literal["latest", "none"]
CATCH_UPS: tuple[CatchUp, ...] = ("latest", "none")
Overlap = Literal["skip"]
OVERLAPS: tuple[Overlap, ...] = ("skip",)


class SpecialistTarget(Declared):
    """Run one specialist in the background with this prompt (as `specialists run -b`)."""

    _what = "target"
    _choices = {"kind": frozenset({"specialist"})}
    kind: str  # "specialist"
    specialist: str
    prompt: str
    model: str | None = None
    runner: str | None = None
    timeout_ms: int | None = None
    cwd: str | None = None

    @classmethod
    def _after_read(cls, record: SpecialistTarget, where: str) -> None:
        if record.timeout_ms is not None and record.timeout_ms <= 0:
            raise StoreError("the target's timeout_ms must be a positive whole number")


class WorkflowTarget(Declared):
    """Start a workflow by name (.specialists/workflows/<name>.*, or a recipe) with no args."""

    _what = "target"
    _choices = {"kind": frozenset({"workflow"})}
    kind: str  # "workflow"
    workflow: str
    # Created by a model (the MCP schedule tool): at every firing the workflow must still be
    # a declarative file of the project whose gates config.toml allows (workflows/consent.py).
    by_model: bool = False

    def to_dict(self) -> dict[str, Any]:
        out = super().to_dict()
        if not self.by_model:
            del out["by_model"]  # written only when set
        return out


Target = SpecialistTarget | WorkflowTarget


def check_target(target: Target) -> None:
    if isinstance(target, WorkflowTarget):
        name = target.workflow
        if not name.strip() or len(name) > 200 or "\x00" in name:
            raise UserError("the target has no workflow name", hint="--workflow NAME")
        return
    if isinstance(target, SpecialistTarget):
        if not target.specialist.strip():
            raise UserError("the target has no specialist name", hint="--specialist NAME")
        if not target.prompt.strip():
            raise UserError("the target has no prompt", hint="--prompt TEXT")
        if len(target.prompt.encode()) > MAX_PROMPT or "\x00" in target.prompt:
            raise UserError("the prompt is over 64 KiB or holds a NUL byte")
        return
    assert_never(target)


@dataclass(frozen=True)
class Schedule:
    id: str
    trigger: Trigger
    target: Target
    created_ms: int
    name: str = ""
    overlap: Overlap = "skip"
    catch_up: CatchUp = "latest"
    paused: bool = False

    def with_paused(self, paused: bool) -> Schedule:
        return replace(self, paused=paused)


class ScheduleState(Declared):
    _what = "state.json"
    last_slot_ms: int  # every slot up to here is handled (fired, skipped or missed)
    next_due_ms: int | None = None  # None: it never fires again (a one-shot that fired)
    last_job: str | None = None  # the last job it launched, for `overlap: skip`
    fired: int = 0
    skipped: int = 0
    missed: int = 0
    # How its last slot went (fired, skipped, failed, interrupted, missed): a schedule that
    # will never fire again is listed by it, so a one-shot whose firing was cut short or
    # never happened does not pass for finished.
    last_outcome: str | None = None

    def to_dict(self) -> dict[str, Any]:
        return {"schema": SCHEMA, **super().to_dict()}

    @classmethod
    def _after_read(cls, record: ScheduleState, where: str) -> None:
        outcome = record.last_outcome
        if outcome is not None and outcome not in OUTCOMES:
            raise StoreError(
                f"{where}: field 'last_outcome' should be one of {', '.join(OUTCOMES)} or null,"
                f" not {describe(outcome)}"
            )


def check_id(schedule_id: object) -> str:
    if not isinstance(schedule_id, str) or not _ID.fullmatch(schedule_id):
        raise UserError(f"invalid schedule id {str(schedule_id)[:60]!r}", hint=ID_HINT)
    return schedule_id


def owner_key(schedule_id: str) -> str:
    """The owner its jobs are launched for (owner.py, events/owners.py: `<kind>-<id>`)."""
    return f"schedule-{schedule_id}"


def schedule_to_dict(schedule: Schedule) -> dict[str, Any]:
    return {
        "schema": SCHEMA,
        "id": schedule.id,
        "name": schedule.name,
        "trigger": trigger_to_dict(schedule.trigger),
        "target": schedule.target.to_dict(),
        "overlap": schedule.overlap,
        "catch_up": schedule.catch_up,
        "paused": schedule.paused,
        "created_ms": schedule.created_ms,
    }


def schedule_from_dict(data: dict[str, Any]) -> Schedule:
    """Read a definition back; UserError (naming what) for one that is not ours or newer."""
    schema = data.get("schema")
    if schema != SCHEMA:
        raise UserError(f"schema {str(schema)[:10]} is not {SCHEMA} (written by a newer version?)")
    overlap, catch_up = data.get("overlap"), data.get("catch_up")
    created = data.get("created_ms")
    if overlap not in OVERLAPS or catch_up not in CATCH_UPS:
        raise UserError("bad overlap or catch_up")
    if not isinstance(created, int) or not isinstance(data.get("paused"), bool):
        raise UserError("bad created_ms or paused")
    return Schedule(
        id=check_id(data.get("id")),
        trigger=trigger_from_dict(data.get("trigger")),
        target=target_from_dict(data.get("target")),
        created_ms=created,
        name=str(data.get("name") or ""),
        overlap=overlap,
        catch_up=catch_up,
        paused=data["paused"],
    )


def target_from_dict(data: object) -> Target:
    if not isinstance(data, dict):
        raise UserError("the target is not an object")
    if data.get("kind") == "workflow":
        return WorkflowTarget.from_dict(data)
    if data.get("kind") == "specialist":
        return SpecialistTarget.from_dict(data)
    raise UserError(f"unknown target kind {str(data.get('kind'))[:20]!r}")
