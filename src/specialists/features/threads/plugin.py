"""What threads add to a job's life: a thread or sandboxed job's close (R-S9), rendered from
its end before its final status, so a parent that sees its child ended finds the
child_closed in its inbox; from crash recovery alike (a dead supervisor never closes it)."""

from __future__ import annotations

from specialists.base.ops import register_noun
from specialists.native.agent_table import register_tools
from specialists.supervise.hooks import HOOKS

TYPE_CHECKING = False
if TYPE_CHECKING:
    from specialists.events.told import Told
    from specialists.supervise.hooks import JobEnd


def register() -> None:
    register_noun("threads", "specialists.features.threads.verbs:THREADS")
    register_tools("specialists.features.threads.verbs:THREADS")
    HOOKS.finalize.append(_commit_sandbox)
    HOOKS.answered.append(_checkpoint)
    HOOKS.ended.append(_closed)


def _closed(ending: JobEnd) -> list[Told]:
    """A thread's close (told again when it closed already, so its parent gets no other
    word of the end); after a crash, a `--sandbox` job's work committed too (its
    supervisor's `_commit_sandbox` never ran)."""
    record = ending.record
    if not (record.thread or (ending.recovered and record.sandbox)):
        return []
    from specialists.features.threads.closing import close_ended

    ended = (ending.final, ending.error)
    told = close_ended(ending.store.root, record.id, ending.now_ms, ended)
    return [told] if told else []


def _commit_sandbox(ending: JobEnd) -> tuple[str, str | None] | None:
    """Commit a `--sandbox` job's work (a thread's is committed by its close). A job that would
    end `done` with its work left uncommitted ends `error` instead, saying why and where the
    work is: the person looks at the status, not at supervisor.log."""
    if not ending.record.sandbox or ending.record.thread:
        return None
    from specialists.base.errors import SpecialistsError
    from specialists.features.threads.closing import finish_sandbox
    from specialists.features.threads.state import job_store

    try:
        root = ending.store.root
        finish = finish_sandbox(root, job_store(root).read_record(ending.record.id), None)
        problem, summary = finish.get("error"), finish.get("summary")
    except (SpecialistsError, OSError) as exc:  # its job record became unreadable
        problem, summary = f"sandbox finalization failed: {exc}", None
    if summary:
        said = summary if summary.startswith("committed as") else f"sandbox: {summary}"
        ending.event("notice", message=said)
    if problem is None:
        return None
    ending.event("notice", message=problem)
    if ending.final == "done":
        return "error", f"the agent finished, but its work was not committed: {problem}"
    return None


def _checkpoint(answered: JobEnd) -> None:
    """auto_commit: checkpoint_on_waiting (the Node original's): the sandbox's work is
    committed at each answer the job then waits after, and the feed says so."""
    if not answered.record.commit_on_waiting:
        return
    from specialists.base.errors import SpecialistsError
    from specialists.features.threads.closing import checkpoint_sandbox

    try:
        made = checkpoint_sandbox(answered.store.root, answered.record, answered.answers)
    except (SpecialistsError, OSError) as exc:
        answered.event("notice", message=f"checkpoint commit failed: {exc}")
        return
    if made:
        answered.event("notice", message=made)
