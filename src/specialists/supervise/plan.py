"""From "run this specialist with this prompt" to a JobRecord, and on to a started job.

Shared by every interface (CLI run/resume, MCP, hooks) so they resolve runner, model,
templates and continuation the same way.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

from specialists.base.errors import UserError
from specialists.base.tuples import NamedTuple
from specialists.runners.registry import DEFAULT_RUNNER, known_runner
from specialists.runners.tiers import check_runner_tools
from specialists.store.gc import collect
from specialists.store.jobs import JobStore, now_ms
from specialists.store.records import JobRecord, JobStatus
from specialists.supervise.hooks import HOOKS, Planning

# Where pre-script output goes until the scripts have run (the supervisor fills it in).
PRE_SCRIPT_TOKEN = "\u27eapre_script_output\u27eb"


class JobRequest(NamedTuple):
    specialist: str
    prompt: str
    cwd: Path | None = None
    runner: str | None = None
    model: str | None = None
    timeout_ms: int | None = None
    keep_alive: bool | None = None
    continue_from: str | None = None  # job id (or prefix) whose session to continue
    variables: Mapping[str, str] = {}  # read-only (a Mapping): one shared empty one
    bead: str | None = None  # run this bead (issue) as the prompt
    context_depth: int = 1  # levels of the bead's blockers to include
    track_bead: bool = True  # False: never create or update a bead for this run
    permission: str | None = None
    executor: str | None = None  # local | ray; None: the specialist's, else config.toml's
    attention_after: str | None = None  # `--attention-after`: a duration, or off
    watchdog: bool | None = None  # `--watchdog` / `--no-watchdog`; None: definition, config


def plan_job(
    store: JobStore,
    request: JobRequest,
    *,
    foreground: bool = False,
    warnings: list[str] | None = None,
) -> JobRecord:
    """Resolve the specialist, runner, model and task into a launch record (no id yet).

    Problems that do not stop the run (a tracking bead that could not be made) are appended
    to `warnings` for the caller to show."""
    from specialists.catalog import load_catalog
    from specialists.catalog.config import load_config, unreported
    from specialists.catalog.managed import with_overlay
    from specialists.catalog.render import render_task

    project_root = store.root.parent
    catalog = load_catalog(project_root, keep_parsed=True)  # a run keeps what it parsed
    spec = catalog.get(request.specialist)
    config = load_config(project_root)
    if warnings is not None:  # unknown keys: named once per process, ignored
        warnings.extend(unreported(config.warnings))
    _check_prompt(request)
    try:
        cwd = (request.cwd or Path.cwd()).resolve()
        cwd_ok = cwd.is_dir()
    except (OSError, ValueError) as exc:  # e.g. a NUL byte in the path
        raise UserError(f"invalid working directory {str(request.cwd)[:200]!r}: {exc}") from None
    if not cwd_ok:
        what = "is not a directory" if cwd.exists() else "does not exist"
        raise UserError(f"working directory {cwd} {what}")

    parent: JobRecord | None = None
    parent_status: JobStatus | None = None
    if request.continue_from is not None:  # "" is a bad id, not "no parent"
        parent_id = store.resolve(request.continue_from)
        parent = store.read_record(parent_id)
        parent_status = store.read_status(parent_id)
        if parent_status is None or parent_status.active:
            state = parent_status.status if parent_status else "being created"
            raise UserError(
                f"job {parent_id} is {state}; only a finished job can be continued",
                hint="use `specialists follow-up` for a job that is still running",
            )
        if parent_status.status == "cancelled":
            raise UserError(
                f"job {parent_id} was stopped; a stopped job is not resumable (stop is final)",
                hint="start a new job with `specialists run`; `interrupt` pauses a job instead",
            )
        session = parent_status.session_file
        if not session:
            raise UserError(f"job {parent_id} has no agent session to continue")
        # A path (pi, native) must still exist; claude and codex record an id instead.
        if Path(session).is_absolute() and not Path(session).is_file():
            raise UserError(
                f"job {parent_id}'s session file {session} is gone; its session cannot continue"
            )

    runner = (
        request.runner
        or (parent.runner if parent else None)
        or spec.runner
        or config.default_runner
        or DEFAULT_RUNNER
    )
    known_runner(runner)
    check_runner_tools(spec.name, runner, spec.tools)
    if spec.system_prompt_mode == "replace" and runner == "codex" and warnings is not None:
        warnings.append(
            f"{spec.name}: prompt.system_prompt_mode replace: Codex keeps its own instructions;"
            " the system prompt is added to them (developer instructions)"
        )
    if parent and parent.runner != runner:
        raise UserError(
            f"job {parent.id} ran on {parent.runner}; its session cannot continue on {runner}"
        )
    model = (
        request.model or (parent.model if parent else None) or spec.model or config.default_model
    )
    planning = Planning(request=request, spec=spec, config=config.raw, cwd=cwd)
    prompt, input_bead = request.prompt, None
    for source in HOOKS.prompt_source:
        supplied = source(planning, prompt)
        if supplied is not None:
            prompt, input_bead = supplied
            break
    task = render_task(
        spec, prompt, cwd, pre_script_output=PRE_SCRIPT_TOKEN, variables=request.variables
    )
    keep_alive = spec.interactive if request.keep_alive is None else request.keep_alive
    resolved: dict[str, object] = {}  # what the features resolve: executor, attention, ...
    for contribute in HOOKS.planning:
        resolved.update(contribute(planning))
    record = JobRecord(
        id="",
        specialist=spec.name,
        prompt=prompt,
        task=task,
        runner=runner,
        model=model,
        cwd=str(cwd),
        created_at_ms=now_ms(),
        system_prompt=with_overlay(spec.system_prompt, project_root, spec.name),
        permission=request.permission or spec.permission,
        tools=None if spec.tools is None else list(spec.tools),
        thinking_level=spec.thinking_level,
        fallback_model=spec.fallback_model,
        timeout_ms=request.timeout_ms or spec.timeout_ms,
        stall_timeout_ms=spec.stall_timeout_ms,
        stall_kill=spec.stall_kill,
        keep_alive=keep_alive,
        idle_timeout_ms=spec.idle_timeout_ms,
        max_turns=spec.max_turns,
        max_tokens=spec.max_tokens,
        requires_worktree=spec.requires_worktree,
        auto_commit=spec.auto_commit,
        commit_on_waiting=spec.commit_on_waiting,
        bare=spec.bare,
        system_prompt_mode=spec.system_prompt_mode,
        response_format=spec.response_format,
        # Missing ones too: the runner reports each as a notice in events.jsonl (seed 000 4.1).
        skill_paths=[str(p) for p in spec.skill_paths],
        pre_scripts=[s._asdict() for s in spec.pre_scripts],
        post_scripts=[s._asdict() for s in spec.post_scripts],
        runner_options=runner_options(
            config.raw, runner, spec.runner_options, builtin=spec.scope == "builtin"
        ),
        parent_id=parent.id if parent else None,
        resume_session=parent_status.session_file if parent_status else None,
        bead_id=input_bead if request.track_bead else None,
        owns_bead=False,  # an input bead belongs to the orchestrator: notes, never closed
        foreground=foreground,
        source=str(spec.source) if spec.source else None,
        **resolved,
    )
    problems: list[str] = []
    for look in HOOKS.after_plan:
        record = look(record, planning, problems)
    if warnings is not None:
        warnings.extend(problems)
    return record


# A builtin specialist on pi loads our extension unless its definition or config.toml's
# `[runners.pi]` says `specialists_extension = false`: the never-block tools (bg_run, sleep,
# spawn_thread), the bash guard and the result spill reach the default front too.
EXTENSION_OPTION = "specialists_extension"


def runner_options(
    config_tables: Mapping[str, object],
    runner: str,
    definition: Mapping[str, object],
    *,
    builtin: bool = False,
) -> dict[str, object]:
    """The runner's options: config.toml's `[runners.<name>]` table, then the definition's
    `execution.runner` block over it, key by key."""
    tables = config_tables.get("runners")
    defaults = tables.get(runner) if isinstance(tables, Mapping) else None
    options = {**(defaults if isinstance(defaults, Mapping) else {}), **definition}
    if builtin and runner == "pi":
        options.setdefault(EXTENSION_OPTION, True)
    if runner == "external-job":  # its provider, from the registry in config.toml
        from specialists.runners.external_job import provider_options

        return provider_options(config_tables, options)
    return options


def _check_prompt(request: JobRequest) -> None:
    """Refuse a prompt the agent could never receive, before a job is created for it."""
    if not request.bead and not request.prompt.strip():
        raise UserError("the prompt is empty")
    if "\x00" in request.prompt:  # no agent can take it: argv and C strings end there
        raise UserError("the prompt contains a NUL byte")
    try:
        request.prompt.encode("utf-8")
    except UnicodeEncodeError as exc:  # lone surrogates, e.g. from undecodable bytes
        raise UserError(f"the prompt is not valid UTF-8 text (at character {exc.start})") from None


def housekeeping(store: JobStore) -> list[str]:
    """Run-start housekeeping: gc old jobs, close the beads of crashed ones (seed 10.2-10.3),
    drop completion notices nobody will read. Returns warnings for the caller to show."""
    report = collect(store)
    return [p for chore in HOOKS.housekeeping for p in chore(store, list(report.crashed))]
