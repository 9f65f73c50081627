"""The parent's side: messages to a running child (R-H7) and squashing its sandbox (R-S5..R-S7).

Both act only on the caller's own direct children. A squash into a sandboxed caller commits
(unless `commit` is false); into the root working copy it stages only and needs the user's
explicit confirmation, which a job of ours (nobody at a terminal) can never give (R-S5, R-S8).
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import TYPE_CHECKING, Literal

from specialists.base.errors import UserError
from specialists.features.sandbox.backend import SandboxBackend, SquashOutcome
from specialists.features.threads.closing import settled_view
from specialists.features.threads.records import ThreadStore
from specialists.features.threads.state import (
    Child,
    auto_commit_of,
    child_state,
    child_view,
    direct_child,
    job_store,
    position_of,
)
from specialists.store.control import post_request

if TYPE_CHECKING:
    from specialists.store.jobs import JobStore

MessageMode = Literal["steer", "follow_up"]


def send_message(
    state_root: Path, owner: str, thread_id: object, message: str, mode: MessageMode
) -> str:
    """Post `message` to the caller's running direct child; the control request's id."""
    threads, jobs = ThreadStore(state_root), job_store(state_root)
    child = direct_child(threads, jobs, owner, thread_id)
    if child.phase != "running" or child.status is None or not child.status.active:
        state = {"closing": "has begun closing", "closed": "is closed"}.get(
            child.phase, "has ended"
        )
        raise UserError(
            f"thread {child.record.id} {state}; it cannot receive messages",
            hint="spawn a new thread for more work",
        )
    from specialists.features.threads.transports import transport

    takes = transport(child.record.runner).messages
    if mode not in takes:
        said = " or ".join(sorted(takes)) if takes else "no messages at all"
        raise UserError(
            f"thread {child.record.id} runs on {child.record.runner}, which takes {said}, "
            f"not a {mode}",
            hint="spawn a new thread with what it needs" if not takes else f"send it as {said}",
        )
    return post_request(jobs.job_dir(child.record.job_id), mode, message).id


WIND_DOWN_WAIT_S = 15.0  # a closed child's job writes its final status right after the close


def _wound_down(threads: ThreadStore, jobs: JobStore, child: Child) -> Child:
    """A child whose close completed sends child_closed before its job's final status (so a
    parent woken by the end finds it): a squash asked for in between waits for that status,
    bounded, instead of refusing the child as still finalizing."""
    deadline = time.monotonic() + WIND_DOWN_WAIT_S
    while child.phase == "closed" and child.status is not None and child.status.active:
        if time.monotonic() > deadline:
            break
        time.sleep(0.05)
        child = child_view(threads, jobs, child.record)
    return child


def squash_child(
    state_root: Path,
    owner: str,
    job_id: str | None,
    cwd: Path,
    thread_id: object,
    *,
    sandboxes: SandboxBackend,
    commit: bool,
    confirm: bool,
) -> SquashOutcome:
    threads, jobs = ThreadStore(state_root), job_store(state_root)
    position = position_of(state_root, owner, job_id)
    child = direct_child(threads, jobs, owner, thread_id)
    if child.record.sandbox is None:
        raise UserError(
            f"thread {child.record.id} has no sandbox; its changes are already where it worked"
        )
    sandbox = sandboxes.get(child.record.sandbox)
    if sandbox is None:
        raise UserError(f"thread {child.record.id}'s sandbox {child.record.sandbox} has no record")
    child = settled_view(threads, jobs, child.record)  # a crash nobody saw: closed now
    child = _wound_down(threads, jobs, child)
    auto_commit = auto_commit_of(jobs, child.record.job_id)
    if position.sandbox:
        target_sb = sandboxes.get(position.sandbox)
        if target_sb is None:
            raise UserError(f"your sandbox {position.sandbox} has no record")
        return sandboxes.squash_into(
            target_sb.path,
            sandbox,
            child=child_state(child),
            commit=commit,
            auto_commit=auto_commit,
        )
    if confirm and position.job is not None:
        raise UserError(
            "a job cannot confirm a squash into the user's working copy: nobody is there to ask",
            hint=f"the user can squash it with `specialists sandboxes squash {child.record.id}`",
        )
    repo = sandboxes.detect(cwd)
    target = repo.toplevel if repo is not None else cwd
    return sandboxes.squash_into(
        target,
        sandbox,
        child=child_state(child),
        commit=False,
        auto_commit=auto_commit,
        confirmed=confirm,
    )
