"""A supervisor that dies mid-job is replaced by one that reattaches (supervise/checkpoint.py),
on the in-process loopback node: no Ray, real processes, real git, the real supervisor. The
same path under Ray, started by crash recovery after kill -9, is in
tests/integration/test_ray_executor.py."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Any

import pytest

from specialists.executors.job import RemoteJobRunner
from specialists.executors.relay import RelayRunner
from specialists.executors.testing import LoopbackConnector, LoopbackNode
from specialists.runners.command import CommandRunner
from specialists.store.jobs import JobStore
from specialists.store.news import NEWS
from specialists.store.recovery import CRASHED, is_crash, recover_if_dead
from specialists.supervise.beginning import begin
from specialists.supervise.checkpoint import CHECKPOINT_FILE
from specialists.supervise.supervisor import Supervisor
from tests.integration.test_executor_loopback import SETTINGS, git
from tests.support.jobs import new_job, wait_for

PY = sys.executable

# The agent: says it started (once per start, outside the checkout), prints a line once a
# file is there, waits for another file, prints another line, and exits 0.
AGENT = """
import os, sys, time
open(os.environ["STARTS"], "a").write("start\\n")
sys.stdin.read()
while not os.path.exists(os.environ["FIRST"]):
    time.sleep(0.02)
print("first line", flush=True)
while not os.path.exists(os.environ["GO"]):
    time.sleep(0.02)
print("second line", flush=True)
"""


@pytest.fixture
def project() -> Path:
    root = Path(os.environ["SPECIALISTS_PROJECT_ROOT"])
    (root / ".gitignore").write_text(".specialists/\n")
    (root / "f.txt").write_text("x\n")
    git(root, "add", "-A")
    git(root, "commit", "-qm", "base")
    return root


@pytest.fixture
def node(tmp_path: Path):
    n = LoopbackNode(tmp_path / "node")
    yield n
    n.close()


def events_of(store: JobStore, job_id: str) -> list[dict[str, Any]]:
    text = (store.job_dir(job_id) / "events.jsonl").read_text()
    return [json.loads(line) for line in text.splitlines()]


def command_job(store: JobStore, project: Path, tmp_path: Path):
    os.environ["STARTS"], os.environ["GO"] = str(tmp_path / "starts"), str(tmp_path / "go")
    os.environ["FIRST"] = str(tmp_path / "first")
    options = {"command": PY, "args": ["-c", AGENT]}
    settings = {**SETTINGS, "forward_env": ["STARTS", "GO", "FIRST"]}
    return new_job(store, project, runner="command", runner_options=options, executor=settings)


def supervisor(store, record, node, inner, **kw: Any) -> Supervisor:
    runner = RemoteJobRunner(inner, record.executor, LoopbackConnector(node))
    return Supervisor(store, record, runner, handle_signals=False, tick=0.02, **kw)


def test_a_successor_takes_over_the_running_command_and_each_event_is_written_once(
    project, node, tmp_path
):
    """The first supervisor checkpoints, then reads the agent's first line but dies before
    the next checkpoint. Its successor reads the line again from the node (it was never
    acknowledged) and goes on to `done`: seq has no gap and no repeat, the words are logged
    once, the answer is whole (stdout.log cut back and refilled), and the agent was started
    once."""
    store = JobStore(project / ".specialists", news=NEWS)
    record, lock = command_job(store, project, tmp_path)
    first = supervisor(store, record, node, CommandRunner())
    begin(first)
    first._step()  # the first checkpoint: nothing read yet
    checkpoint = json.loads((store.job_dir(record.id) / CHECKPOINT_FILE).read_text())
    assert checkpoint["adoptable"] and checkpoint["cursor"]["seq"] == 0
    assert json.loads((store.job_dir(record.id) / "executor.json").read_text())["proc"]
    # It reads the first line and records its event, then dies before checkpointing it.
    (tmp_path / "first").touch()
    seen: list[Any] = []
    wait_for(lambda: seen.extend(first.runner.poll(0.2)) or seen, what="the first line")
    for ev in seen:
        first.on_runner_event(ev)
    # A short block of words is logged when it ends (supervise/words.py): not yet.
    assert [e["event"] for e in events_of(store, record.id)].count("text") == 0
    first.recorder.writer.close()

    (tmp_path / "go").touch()
    second = supervisor(store, record, node, CommandRunner(), reattach=True)
    status = second.run()
    lock.release()
    assert status.status == "done", (status.error, events_of(store, record.id))
    assert store.read_result(record.id) == "first line\nsecond line\n"
    events = events_of(store, record.id)
    assert [e["seq"] for e in events] == list(range(1, len(events) + 1))
    kinds = [e["event"] for e in events]
    assert kinds.count("text") == 1 and kinds.count("starting") == 1, kinds
    assert any("reattached to the agent" in e.get("message", "") for e in events)
    assert (tmp_path / "starts").read_text() == "start\n"
    assert (store.job_dir(record.id) / "stdout.log").read_text() == "first line\nsecond line\n"


def test_a_successor_that_finds_the_agent_gone_ends_the_job_saying_so(project, node, tmp_path):
    """The node forgot the agent (its lease ran out long ago): the job ends `error` with
    that reason, not a hang."""
    store = JobStore(project / ".specialists", news=NEWS)
    record, lock = command_job(store, project, tmp_path)
    first = supervisor(store, record, node, CommandRunner())
    begin(first)
    first._step()
    first.recorder.writer.close()
    for proc_id in list(node.core.procs):
        node.call_sync("kill", proc_id, "job")
        node.call_sync("forget", proc_id)
    status = supervisor(store, record, node, CommandRunner(), reattach=True).run()
    lock.release()
    assert status.status == "error"
    assert "reattaching to the agent failed" in (status.error or "")
    assert "no longer knows the agent" in (status.error or "")


def test_a_runner_that_cannot_be_adopted_says_why_in_its_checkpoint(project, node, tmp_path):
    """A runner whose state is more than its output (here: one without adopt) writes an
    unadoptable checkpoint, and acknowledges what it reads at once."""
    store = JobStore(project / ".specialists", news=NEWS)
    record, lock = command_job(store, project, tmp_path)

    class NotAdoptable(CommandRunner):
        adopt_state = None  # type: ignore[assignment]
        adopt = None  # type: ignore[assignment]

    first = supervisor(store, record, node, NotAdoptable())
    begin(first)
    first._step()
    checkpoint = json.loads((store.job_dir(record.id) / CHECKPOINT_FILE).read_text())
    assert checkpoint == {
        "v": 2,
        "adoptable": False,
        "why": "the command runner cannot take over a running agent",
    }
    (tmp_path / "first").touch()
    (tmp_path / "go").touch()
    while not first.recorder.finished:
        first._step()
    first.recorder.writer.close()
    lock.release()
    assert first.status.status == "done"


def test_recovery_ends_an_unadoptable_remote_job_with_the_reason(project, tmp_path):
    """Recovery finds the supervisor dead and the checkpoint unadoptable: the job ends
    `error` "supervisor crashed (<why>)", which gc and beads still count as a crash."""
    store = JobStore(project / ".specialists", news=NEWS)
    record, lock = command_job(store, project, tmp_path)
    job_dir = store.job_dir(record.id)
    why = "the pi runner cannot take over a running agent"
    (job_dir / CHECKPOINT_FILE).write_text(json.dumps({"v": 1, "adoptable": False, "why": why}))
    status = store.read_status(record.id)
    assert status is not None
    status.status, status.supervisor_pid, status.supervisor_start_time = "running", 2**22, 1
    (job_dir / "status.json").write_text(json.dumps(status.to_dict()))
    lock.release()
    ended = recover_if_dead(store, record.id, status)
    assert (ended.status, ended.error) == ("error", f"{CRASHED} ({why})")
    assert is_crash(ended.error)


def test_a_relay_successor_sends_its_launch_line_only_if_the_node_never_applied_it(
    project, node, tmp_path
):
    """The relay's state is what it said last (accepts, session); the launch line goes again
    as write 1, which the node applies only if the first never arrived: here it did, so
    the relay sees one line, and the next command is numbered after it."""
    from specialists.executors.remote import RemoteHost
    from specialists.executors.travel import PathMap

    host = RemoteHost(
        node, paths=PathMap.of([]), forward_env=[], job_dir=None, job_key="k", lease_s=300
    )
    host.checkpointed = True
    code = "import sys; [print(repr(line), flush=True) for line in sys.stdin]"
    proc = host.spawn([PY, "-c", code], cwd=tmp_path)
    proc.send(b"write one\n")
    wait_for(lambda: node.core.procs[proc.proc_id]._next_in == 2, what="write 1 applied")
    adopted = host.adopt({**proc.cursor(), "seq": 0}, stderr_log=None)
    assert adopted.renumber_input(0) == 1
    adopted.send(b"write one again\n")  # number 1: already applied, dropped
    adopted.renumber_input(1)
    adopted.send(b"write two\n")
    adopted.end_input()
    lines: list[Any] = []
    wait_for(lambda: lines.extend(adopted.read(0.2)) or adopted.done, what="the exit")
    assert lines == [b"'write one\\n'", b"'write two\\n'"]
    assert RelayRunner().adopt_state() is None  # not started: nothing to adopt


def dead_supervisor_job(store: JobStore, project: Path, tmp_path: Path, checkpoint: object):
    """A job whose status says running under a supervisor that no longer exists, with
    `checkpoint` (a dict written as JSON, bytes as they are, None for none)."""
    record, lock = command_job(store, project, tmp_path)
    job_dir = store.job_dir(record.id)
    if isinstance(checkpoint, dict):
        (job_dir / CHECKPOINT_FILE).write_text(json.dumps(checkpoint))
    elif isinstance(checkpoint, bytes):
        (job_dir / CHECKPOINT_FILE).write_bytes(checkpoint)
    (job_dir / "executor.json").write_text(json.dumps({"v": 1, "proc": "p1", "node_id": "n"}))
    status = store.read_status(record.id)
    assert status is not None
    status.status, status.supervisor_pid, status.supervisor_start_time = "running", 2**22, 1
    (job_dir / "status.json").write_text(json.dumps(status.to_dict()))
    lock.release()
    return record, status


class RecordingNews:
    """News whose revive records its calls and plays a started supervisor: it keeps a copy
    of the lock's descriptor open, as the child that inherits it would."""

    def __init__(self, answer: int | str | None) -> None:
        self.answer = answer
        self.calls: list[str] = []
        self.held: list[int] = []

    def clear(self, state_dir: Path, job_id: str) -> None:
        return None

    def revive(self, state_dir: Path, job_id: str, lock_fd: int) -> int | str | None:
        self.calls.append(job_id)
        if isinstance(self.answer, int):
            self.held.append(os.dup(lock_fd))
        return self.answer


def test_recovery_hands_the_job_to_a_new_supervisor_and_a_second_reader_waits(project, tmp_path):
    """Revive says a supervisor took the job (its pid): recovery records nothing and kills
    nothing; a second reader meanwhile finds the lock held (by the new supervisor) and
    leaves the job alone, so the job is taken over once."""
    news = RecordingNews(4242)
    store = JobStore(project / ".specialists", news=news)
    record, status = dead_supervisor_job(store, project, tmp_path, {"v": 1, "adoptable": True})
    shown = recover_if_dead(store, record.id, status)
    assert shown.active and shown.supervisor_pid == 4242
    assert recover_if_dead(store, record.id, status).active
    assert news.calls == [record.id]  # the second reader could not take the lock
    saved = store.read_status(record.id)
    assert saved is not None and saved.status == "running"
    for fd in news.held:
        os.close(fd)


@pytest.mark.parametrize(
    "checkpoint",
    [None, b"{not json", b"\xff" * 10],
    ids=["none", "damaged", "binary"],
)
def test_without_a_readable_checkpoint_the_job_ends_as_a_plain_crash(project, tmp_path, checkpoint):
    """No checkpoint (a local job, or a crash before the first one) or a damaged one: the
    job ends `error` "supervisor crashed" as before, no supervisor started."""
    store = JobStore(project / ".specialists", news=NEWS)
    record, status = dead_supervisor_job(store, project, tmp_path, checkpoint)
    ended = recover_if_dead(store, record.id, status)
    assert (ended.status, ended.error) == ("error", CRASHED)


def test_a_checkpoint_planted_as_a_symlink_is_not_followed(project, tmp_path):
    """reattach.json as a link to an adoptable-looking file elsewhere: not read, so no
    supervisor is started on its word; the job ends as a plain crash."""
    store = JobStore(project / ".specialists", news=NEWS)
    record, status = dead_supervisor_job(store, project, tmp_path, None)
    elsewhere = tmp_path / "planted.json"
    elsewhere.write_text(json.dumps({"v": 1, "adoptable": True}))
    (store.job_dir(record.id) / CHECKPOINT_FILE).symlink_to(elsewhere)
    ended = recover_if_dead(store, record.id, status)
    assert (ended.status, ended.error) == ("error", CRASHED)


def test_a_checkpoint_that_cannot_be_written_is_removed_and_output_still_flows(
    project, node, tmp_path, monkeypatch
):
    """A full disk when the checkpoint is due: the old checkpoint goes (it would send a
    successor back to output the node then drops), a warning is logged, and the job still
    reads everything to `done` (no backpressure stall)."""
    import errno

    from specialists.supervise import checkpoint

    store = JobStore(project / ".specialists", news=NEWS)
    record, lock = command_job(store, project, tmp_path)
    first = supervisor(store, record, node, CommandRunner())
    begin(first)
    first._step()
    path = store.job_dir(record.id) / CHECKPOINT_FILE
    assert path.exists()

    def full(*args: Any, **kwargs: Any) -> None:
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(checkpoint, "write_atomic", full)
    (tmp_path / "first").touch()
    stdout = store.job_dir(record.id) / "stdout.log"
    while b"first line" not in stdout.read_bytes():
        first._step()  # the step that reads it tries to checkpoint it, and cannot
    assert not path.exists()
    (tmp_path / "go").touch()
    while not first.recorder.finished:
        first._step()
    first.recorder.writer.close()
    lock.release()
    assert first.status.status == "done"
    assert store.read_result(record.id) == "first line\nsecond line\n"
