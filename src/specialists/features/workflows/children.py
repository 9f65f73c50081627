"""The real `Children`: each child an ordinary job, planned and started as `specialists run`
plans and starts one, whose record names the workflow job as its parent.

A child's record: `parent_id` = the workflow's job id, `owner` = [`job-<workflow id>`],
`thread` = {id, parent, stack, workflow_key, continues}, with a thread record in `threads/`
written before it starts (as spawn_thread does), so `status`, `feed`, `threads --tree`, `top`
and `web` show it with no code of their own. Planning happens before anything is created; a
launch that fails removes what it made (no thread record, no job that looks as if it may run).
"""

from __future__ import annotations

import dataclasses
import json
import logging
import os
import time
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from specialists.base.errors import StoreError, UserError
from specialists.features.gates.acceptance import judge, report_instructions
from specialists.features.threads.records import ThreadRecord, ThreadStore
from specialists.features.threads.transports import front_options, transport
from specialists.features.workflows.options import ChildOptions, KeyedResume, Resume
from specialists.features.workflows.outputs import relative_parts, write_output
from specialists.features.workflows.receipt import keyed_resume, resumability, run_resume
from specialists.features.workflows.results import Launch, Outcome
from specialists.store.control import post_request
from specialists.store.jobs import JobStore, now_ms
from specialists.store.news import NEWS
from specialists.store.records import JobRecord
from specialists.store.rollup import rollup
from specialists.store.view import current_status
from specialists.supervise.plan import JobRequest, plan_job
from specialists.supervise.start import check_agent, start

RECHECK_S = 2.0  # a child whose status has not moved is still looked at this often (a
# supervisor killed with SIGKILL writes nothing: recovery records it when someone looks)
SCHEMA_NOTE = (
    "Give your final answer as one JSON value that satisfies this JSON schema, and nothing "
    "else (no prose, no code fence):\n"
)


class JobChildren:
    def __init__(self, state_root: Path, workflow: JobRecord) -> None:
        self.state_root = state_root
        self.store = JobStore(state_root, news=NEWS)
        self.threads = ThreadStore(state_root)
        self.workflow = workflow
        self.owner = f"job-{workflow.id}"
        stack = workflow.thread.get("stack") if workflow.thread else None
        self.stack = tuple(stack) if isinstance(stack, list) else ("root",)
        self._seen: dict[str, tuple[int, float]] = {}  # job -> (status mtime, last look)
        self._spent: dict[str, dict[str, Any]] = {}  # job -> what it spent, as last read

    # --- launching -----------------------------------------------------------------------

    def launch(self, launch: Launch, on_created: Callable[[str, str], None]) -> str:
        """Start the child through the one start, keyed by the run, its key and the attempt:
        a start repeated for that attempt finds the child it made."""
        if launch.earlier is not None and launch.continue_from is None:
            from specialists.runners.external_job import reattachable

            if reattachable(self.store.job_dir(launch.earlier)):  # never dispatched twice
                launch = dataclasses.replace(launch, continue_from=launch.earlier)
        if launch.options.output is not None:  # an absolute path must be inside the project
            where = f"child {launch.options.key!r}"
            relative_parts(launch.options.output, where, self.state_root.parent)
        record, resolved = self._plan(launch)
        check_agent(record)
        handoff: dict[str, str] = {}
        before = launch.continue_from or launch.retry_of
        if before is not None:  # a follow-up works where the attempt before it did
            earlier = self.store.read_record(before)
            handoff = {
                k: earlier.thread[k] for k in ("handoff", "handoff_key") if k in earlier.thread
            }
            record = record.replace(cwd=earlier.cwd, sandbox=earlier.sandbox)
        elif launch.options.sandbox and launch.nested is None:
            record, handoff = self._worktree(record, launch.options.key)
        thread_id = self.threads.reserve()
        started = False
        try:
            stack = (*self.stack, thread_id)
            record = record.replace(
                owner=[self.owner],
                parent_id=self.workflow.id,
                thread={
                    "id": thread_id,
                    "parent": self.owner,
                    "stack": list(stack),
                    "workflow_key": launch.options.key,
                    "continues": launch.continue_from,
                    **handoff,
                },
                runner_options=front_options(record.runner, dict(record.runner_options)),
            )

            def created(child: JobRecord) -> None:
                self.threads.write(
                    ThreadRecord(
                        id=thread_id,
                        parent=self.owner,
                        stack=stack,
                        job_id=child.id,
                        instructions=launch.prompt[:4000],
                        fresh_context=resolved == "fresh",
                        runner=child.runner,
                        created_at_ms=now_ms(),
                        sandbox=child.sandbox,
                    )
                )
                on_created(child.id, resolved)  # journaled before the child can start

            key = f"workflow:{self.workflow.id}:{launch.options.key}:{launch.attempt}"
            begun = start(self.store, record, key=key, created=created, check=False)
            started = not begun.existed  # a repeated attempt: our thread id was not used
            return begun.id
        finally:
            if not started:
                self.threads.discard(thread_id)
                # A worktree made for it stays in the handoff manifest (never deleted here):
                # `specialists worktree show/discard <workflow id>` reviews and removes it.

    def _worktree(self, record: JobRecord, key: str) -> tuple[JobRecord, dict[str, str]]:
        """A worktree child: journaled in the workflow's handoff manifest, then created
        (gates' begin_handoff: a clean tree required, the setup hook, dependency links)."""
        from specialists.catalog.config import load_config
        from specialists.features.sandbox.handoff import begin_handoff, worktree_settings

        project = self.state_root.parent
        setup, link = worktree_settings(load_config(project).raw)
        started = begin_handoff(
            project, self.workflow.id, [key], owner=self.workflow.id, setup=setup, link=link
        )
        child = started.children[0]
        if not child.ready:
            raise UserError(f"child {key!r}: its worktree is not ready: {child.problem}")
        rel = os.path.relpath(os.path.realpath(record.cwd), os.path.realpath(project))
        inside = child.path / rel  # the same place inside the worktree, when it is there
        where = inside if not rel.startswith("..") and inside.is_dir() else child.path
        return record.replace(cwd=str(where), sandbox=child.sandbox_id), {
            "handoff": self.workflow.id,
            "handoff_key": key,
        }

    def _plan(self, launch: Launch) -> tuple[JobRecord, str]:
        opts = launch.options
        cwd = Path(self.workflow.cwd)
        if launch.nested is not None:
            from specialists.features.workflows.launch import nested_record

            name, args = launch.nested
            return nested_record(self.state_root.parent, self.workflow, name, args), "fresh"
        prompt = launch.prompt
        if opts.schema is not None and launch.prompt == opts.task:
            prompt = f"{prompt}\n\n{SCHEMA_NOTE}{json.dumps(opts.schema)}"
        agent, runner, model = opts.agent or "", opts.runner, opts.model
        if launch.continue_from is not None:  # keep the agent, model and runner it ran with
            before = self.store.read_record(launch.continue_from)
            agent, cwd, runner, model = before.specialist, Path(before.cwd), None, None
        request = JobRequest(
            agent,
            prompt,
            cwd=cwd,
            runner=runner,
            model=model,
            timeout_ms=int(opts.timeout_s * 1000) if opts.timeout_s else None,
            continue_from=launch.continue_from,
            track_bead=False,  # a workflow child reports to its workflow, not to a bead
        )
        record = plan_job(self.store, request)
        resolved = "fresh" if launch.continue_from is None else "continued"
        if opts.context == "fork" and launch.continue_from is None:
            record, resolved = self._fork(record), "fork"
        changes: dict[str, Any] = {}
        fresh_task = launch.continue_from in (None, launch.earlier)  # a reattach: the same task
        instructions = report_instructions(opts.policy()) if fresh_task else None
        if instructions:
            changes["task"] = f"{record.task}\n\n{instructions}"
        if opts.max_turns is not None:
            changes["max_turns"] = opts.max_turns
        if opts.max_tokens is not None:
            changes["max_tokens"] = opts.max_tokens
        if opts.schema is not None:
            changes["response_format"] = "json"
            if record.runner == "native":  # structured output: the final_answer tool, forced
                changes["runner_options"] = {**record.runner_options, "answer_schema": opts.schema}
        return (record.replace(**changes) if changes else record), resolved

    def _fork(self, record: JobRecord) -> JobRecord:
        """context: fork copies the session of the job that started the workflow, where
        that is honest (a native job's session, into a native child); else refused."""
        origin = self.workflow.runner_options.get("origin_job")
        hint = "use context: fresh with a self-contained task"
        if not isinstance(origin, str):
            raise UserError(
                "context: fork needs a workflow started by an agent job of ours (this one "
                "was started from outside, so there is no conversation to copy)",
                hint=hint,
            )
        parent = self.store.read_record(origin)
        status = self.store.read_status(origin)
        session = status.session_file if status else None
        if record.runner != parent.runner or not transport(parent.runner).fork:
            raise UserError(
                f"context: fork cannot copy a {parent.runner} conversation into a "
                f"{record.runner} child (only a native job's session can be copied honestly)",
                hint=hint,
            )
        if not session or not os.path.isfile(session):
            raise UserError(f"context: fork: job {origin}'s session file is missing", hint=hint)
        return record.replace(resume_session=session)

    # --- watching ------------------------------------------------------------------------

    def outcome(self, job_id: str) -> Outcome | None:
        path = self.store.job_dir(job_id) / "status.json"
        try:
            mtime = os.stat(path).st_mtime_ns
        except OSError:
            mtime = -1
        seen = self._seen.get(job_id)
        now = time.monotonic()
        if seen is not None and seen[0] == mtime and now - seen[1] < RECHECK_S:
            return None
        self._seen[job_id] = (mtime, now)
        try:
            st = current_status(self.store, job_id)
        except StoreError as exc:
            return Outcome("error", "", f"its status cannot be read: {exc.one_line()}")
        self._spent[job_id] = rollup(st)
        if st.active:
            return None
        self._seen.pop(job_id, None)
        output = self.store.read_result(job_id) or ""
        tokens = sum(int(st.tokens.get(k, 0)) for k in ("input", "output"))
        return Outcome(st.status, output, st.error, tokens)

    def spent(self, job_id: str) -> dict[str, Any] | None:
        return self._spent.get(job_id)

    def stop(self, job_id: str) -> None:
        try:
            post_request(self.store.job_dir(job_id), "stop", "its workflow stopped")
        except (OSError, UserError, StoreError) as exc:  # gone already: nothing to stop
            logging.getLogger("specialists.features.workflows").warning("stop %s: %s", job_id, exc)

    def can_continue(self, job_id: str) -> bool:
        return resumability(self.store, job_id)[0]

    def keyed_resume(self, resume: Resume) -> tuple[str, str]:
        if not isinstance(resume, KeyedResume):
            return run_resume(self.store, resume.job)
        job, agent, _entry = keyed_resume(self.store, resume.workflow, resume.key)
        return job, agent

    def finish(
        self, job_id: str, options: ChildOptions, outcome: Outcome
    ) -> tuple[Outcome, Mapping[str, Any] | None]:
        details: dict[str, Any] = {}
        record = self.store.read_record(job_id)
        project = self.state_root.parent
        handoff = record.thread.get("handoff")
        if isinstance(handoff, str):
            from specialists.features.sandbox.handoff import child_ended

            ended = child_ended(
                project, handoff, str(record.thread.get("handoff_key")), job_id=job_id
            )
            details["handoff"] = {
                "id": handoff,
                "state": ended.state,
                "patch": str(ended.patch) if ended.patch else None,
                "summary": ended.summary,
                "warnings": list(ended.warnings),
            }
        if outcome.status == "done" and (
            options.gate is not None or options.acceptance is not None
        ):
            verdict = judge(
                options.policy(),
                answer=outcome.output,
                cwd=Path(record.cwd),
                project=project,
                job_dir=self.store.job_dir(job_id),
            )
            details["acceptance"] = verdict.to_dict()
            if not verdict.accepted:
                outcome = Outcome("error", outcome.output, verdict.reason)
        if outcome.status == "done" and options.output is not None:
            try:
                written = write_output(
                    project, options.output, outcome.output, f"child {options.key!r}"
                )
            except UserError as exc:
                outcome = Outcome("error", outcome.output, exc.message)
            else:
                details["output_file"] = str(written)
        return outcome, details or None

    def read_output(self, job_id: str) -> str | None:
        try:
            return self.store.read_result(job_id)
        except (StoreError, OSError):
            return None
