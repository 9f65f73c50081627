"""The resolver: a specialist job that resolves one merge queue member's conflict.

It works in a sandbox of its own, `<queue id>-<member>r<round>`, branched from the queue's
sandbox at the tip the member conflicted with, holding the member's change merged in without
a commit, git's conflict markers where it could not merge (queue_git.start_conflict). The job
is started through the one start path, owned by the queue's owner (who hears when it ends);
its sandbox is committed when it ends, like any sandboxed job's. Then (plugin.py, or the next
`advance`) the queue checks that no marker is left, makes that commit the member's rebased
branch, and retires the resolver's sandbox: its commit lives on in the member's branch.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from specialists.features.sandbox import queue_git as qgit
from specialists.features.sandbox.backend import Sandbox, SandboxError

if TYPE_CHECKING:
    from specialists.features.sandbox.git import GitSandbox
    from specialists.features.sandbox.queue import Member
    from specialists.features.sandbox.queue_driver import Driver

PROMPT = """\
Resolve a merge conflict in this git worktree ({path}).

The merge queue {queue} merges sibling sandboxes one at a time. The work of {branch}{who} was
merged onto the queue's result, which meanwhile took in other changes to the same files. Git
could not merge these files and left conflict markers (<<<<<<< ======= >>>>>>>) in them:

{paths}

Edit each file so that it keeps the intent of both sides: the queue's current version and
the change of {branch}. Its change alone is `git diff {base} {tip}`; what the queue took in
meanwhile is `git log --oneline {base}..HEAD`. Remove every conflict marker, change nothing
else, and do not commit: your work is committed when you end. If a conflict needs a decision
you cannot make, leave its markers in place and say why in your answer.
"""


def start_resolver(driver: Driver, m: Member, onto: str, paths: tuple[str, ...]) -> None:
    """Make the resolver's sandbox (if a killed attempt did not), put the conflict in it, and
    start the job (or find the one a killed attempt started). Journals the job id."""
    gs = driver.gs
    r = m.resolver
    assert r is not None
    sandbox = gs.get(r["sandbox"]) or gs.create(r["sandbox"], base=driver.integration())
    member = gs.get(m.sandbox)
    if member is None:
        raise SandboxError(f"sandbox {m.sandbox} has no record")
    conflicted = qgit.start_conflict(gs, sandbox, m.tip) if _fresh(gs, sandbox) else paths
    r["paths"] = list(conflicted or paths)
    # A killed attempt may have started it before it journaled the id.
    job = jobs_in(driver.queues.state_root, {sandbox.id}).get(sandbox.id)
    if job is None:
        job = _start_job(driver, m, member, sandbox, r["paths"])
    r["job"] = job
    driver.save()
    driver.log("resolver_started", m, job=job, sandbox=sandbox.id, paths=r["paths"][:50])


def _fresh(gs: GitSandbox, sandbox: Sandbox) -> bool:
    """Nothing merged into the resolver's sandbox yet (its index is its HEAD)."""
    return gs.index_is(sandbox.path, "HEAD") and not gs.run(sandbox.path, "ls-files", "-u").stdout


def _start_job(
    driver: Driver, m: Member, member: Sandbox, sandbox: Sandbox, paths: list[str]
) -> str:
    from specialists.store.jobs import JobStore
    from specialists.store.news import NEWS
    from specialists.supervise.plan import JobRequest, plan_job
    from specialists.supervise.start import start

    q = driver.q
    store = JobStore(driver.queues.state_root, news=NEWS)
    who = f" (the work of job {m.job})" if m.job else ""
    prompt = PROMPT.format(
        path=sandbox.path,
        queue=q.id,
        branch=member.branch,
        who=who,
        paths="\n".join(f"- {p}" for p in paths[:200]),
        base=member.base_sha,
        tip=m.tip,
    )
    assert q.resolver is not None
    request = JobRequest(q.resolver, prompt, cwd=sandbox.path, track_bead=False)
    warnings: list[str] = []
    record = plan_job(store, request, warnings=warnings)
    record = record.replace(sandbox=sandbox.id, owner=[q.owner] if q.owner else [])
    # Keyed by its sandbox: a queue step retried after a crash finds the resolver it started.
    key = f"merge-resolver:{q.id}:{sandbox.id}"
    return start(store, record, key=key, housekeep=True, warnings=warnings).id


def jobs_in(state_root: Path, sandbox_ids: set[str]) -> dict[str, str]:
    """The newest job that worked in each of `sandbox_ids`, in one pass over the jobs."""
    from specialists.base.errors import SpecialistsError
    from specialists.store.jobs import JobStore

    jobs = JobStore(state_root, news=None)
    found: dict[str, str] = {}
    for job_id in reversed(jobs.list_ids()):
        if len(found) == len(sandbox_ids):
            break
        try:
            sandbox = jobs.read_record(job_id).sandbox
        except (SpecialistsError, OSError, ValueError):
            continue
        if sandbox in sandbox_ids and sandbox not in found:
            found[sandbox] = job_id
    return found
