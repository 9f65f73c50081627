"""A job's launch record -> the LaunchSpec its runner starts from (pure)."""

from __future__ import annotations

from pathlib import Path

from specialists.base.owner import JOB_ENV
from specialists.runners.base import LaunchSpec, SpendLimit
from specialists.store.records import JobRecord


def launch_spec(
    record: JobRecord, job_dir: Path, task: str, spend: SpendLimit | None = None
) -> LaunchSpec:
    """`task` is the record's task with the pre-scripts' output filled in."""
    return LaunchSpec(
        job_id=record.id,
        job_dir=job_dir,
        cwd=Path(record.cwd),
        prompt=task,
        system_prompt=record.system_prompt,
        model=record.model,
        permission=record.permission,
        tools=record.tools,
        thinking_level=record.thinking_level,
        skill_paths=tuple(Path(p) for p in record.skill_paths),
        # `runner: {type: pi, args: [...]}`: appended to the agent's command line (the
        # command runner reads them from its options as the command's own arguments).
        extra_args=()
        if record.runner == "command"
        else tuple(record.runner_options.get("args", ())),
        resume_session=record.resume_session,
        max_turns=record.max_turns,
        max_tokens=record.max_tokens,
        fallback_model=record.fallback_model,
        response_format=record.response_format,
        thread=bool(record.thread),
        bare=record.bare,
        system_prompt_mode=record.system_prompt_mode,
        # Who the agent is, for what runs inside it: a `specialists run` inside the agent is
        # owned by this job (owner.py; the pi extension's owner job-<id>), and a nested call
        # finds this project rather than a sandbox worktree.
        env={
            JOB_ENV: record.id,
            "SPECIALISTS_PROJECT_ROOT": str(job_dir.parent.parent.parent),
        },
        options=record.runner_options,
        spend=spend,
    )
