"""The proc runner with real `sh -c` processes; its ladder and watch timing on a fake clock.

The runner is pumped directly (no supervisor): what it reports, what it writes (output.log,
proc.json) and which job_match events reach the owner's inbox. Real seconds are never
waited for a timer: the fake clock is advanced past the 3 s grace, the debounce or the
timeout, and the real process is only waited for where it has real work to do.
"""

from __future__ import annotations

import shutil
import signal
import sys
from pathlib import Path

import pytest

from specialists.base.clock import FakeClock
from specialists.base.errors import UserError
from specialists.features.procs.exit import read_summary
from specialists.features.procs.runner import CANCEL_GRACE_S, ProcRunner
from specialists.features.procs.spec import OUTPUT_LOG, Tether, WatchSettings
from specialists.runners.base import Abort, AgentExited, Kill, RunFinished, RunnerEvent, Terminate
from specialists.store.jobs import JobStore
from specialists.store.liveness import process_start_time
from tests.support.driving import acts, of
from tests.support.jobs import control_requests
from tests.support.processes import alive, killed_after, wait_dead
from tests.support.procs import events, proc_spec
from tests.support.waiting import wait_until

PY = sys.executable


class Pumped:
    """A runner started on a fake clock, its events collected as it is pumped."""

    def __init__(self, tmp_path: Path, command: str, **kw: object) -> None:
        self.clock = FakeClock()
        self.runner = ProcRunner(clock=self.clock)
        self.spec = proc_spec(tmp_path, command, **kw)  # type: ignore[arg-type]
        self.runner.start(self.spec)
        self.events: list[RunnerEvent] = []

    @property
    def log(self) -> str:
        return (self.spec.job_dir / OUTPUT_LOG).read_text()

    def pump(self) -> list[RunnerEvent]:
        self.events += self.runner.poll(0.02)
        return self.events

    def until(self, condition: object, what: str) -> None:
        def check() -> bool:
            self.pump()
            return bool(condition())  # type: ignore[operator]

        wait_until(check, what=what, interval=0)

    def until_log(self, text: str) -> None:
        self.until(lambda: text in self.log, f"{text!r} in output.log")

    def until_exit(self) -> AgentExited:
        self.until(lambda: of(self.events, AgentExited), "the runner to report the exit")
        return of(self.events, AgentExited)[0]

    def finished(self) -> RunFinished:
        (done,) = of(self.events, RunFinished)
        return done


# --- how a command ends -----------------------------------------------------------------------


def test_a_passing_command_answers_with_the_tail_of_its_output(tmp_path: Path) -> None:
    p = Pumped(tmp_path, "echo one; echo two >&2; printf three")
    assert p.until_exit().exit_code == 0
    assert p.finished().text == "one\ntwo\nthree" and p.finished().error is None
    assert p.log == "one\ntwo\nthree"  # stderr merged; a last line without newline kept
    summary = read_summary(p.spec.job_dir)
    assert summary is not None and summary.kind == "exited" and summary.exit_code == 0
    assert (summary.lines, summary.bytes, summary.logged) == (3, 13, 13)
    assert (p.spec.job_dir / OUTPUT_LOG).stat().st_mode & 0o777 == 0o600


def test_a_failing_command_reports_its_code_and_last_line(tmp_path: Path) -> None:
    p = Pumped(tmp_path, "echo working; echo 'no such target' >&2; exit 3")
    assert p.until_exit().exit_code == 3
    assert p.finished().error == "command exited with code 3: no such target"
    summary = read_summary(p.spec.job_dir)
    assert summary is not None and summary.kind == "exited" and summary.exit_code == 3


def test_stdout_and_stderr_are_logged_in_arrival_order(tmp_path: Path) -> None:
    code = "import sys\nfor n in range(200):\n    s = (sys.stdout, sys.stderr)[n % 2]\n"
    code += "    s.write(f'{n}\\n'); s.flush()\n"
    p = Pumped(tmp_path, f'{PY} -c "{code}"')
    p.until_exit()
    assert p.log.split() == [str(n) for n in range(200)]


def test_a_command_killed_by_a_signal_is_reported_as_such(tmp_path: Path) -> None:
    p = Pumped(tmp_path, "kill -SEGV $$")
    assert p.until_exit().signal == signal.SIGSEGV
    summary = read_summary(p.spec.job_dir)
    assert summary is not None and (summary.kind, summary.signal) == ("signaled", "SIGSEGV")


def test_the_command_gets_its_owner_not_a_job_identity(tmp_path: Path) -> None:
    """A `specialists run` inside a background command is addressed to the session that
    started the command, not to the proc job (whose inbox nobody reads)."""
    p = Pumped(tmp_path, 'echo "owner=$SPECIALISTS_OWNER job=${SPECIALISTS_JOB_ID:-none}"')
    p.until_exit()
    assert p.log == "owner=cli-tests job=none\n"


# --- cancel (R-J8) ------------------------------------------------------------------------------


def test_cancel_kills_a_grandchild_that_ignores_sigterm_at_the_sigkill_step(
    tmp_path: Path,
) -> None:
    """SIGTERM ends the shell at once; its child ignores SIGTERM and keeps the group alive,
    so the job waits (no exit reported) until the SIGKILL step, 3 s later on the job's
    clock, kills the group although its shell is long gone."""
    with killed_after() as pids:
        p = Pumped(
            tmp_path,
            "sh -c 'trap \"\" TERM; echo child $$; while :; do sleep 0.05; done' & wait",
        )
        p.until_log("child ")
        child = int(p.log.split()[1])
        pids.append(child)
        p.runner.send(Abort())
        p.until(lambda: p.runner._proc is not None and p.runner._proc.done, "the shell's exit")
        for _ in range(20):
            p.pump()
        assert alive(child) and not of(p.events, AgentExited)
        p.clock.advance(CANCEL_GRACE_S)
        assert p.until_exit() is not None
        wait_dead(child)
    summary = read_summary(p.spec.job_dir)
    assert summary is not None and summary.kind == "cancelled"
    assert p.finished().error == "cancelled"


def test_a_command_that_obeys_sigterm_ends_without_waiting_for_the_grace(tmp_path: Path) -> None:
    p = Pumped(tmp_path, "trap 'echo bye; exit 0' TERM; echo up; while :; do sleep 0.05; done")
    p.until_log("up")
    p.runner.send(Abort())
    p.until_exit()  # the fake clock never moved: no SIGKILL was needed
    # sh may report its `sleep`, which the group's SIGTERM also ended, as "Terminated".
    assert p.log.startswith("up\n") and p.log.endswith("bye\n")


def test_a_second_cancel_sends_no_signal(tmp_path: Path) -> None:
    p = Pumped(tmp_path, "trap 'echo TERM' TERM; echo up; while :; do sleep 0.05; done")
    p.until_log("up")
    proc = p.runner._proc
    assert proc is not None
    sent: list[int] = []
    real = proc.signal_group

    def recording(sig: int) -> None:
        sent.append(sig)
        real(sig)

    proc.signal_group = recording  # type: ignore[method-assign]
    p.runner.send(Abort())
    p.runner.send(Abort())  # bg_cancel twice
    p.runner.send(Terminate())  # the supervisor's own ladder, 3 s into a stop
    p.until_log("TERM")
    assert sent == [signal.SIGTERM]
    p.clock.advance(CANCEL_GRACE_S)
    p.until_exit()
    assert sent == [signal.SIGTERM, signal.SIGKILL]


def test_kill_reaches_what_the_command_left_behind(tmp_path: Path) -> None:
    """A shell that exits at once ends the job promptly even though its child holds the
    output pipe; the supervisor's ending then kills the child (Kill after the exit)."""
    with killed_after() as pids:
        p = Pumped(tmp_path, "sleep 30 & echo $!")
        p.until_exit()
        child = int(p.log.split()[0])
        pids.append(child)
        assert alive(child)
        p.runner.send(Kill())
        wait_dead(child)


# --- timeout ----------------------------------------------------------------------------------


def test_a_timeout_runs_the_ladder_and_says_timeout(tmp_path: Path) -> None:
    p = Pumped(tmp_path, "echo started; sleep 30", timeout_ms=2000)
    p.until_log("started")
    p.clock.advance(1.9)
    for _ in range(5):
        p.pump()
    assert not of(p.events, AgentExited)
    p.clock.advance(0.1)
    p.until_exit()
    assert p.finished().error == "timeout after 2s"
    summary = read_summary(p.spec.job_dir)
    assert summary is not None and summary.kind == "timeout" and "2 s" in summary.reason


def test_the_timeout_stops_when_the_shell_exits(tmp_path: Path) -> None:
    """The shell exits at once; a child it left keeps writing 20 MB to the inherited pipe, so
    the drain goes on (up to the process seam's limit). However far the clock moves during
    that drain, the job is not a timeout: the limit counts the shell's run only."""
    writer = f"{PY} -c \"import os; [os.write(1, b'x' * 65536) for _ in range(320)]\""
    p = Pumped(tmp_path, f"{writer} & exit 0", timeout_ms=1000)

    def drained_with_time_flying() -> bool:
        if p.runner._exited_at is not None:
            p.clock.advance(10)
        return bool(of(p.events, AgentExited))

    p.until(drained_with_time_flying, "the runner to report the exit")
    summary = read_summary(p.spec.job_dir)
    assert summary is not None and summary.kind == "exited" and summary.exit_code == 0


# --- watch patterns on the fake clock ------------------------------------------------------------


def _producer(lines: list[str]) -> str:
    text = "\\n".join(lines)
    return f"printf '{text}\\n'; echo __written__; sleep 30"


def test_matches_wait_for_quiet_then_arrive_as_one_job_match(tmp_path: Path) -> None:
    p = Pumped(tmp_path, _producer(["ok", "ERROR one", "fine", "ERROR two"]), watch=("ERROR",))
    p.until_log("__written__")
    for _ in range(5):
        p.pump()
    assert events(tmp_path, "job_match") == []  # 0 ms of quiet so far on the job's clock
    p.clock.advance(1.0)
    p.pump()
    (match,) = events(tmp_path, "job_match")
    assert match.body.splitlines() == [
        f"job {p.spec.job_id} (" + _label(p) + "): 2 matching lines (lines 2-4)",
        "ERROR one",
        "ERROR two",
    ]
    assert match.id == f"bg-{p.spec.job_id}.0badc0de:job_match:1"
    assert match.source.tool == "bg_run" and match.source.call_id == "call-1"
    p.runner.send(Kill())


def _label(p: Pumped) -> str:
    from specialists.features.procs.spec import ProcOptions

    return ProcOptions.from_dict(p.spec.options).label


def test_a_full_batch_goes_at_once(tmp_path: Path) -> None:
    settings = WatchSettings(batch_lines=3)
    lines = [f"ERROR {n}" for n in range(7)]
    p = Pumped(tmp_path, _producer(lines), watch=("ERROR",), settings=settings)
    p.until_log("__written__")
    p.pump()
    assert [len(e.body.splitlines()) - 1 for e in events(tmp_path, "job_match")] == [3, 3]
    p.clock.advance(1.0)
    p.pump()
    assert [len(e.body.splitlines()) - 1 for e in events(tmp_path, "job_match")] == [3, 3, 1]
    p.runner.send(Kill())


@pytest.mark.parametrize("associative", [False, True])
def test_the_rate_limit_counts_what_it_holds_back_unless_associative(
    tmp_path: Path, associative: bool
) -> None:
    settings = WatchSettings(batch_lines=1, per_min=2)
    lines = [f"ERROR {n}" for n in range(5)]
    p = Pumped(
        tmp_path, _producer(lines), watch=("ERROR",), settings=settings, associative=associative
    )
    p.until_log("__written__")
    p.pump()
    sent = events(tmp_path, "job_match")
    assert len(sent) == (5 if associative else 2)
    p.runner.send(Abort())
    p.until_exit()
    summary = read_summary(p.spec.job_dir)
    assert summary is not None and summary.suppressed == (0 if associative else 3)
    assert summary.matched == 5


def test_a_pathological_pattern_does_not_freeze_the_runner(tmp_path: Path) -> None:
    """`(a+)+$` against lines of a's ending in '!' backtracks without end. Three lines time
    out (50 ms each), watching stops, and the command's other 197 lines cost nothing."""
    cmd = f"{PY} -c \"print(('a' * 5000 + '!\\n') * 200, end='')\"; echo __written__; sleep 30"
    p = Pumped(tmp_path, cmd, watch=(r"(a+)+$",))
    p.until_log("__written__")
    p.until(lambda: acts(p.events, "notice"), "the notice that watching stopped")
    assert (
        "watching stopped: 3 lines took over 50 ms" in acts(p.events, "notice")[0].fields["message"]
    )
    p.runner.send(Abort())
    p.until_exit()
    summary = read_summary(p.spec.job_dir)
    assert summary is not None and summary.lines == 201 and summary.watch_stopped


# --- tether, isolate ---------------------------------------------------------------------------


def test_a_lost_tether_asks_the_supervisor_to_stop(tmp_path: Path) -> None:
    import subprocess

    session = subprocess.Popen(["sleep", "30"])
    try:
        start = process_start_time(session.pid)
        assert start is not None
        tether = Tether("process", pid=session.pid, start=start)
        p = Pumped(tmp_path, "echo up; sleep 30", tether=tether)
        p.until_log("up")
        p.clock.advance(1.0)
        p.pump()
        store = JobStore(p.spec.job_dir.parent.parent, news=None)
        assert control_requests(store, p.spec.job_dir.name) == []
        session.kill()
        session.wait()
        p.clock.advance(1.0)
        p.pump()
        (request,) = control_requests(store, p.spec.job_dir.name)
        assert request["kind"] == "stop"
        p.runner.send(Abort())  # what the supervisor does with it
        p.until_exit()
        summary = read_summary(p.spec.job_dir)
        assert summary is not None and summary.kind == "cancelled"
        assert summary.reason == f"cancel_on_exit: process {session.pid} ended"
    finally:
        session.kill()


def test_isolate_without_bwrap_fails_closed(tmp_path: Path) -> None:
    runner = ProcRunner()
    spec = proc_spec(tmp_path, "touch made-anyway", isolate=True, env={"PATH": str(tmp_path)})
    with pytest.raises(UserError, match="not installed; nothing was started"):
        runner.start(spec)
    assert not (tmp_path / "made-anyway").exists()


@pytest.mark.skipif(shutil.which("bwrap") is None, reason="bubblewrap is not installed")
def test_isolate_writes_inside_the_cwd_only_and_sigterm_reaches_the_command(
    tmp_path: Path,
) -> None:
    outside = tmp_path.parent / f"{tmp_path.name}-outside"
    outside.mkdir()
    script = (
        f"echo in > inside.txt; (echo out > {outside}/x.txt) 2>/dev/null || echo blocked; "
        "trap 'echo cleaned up; exit 0' TERM; echo up; while :; do sleep 0.05; done"
    )
    p = Pumped(tmp_path, script, isolate=True)
    p.until_log("up")
    p.runner.send(Abort())
    p.until_exit()  # no SIGKILL needed: the command itself got SIGTERM, not only bwrap
    shown = [line for line in p.log.splitlines() if line != "Terminated"]  # sh on its `sleep`
    assert shown == ["blocked", "up", "cleaned up"]
    assert (tmp_path / "inside.txt").read_text() == "in\n"
    assert list(outside.iterdir()) == []
