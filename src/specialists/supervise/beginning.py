"""How a supervisor takes its job up: `begin` it (the pre-scripts, the companions, a pause's
hold, the agent started), or `take_over` a job whose supervisor died (a remote agent it
reattaches to from its checkpoint: checkpoint.py; a local job paused with no agent running,
which a pause's feature waits out before the agent continues its session)."""

from __future__ import annotations

import os
from typing import TYPE_CHECKING

from specialists.base.errors import SpecialistsError
from specialists.runners.base import HostedRunner
from specialists.store.jobs import now_ms
from specialists.store.liveness import process_start_time
from specialists.store.records import JobStatus
from specialists.supervise import news, wake
from specialists.supervise.agent_spec import launch_spec
from specialists.supervise.checkpoint import CHECKPOINT_FILE, Replay, load, written_after
from specialists.supervise.job_state import JobState
from specialists.supervise.recorder import open_status
from specialists.supervise.scripts import run_pre_scripts
from specialists.supervise.steps import StepInterrupted

if TYPE_CHECKING:
    from specialists.supervise.supervisor import Supervisor


def begin(sup: Supervisor) -> None:
    rec, st, pid, j = sup.record, sup.status, os.getpid(), sup.recorder
    open_status(st, rec, pid=pid, start_time=process_start_time(pid), now_ms=now_ms())
    j.event("starting", specialist=rec.specialist, model=rec.model, runner=rec.runner, id=rec.id)
    if j.startup_notice:
        j.notice(j.startup_notice)
    sup.save(force=True)
    sup.guard.run("owners' timers", lambda: _look_at_owners(sup))
    task, fatal = rec.task, None
    try:
        with sup.guard.interruptible():
            task, failure, required = run_pre_scripts(rec, j.event)
        if failure:
            st.error = failure
            fatal = failure if required else None
    except StepInterrupted:
        j.notice("pre-scripts interrupted by a signal")
    if sup.guard.signal is not None:
        sup.finish("cancelled", None)
        return
    if fatal is not None:  # a required pre-script failed: the agent never starts
        sup.finish("error", fatal)
        return
    for companion in sup.companions:
        sup.guard.run("companion", companion.began)
    if j.finished:  # a companion ended it before it began (a spend ceiling reached)
        return
    if not all(pause.hold() for pause in sup.pauses):
        return  # it ended while its start was held
    try:
        sup.runner.start(launch_spec(rec, j.job_dir, task, sup.spend))
    except SpecialistsError as exc:
        sup.finish("error", exc.one_line())
        return
    except OSError as exc:
        sup.finish("error", f"could not start the agent: {exc}")
        return
    agent = sup.runner.handle
    st.pid, st.agent_start_time, st.session_file = agent.pid, agent.start_time, agent.session_ref
    st.status = st.current_event = "running"
    sup.run_started = sup.clock()
    sup.save(force=True)


def _look_at_owners(sup: Supervisor) -> None:
    """R-T4: timers whose front is gone fire when any front next sees their owner."""
    owners = [sup.owner, *sup.record.owner]
    for problem in news.fire_owners_due(sup.store.root, owners, sup.now_ms()):
        sup.guard.report(problem)  # each distinct problem once


def take_over(sup: Supervisor) -> None:
    """Take the job over from its last checkpoint (instead of `begin`)."""
    j, runner = sup.recorder, sup.runner
    if not isinstance(runner, HostedRunner):  # a local job paused (at a usage limit)
        _take_over_pause(sup)
        return
    assert sup.checkpoints is not None
    checkpoint = load(j.job_dir, sup.record.runner)
    if isinstance(checkpoint, str):
        sup.finish("error", f"supervisor crashed (its checkpoint {checkpoint})")
        return
    try:
        j.status = JobStatus.from_dict(dict(checkpoint["status"]), source=CHECKPOINT_FILE)
        sup.state = JobState.from_dict(checkpoint["job"], sup.clock())
        if "words" in checkpoint["job"]:  # absent from an older checkpoint
            j.words.restore(checkpoint["job"]["words"])
        cursor = checkpoint["cursor"]
        events = int(checkpoint["events"])
    except (SpecialistsError, KeyError, TypeError, ValueError) as exc:
        sup.finish("error", f"supervisor crashed (its checkpoint is unreadable: {exc!r})")
        return
    sup.between.recheck_at = sup.clock()  # a job waiting for work looks again at once
    st = _adopt(sup, j.status)
    since = max(0, now_ms() - int(checkpoint.get("run_started_ms") or st.started_at_ms))
    sup.run_started = sup.clock() - since / 1000
    written = written_after(j.job_dir, events)
    try:
        runner.adopt(launch_spec(sup.record, j.job_dir, sup.record.task), checkpoint)
    except (SpecialistsError, OSError) as exc:
        why = exc.one_line() if isinstance(exc, SpecialistsError) else str(exc)
        sup.finish("error", f"supervisor crashed; reattaching to the agent failed: {why}")
        return
    except (KeyError, TypeError, ValueError) as exc:
        why = f"its checkpoint is damaged: {exc!r}"
        sup.finish("error", f"supervisor crashed; reattaching to the agent failed: {why}")
        return
    if cursor is None:
        j.notice(
            f"the supervisor restarted and took the job over between runs on the "
            f"{runner.node} (no agent process was running)"
        )
    else:
        j.notice(
            f"the supervisor restarted and reattached to the agent (pid {cursor['pid']}) "
            f"on the {runner.node}; its output is read again from item {cursor['seq']} "
            f"({len(written)} event(s) after the checkpoint are not written twice)"
        )
    j.replay = Replay(written)
    sup.checkpoints.mark = None
    sup.save(force=True)


def _adopt(sup: Supervisor, st: JobStatus) -> JobStatus:
    """The status the job writes from now on, with this process as its supervisor."""
    pid = os.getpid()
    sup.recorder.status = st
    for companion in sup.companions:
        companion.use_status(st)
    st.supervisor_pid, st.supervisor_start_time = pid, process_start_time(pid)
    return st


def _take_over_pause(sup: Supervisor) -> None:
    """The supervisor of a job paused with no agent running died (store/recovery.py; this
    one was started by supervise/start.py `restart`, holding the lock): a pause's feature
    waits out the pause here, then the agent starts, continuing its session."""
    rec, j = sup.record, sup.recorder
    found = sup.store.read_status(rec.id)
    if found is None or found.paused_until_ms is None or not sup.pauses:
        sup.finish("error", "supervisor crashed (its job was no longer paused)")
        return
    st = _adopt(sup, found)
    sup.state.delivery = wake.delivery_mode(rec, True)
    if rec.keep_alive:  # its answers so far, numbered on (answers/NNN.txt)
        sup.state.last_answer = sup.store.latest_answer(rec.id)
        runs = [e.get("runs") for e in sup.store.read_events(rec.id)]
        sup.state.answers = max((n for n in runs if isinstance(n, int)), default=0)
    task = sup.pauses[0].take_over()
    if task is None:
        return  # it ended while paused
    resumed = rec.replace(resume_session=st.session_file or rec.resume_session)
    try:
        sup.runner.start(launch_spec(resumed, j.job_dir, task, sup.spend))
    except (SpecialistsError, OSError) as exc:
        why = exc.one_line() if isinstance(exc, SpecialistsError) else str(exc)
        sup.finish("error", f"could not start the agent after the pause: {why}")
        return
    st.pid, st.agent_start_time = sup.runner.handle.pid, sup.runner.handle.start_time
    sup.between.running_again(False, "follow_up")
    sup.save(force=True)
