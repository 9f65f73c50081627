"""One child's options, checked before anything is launched, and the caps of a run.

`child_options(raw)` turns what a script or a declarative file gave (a mapping) into a frozen
`ChildOptions`, or raises one `UserError` naming the key and the field. The input hash is
what a re-run compares: the options that change what the child does (agent, task, runner,
model, context, schema, sandbox, gate, acceptance, resume, output), not its limits (timeout,
turn and token budgets), so raising a timeout does not invalidate finished work.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any, Literal

from specialists.base.errors import UserError
from specialists.base.reader import Invalid, check_tree
from specialists.features.workflows.outputs import check_output

MAX_CHILDREN = 1000  # children (launches) one run may make
MAX_ITEMS = 4096  # items one runs.all or pipeline call may take
MAX_CONCURRENCY = 64  # the most a person may ask for
MAX_TASK_BYTES = 256 * 1024
MAX_SCHEMA_BYTES = 64 * 1024
MAX_TIMEOUT_S = 7 * 24 * 3600
_KEY = re.compile(r"[A-Za-z0-9][A-Za-z0-9._:/@+-]{0,127}")
_KNOWN = frozenset(
    {
        "key",
        "agent",
        "task",
        "runner",
        "model",
        "context",
        "schema",
        "sandbox",
        "worktree",
        "timeout",
        "max_turns",
        "max_tokens",
        "gate",
        "acceptance",
        "resume",
        "output",
    }
)


DEFAULT_CONCURRENCY = 8  # children at once unless asked: agents wait on models, not cores
CHILD_MEMORY = 512 * 1024 * 1024  # room one agent child (its CLI, supervisor, tools) may need


def default_concurrency(available_memory: int | None = None) -> int:
    """Children at once when a run does not say: 8, fewer when memory is short.

    An agent child spends its time waiting for its model, so cores do not bound it: on a
    2-core laptop 8 reviewers overlap fine, where a cores-based default ran them one by one.
    Memory does: each child is an agent CLI (pi and Claude Code are Node processes of
    150-300 MB) plus its supervisor and the tools it runs, so at most one child per 512 MiB
    of available memory, and at least 1. Children that are heavy commands (a test suite
    each) should ask for fewer with --concurrency.
    """
    memory = available_memory if available_memory is not None else _available_memory()
    if memory is None:
        return DEFAULT_CONCURRENCY
    return max(1, min(DEFAULT_CONCURRENCY, memory // CHILD_MEMORY))


def _available_memory() -> int | None:
    """/proc/meminfo's MemAvailable on Linux; where there is none (or it cannot be read),
    half the physical memory; None when unknown."""
    try:
        with open("/proc/meminfo", "rb") as f:
            for line in f:
                if line.startswith(b"MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass  # no /proc, or an unreadable one: the physical memory below
    try:
        return os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE") // 2
    except (OSError, ValueError, AttributeError):
        return None


@dataclass(frozen=True)
class KeyedResume:
    """`resume: {workflow, key, latest: true}`: continue the latest child of another run."""

    workflow: str
    key: str


@dataclass(frozen=True)
class RunResume:
    """`resume: "<run id>"` (seed 004): continue that retained child, a job id or prefix."""

    job: str


Resume = KeyedResume | RunResume


@dataclass(frozen=True)
class ChildOptions:
    key: str
    task: str
    agent: str | None = None
    runner: str | None = None
    model: str | None = None
    context: Literal["fresh", "fork"] = "fresh"
    schema: Mapping[str, Any] | None = None
    sandbox: bool = False
    timeout_s: float | None = None
    max_turns: int | None = None
    max_tokens: int | None = None
    gate: Any = None  # a command, or {command, timeout_s?, env?, memo?} (gates/spec.py)
    acceptance: Any = None  # a level, or {level?, verify?, reason?, report?}
    resume: Resume | None = None
    output: str | None = None  # a file for its final answer (workflows/outputs.py)

    def policy(self) -> Any:
        """The gates room's AcceptancePolicy for this child (auto when neither is given)."""
        from specialists.features.gates.acceptance import policy_for

        return policy_for(gate=self.gate, acceptance=self.acceptance)

    def input_hash(self) -> str:
        inputs = {
            "agent": self.agent,
            "task": self.task,
            "runner": self.runner,
            "model": self.model,
            "context": self.context,
            "schema": self.schema,
            "sandbox": self.sandbox,
            "gate": self.gate,
            "acceptance": self.acceptance,
            "resume": _resume_input(self.resume),
            "output": self.output,
        }
        text = json.dumps(inputs, sort_keys=True, separators=(",", ":"), default=str)
        return hashlib.sha256(text.encode()).hexdigest()[:32]


def _resume_input(resume: Resume | None) -> list[str] | None:
    if isinstance(resume, KeyedResume):
        return [resume.workflow, resume.key]
    return None if resume is None else ["run", resume.job]


def check_key(key: object) -> str:
    if not isinstance(key, str) or not _KEY.fullmatch(key):
        shown = repr(key)[:80]
        raise UserError(
            f"workflow key {shown} is not a stable key",
            hint="keys are 1-128 characters: letters, digits and . _ : / @ + - "
            "(derive them from the item, never from a counter or the clock)",
        )
    return key


def child_options(raw: Mapping[str, Any]) -> ChildOptions:
    if not isinstance(raw, Mapping):
        raise UserError(f"a child must be a mapping of options, not {type(raw).__name__}")
    key = check_key(raw.get("key"))
    unknown = sorted(str(k) for k in raw if k not in _KNOWN)
    if unknown:
        raise UserError(
            f"child {key!r}: unknown option {unknown[0]!r}",
            hint="options: " + ", ".join(sorted(_KNOWN)),
        )
    where = f"child {key!r}"
    task = _required(raw.get("task"), f"{where}: task")
    if len(task.encode("utf-8", "replace")) > MAX_TASK_BYTES or "\x00" in task:
        raise UserError(f"{where}: the task is over 256 KiB or holds a NUL byte")
    resume = _resume(raw.get("resume"), where)
    agent = _text(raw.get("agent"), f"{where}: agent")
    if resume is not None and agent is not None:
        raise UserError(
            f"{where}: resume and agent cannot be combined",
            hint="a resumed child keeps the agent, model and runner it ran with",
        )
    if resume is None and agent is None:
        raise UserError(f"{where}: no agent", hint="give agent: <specialist name>")
    context = raw.get("context", "fresh")
    if context not in ("fresh", "fork"):
        raise UserError(f"{where}: context must be fresh or fork, not {context!r}")
    sandbox = raw.get("sandbox", raw.get("worktree", False))
    if not isinstance(sandbox, bool):
        raise UserError(f"{where}: sandbox/worktree must be true or false")
    gate, acceptance = _gate(raw.get("gate"), raw.get("acceptance"), where)
    if resume is not None and gate is not None:
        raise UserError(f"{where}: gate is not accepted on a resumed child")
    return ChildOptions(
        key=key,
        task=task,
        agent=agent,
        runner=_text(raw.get("runner"), f"{where}: runner"),
        model=_text(raw.get("model"), f"{where}: model"),
        context=context,
        schema=check_schema(raw.get("schema"), where),
        sandbox=sandbox,
        timeout_s=_number(raw.get("timeout"), f"{where}: timeout", 1, MAX_TIMEOUT_S),
        max_turns=_count(raw.get("max_turns"), f"{where}: max_turns"),
        max_tokens=_count(raw.get("max_tokens"), f"{where}: max_tokens"),
        gate=gate,
        acceptance=acceptance,
        resume=resume,
        output=check_output(raw.get("output"), where),
    )


def check_schema(schema: object, where: str) -> Mapping[str, Any] | None:
    """A JSON schema the child's answer must satisfy, checked against its metaschema now."""
    if schema is None:
        return None
    if not isinstance(schema, Mapping) and not isinstance(schema, bool):
        raise UserError(
            f"{where}: schema must be a JSON schema object, not {type(schema).__name__}"
        )
    if isinstance(schema, bool):
        raise UserError(f"{where}: schema true/false says nothing; give a schema object")
    try:  # bounded first: an alias bomb or deep nesting never reaches the walks below
        check_tree(schema, f"{where}: schema")
        size = len(json.dumps(schema))
    except Invalid as exc:
        raise UserError(exc.problem) from None
    except (TypeError, ValueError) as exc:
        raise UserError(f"{where}: schema is not JSON: {exc}") from None
    if size > MAX_SCHEMA_BYTES:
        raise UserError(f"{where}: schema is over 64 KiB")
    from jsonschema import exceptions, validators

    cls = validators.validator_for(schema)
    try:
        cls.check_schema(schema)
    except exceptions.SchemaError as exc:
        at = "/".join(str(p) for p in exc.path) or "the top"
        raise UserError(
            f"{where}: schema is not a valid JSON schema: {exc.message} (at {at})",
            hint="see https://json-schema.org; e.g. {type: object, properties: {...}}",
        ) from None
    return dict(schema)


def _resume(raw: object, where: str) -> Resume | None:
    if raw is None:
        return None
    if isinstance(raw, str):  # a run id (a job id or its unique prefix), checked at launch
        from specialists.store.ids import check_job_ref

        try:
            return RunResume(check_job_ref(raw))
        except UserError as exc:
            raise UserError(f"{where}: resume: {exc.message}", hint=exc.hint) from None
    if not isinstance(raw, Mapping):
        raise UserError(
            f"{where}: resume must be a run id or {{workflow, key, latest: true}}",
            hint='e.g. resume: "<run id>" (a retained child\'s job id)',
        )
    if raw.get("latest") is not True:
        raise UserError(
            f"{where}: resume needs latest: true",
            hint="keyed resume always continues the latest child of that key",
        )
    extra = sorted(set(raw) - {"workflow", "key", "latest"})
    if extra:
        raise UserError(f"{where}: resume has an unknown field {extra[0]!r}")
    workflow = _required(raw.get("workflow"), f"{where}: resume.workflow")
    return KeyedResume(workflow, check_key(raw.get("key")))


def _gate(gate: object, acceptance: object, where: str) -> tuple[Any, Any]:
    """Checked by the gates room's own parser (docs/gates.md), so a workflow child and
    `specialists run --gate` accept exactly the same options."""
    if gate is None and acceptance is None:
        return None, None
    from specialists.features.gates.acceptance import policy_for

    try:
        policy_for(gate=gate, acceptance=acceptance)
    except UserError as exc:
        raise UserError(f"{where}: {exc.message}", hint=exc.hint) from None
    try:
        json.dumps([gate, acceptance])
    except (TypeError, ValueError):
        raise UserError(f"{where}: gate and acceptance must be JSON values") from None
    return gate, acceptance


def _text(value: object, what: str) -> str | None:
    if value is None:
        return None
    return _required(value, what)


def _required(value: object, what: str) -> str:
    if value is None:
        raise UserError(f"{what} is missing")
    if not isinstance(value, str) or not value.strip():
        raise UserError(f"{what} must be a non-empty string")
    return value


def _number(value: object, what: str, low: float, high: float) -> float | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int | float) or not low <= value <= high:
        raise UserError(f"{what} must be a number of seconds from {low:g} to {high:g}")
    return float(value)


def _count(value: object, what: str) -> int | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= 1_000_000_000:
        raise UserError(f"{what} must be a positive whole number")
    return value


def bounded(items: Iterable[Any]) -> list[Any]:
    listed = []
    for item in items:
        listed.append(item)
        if len(listed) > MAX_ITEMS:
            raise UserError(
                f"too many items in one call: more than {MAX_ITEMS}",
                hint="split them into several calls or batch several into one child",
            )
    return listed


def claim_output(claimed: dict[str, str], opts: ChildOptions) -> None:
    """Two keys of one run may not write one output file (the second would overwrite)."""
    if opts.output is None:
        return
    name = os.path.normpath(opts.output)
    other = claimed.get(name)
    if other is not None and other != opts.key:
        raise UserError(
            f"child {opts.key!r}: output {opts.output!r} is already the output of key {other!r}",
            hint="give each child its own output path (include the key in it)",
        )
    claimed[name] = opts.key


def launch_refusal(
    key: str, launched: int, most: int, spent: int, budget: int | None, reached: str | None
) -> UserError | None:
    """Why a run may launch no more children (its child cap, its token budget, a spend
    ceiling `reached`), or None."""
    if launched >= most:
        return UserError(
            f"workflow child cap reached: {launched} children launched, the most "
            f"one run may launch is {most} (at key {key!r})",
            hint="split the work into several workflows, or batch items into fewer children",
        )
    if budget is not None and spent >= budget:
        return UserError(
            f"workflow token budget spent: its children used {spent:,} of "
            f"{budget:,} tokens (no more children launch; at key {key!r})",
            hint="resume it with a larger budget: specialists workflow resume ID --budget-tokens N",
        )
    if reached is not None:
        return UserError(
            f"{reached} (no more children launch; at key {key!r})",
            hint="resume it with a larger ceiling: specialists workflow resume ID --max-cost",
        )
    return None


def check_unicode(value: Any, what: str) -> None:
    """Refuse a lone surrogate ("\\ud800" in JSON) before a job exists: a job.json holding one
    cannot be read back (workflow show and resume exited 4), a child's prompt cannot hold it."""
    try:
        json.dumps(value, ensure_ascii=False, default=str).encode("utf-8")
    except UnicodeEncodeError:
        raise UserError(f"text in {what} is not valid Unicode (a lone surrogate)") from None
