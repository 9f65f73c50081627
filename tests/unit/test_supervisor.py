"""The supervisor's lifecycle, driven by a scripted runner on a fake clock (no processes).

Every timer (timeout, stall, idle, the ending ladders) runs on `FakeClock`: a script's
`30.0` is thirty seconds of the supervisor's time and costs nothing, so none of these tests
sleeps or depends on how busy the machine is. Control requests are posted by `Call` steps
at exact points of the script, so no test needs a second thread.
"""

from __future__ import annotations

import json
import threading
from pathlib import Path

import pytest

from specialists.runners.base import (
    Abort,
    Activity,
    AgentExited,
    AnswerDelta,
    Close,
    FollowUp,
    Kill,
    RunFinished,
    Steer,
    Terminate,
    Usage,
)
from specialists.runners.testing import ONE_SHOT_RUNNING, ScriptedRunner, Step
from specialists.supervise.supervisor import Supervisor
from tests.support.jobs import new_job, notice_ids
from tests.support.supervising import Harness


@pytest.fixture
def h(tmp_path: Path) -> Harness:
    return Harness(tmp_path)


# --- whole runs ----------------------------------------------------------------------------


def test_successful_run_writes_result_events_and_a_notice(h: Harness) -> None:
    runner = h.runner(
        [
            Activity("thinking"),
            Activity("toolcall", {"tool": "bash", "args": "echo hi"}, current_tool="bash(echo hi)"),
            Activity("tool_execution", log=False),
            Activity("tool_execution_end", {"tool": "bash", "duration_ms": 5}),
            AnswerDelta("DO"),
            Activity("text"),
            Usage(input_tokens=10, output_tokens=3, cost_usd=0.01),
            Usage(input_tokens=5, output_tokens=2, cost_usd=0.02),
            RunFinished(text="DONE"),
        ]
    )
    status = h.run(runner)
    assert status.status == "done"
    assert h.result() == "DONE"
    assert h.kinds() == [
        "starting",
        "thinking",
        "toolcall",
        "tool_execution_end",
        "text",
        "run_end",
        "done",
    ]
    on_disk = h.store.read_status(h.job_id)
    assert on_disk is not None and on_disk.status == "done"
    assert on_disk.tokens == {"input": 15, "output": 5}
    assert on_disk.cost_usd == pytest.approx(0.03)
    assert on_disk.tool_calls == 1
    assert on_disk.events == 7
    assert notice_ids(h.store, h.job_id) == [f"job-{h.job_id}:notice:1"]
    assert [e["seq"] for e in h.events()] == list(range(1, 8))
    assert runner.commands[0] == Close() and runner.commands[-1] == Kill()


def test_agent_error_ends_job_in_error_without_result(h: Harness) -> None:
    status = h.run(h.runner([RunFinished(text=None, error="provider returned 500")]))
    assert (status.status, status.error) == ("error", "provider returned 500")
    assert h.result() is None
    assert h.kinds()[-1] == "error"


def test_agent_crash_without_final_answer_records_exit(h: Harness) -> None:
    status = h.run(
        h.runner([Activity("thinking"), AgentExited(None, signal=9, stderr_tail="oom\n")])
    )
    assert status.status == "error"
    assert status.error == "agent killed by SIGKILL before finishing: oom"
    assert status.exit_code == -9


def test_missing_agent_binary_is_one_clear_error(h: Harness) -> None:
    status = h.run(h.runner(unavailable="pi is not installed: npm install -g x"))
    assert (status.status, status.error) == ("error", "pi is not installed: npm install -g x")
    assert h.kinds() == ["starting", "error"]


def test_runner_args_reach_the_agent_command_line(h: Harness) -> None:
    fake = h.runner([RunFinished(text="ok")])
    h.run(fake, runner="pi", runner_options={"args": ["--no-context-files"]})
    assert fake.spec is not None and tuple(fake.spec.extra_args) == ("--no-context-files",)
    fake = h.runner([RunFinished(text="ok")])
    h.run(fake, runner="command", runner_options={"command": "cat", "args": ["-n"]})
    assert fake.spec is not None and tuple(fake.spec.extra_args) == ()  # its own argv


# --- timers on the fake clock ---------------------------------------------------------------


def test_timeout_kills_agent_and_errors_at_the_limit(h: Harness) -> None:
    runner = h.runner([Activity("thinking"), 30.0])
    status = h.run(runner, timeout_ms=200)
    assert (status.status, status.error) == ("error", "timeout after 0.2s")
    assert runner.sent("terminate") == [Terminate()]
    assert h.clock.slept < 1.0  # ended at the limit, not after the scripted 30 s


def test_stall_is_flagged_not_killed_by_default(h: Harness) -> None:
    status = h.run(
        h.runner([Activity("thinking"), 0.4, RunFinished(text="late")]), stall_timeout_ms=100
    )
    assert status.status == "done"
    stalled = [e for e in h.events() if e["event"] == "stalled"]
    assert len(stalled) == 1 and 100 <= stalled[0]["quiet_ms"] < 200
    assert status.stalled is False


def test_output_more_often_than_the_stall_limit_is_never_a_stall(h: Harness) -> None:
    """A slow but steady stream (92 chunks 50 ms apart, 4.6 s in all) outlasts a 3 s stall
    limit without one stall: the limit is on quiet time, not on run time."""
    chunks: list[Step] = []
    for _ in range(92):
        chunks += [0.05, AnswerDelta("slow ")]
    status = h.run(h.runner([*chunks, RunFinished(text="slow")]), stall_timeout_ms=3000)
    assert status.status == "done" and "stalled" not in h.kinds()
    assert h.clock.slept >= 4.59


def test_stall_kill_when_configured(h: Harness) -> None:
    status = h.run(h.runner([Activity("thinking"), 30.0]), stall_timeout_ms=100, stall_kill=True)
    assert status.status == "error"
    assert status.error is not None and status.error.startswith("stalled")


def test_a_runner_that_ignores_every_signal_is_given_up_on(h: Harness) -> None:
    """The ladder ends: after SIGTERM and SIGKILL are ignored, the job ends anyway."""
    runner = h.runner([Activity("thinking"), 1e9])
    runner.send = lambda command: runner.commands.append(command)  # type: ignore[method-assign]
    status = h.run(runner, timeout_ms=1000)
    assert (status.status, status.error) == ("error", "timeout after 1s")
    assert [c.kind for c in runner.commands] == ["terminate", "kill", "kill"]
    assert h.clock.slept < 10


def test_keep_alive_waits_then_accepts_follow_up_then_idles_out(h: Harness) -> None:
    runner = h.runner([RunFinished(text="one"), 0.2, h.post("follow_up", "two")])
    status = h.run(runner, keep_alive=True, idle_timeout_ms=400)
    assert status.status == "done"
    assert (h.store.job_dir(h.job_id) / "answers" / "001.txt").read_text() == "one"
    assert runner.sent("follow_up") == [FollowUp("two")]
    assert h.result() == "re: two"
    kinds = h.kinds()
    assert kinds.count("waiting") == 2 and "idle_timeout" in kinds
    assert notice_ids(h.store, h.job_id) == [
        f"{h.job_id}.answer:notice:1",
        f"{h.job_id}.answer:notice:2",
        f"job-{h.job_id}:notice:1",
    ]


def test_timeout_counts_per_run_not_across_keep_alive_waits(h: Harness) -> None:
    runner = h.runner(
        [RunFinished(text="one"), 0.5, h.post("follow_up", "two")],
        follow_up_script=[0.1, RunFinished(text="re: two"), h.post("stop")],
    )
    status = h.run(runner, keep_alive=True, idle_timeout_ms=2000, timeout_ms=300)
    assert status.status == "done", status.error
    assert h.result() == "re: two"


# --- requests --------------------------------------------------------------------------------


def test_stop_request_aborts_and_cancels(h: Harness) -> None:
    runner = h.runner([Activity("thinking"), h.post("stop"), 30.0])
    status = h.run(runner)
    assert status.status == "cancelled"
    assert runner.commands[0] == Abort()
    assert h.result() is None
    assert h.kinds()[-3:] == ["stop_ack", "stopping", "cancelled"]


def test_steer_is_delivered_and_acked_with_request_id(h: Harness) -> None:
    runner = h.runner([Activity("thinking"), h.post("steer", "focus on tests"), 0.5])
    runner.extend([RunFinished(text="ok")])
    h.run(runner)
    assert runner.sent("steer") == [Steer("focus on tests")]
    [ack] = h.acks("steer")
    assert ack["delivered"] is True and ack["request"]


def test_steer_refused_by_one_shot_runner(h: Harness) -> None:
    runner = h.runner(
        [Activity("thinking"), h.post("steer", "x"), 0.5, RunFinished(text="ok")],
        while_running=ONE_SHOT_RUNNING,
    )
    status = h.run(runner)
    [ack] = h.acks("steer")
    assert ack["delivered"] is False and "cannot be steered" in ack["reason"]
    assert runner.sent("steer") == [] and status.status == "done"


def test_follow_up_while_running_is_held_then_sent(h: Harness) -> None:
    runner = h.runner([Activity("thinking"), h.post("follow_up", "and more"), 0.4])
    runner.extend([RunFinished(text="first")])
    status = h.run(runner)
    assert status.status == "done"
    assert h.result() == "re: and more"
    [ack] = h.acks("follow_up")
    assert ack["delivered"] is True and ack["queued"] is True
    assert runner.sent("follow_up") == [FollowUp("and more")]
    kinds = h.kinds()
    assert kinds.index("run_end") < kinds.index("follow_up_sent") < kinds.index("done")


def test_an_answer_that_arrives_while_closing_is_the_result(h: Harness) -> None:
    # A steer that raced the end of a run makes the agent answer once more before it exits.
    runner = h.runner(
        [RunFinished(text="first"), RunFinished(text="after the steer")], exits_on_close=False
    )
    runner.extend([AgentExited(0)])
    status = h.run(runner)
    assert status.status == "done"
    assert h.result() == "after the steer"


# --- the record -------------------------------------------------------------------------------


def test_result_that_cannot_be_written_ends_in_error_not_stuck(
    h: Harness, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A result that still finds no space once the reserve is spent and the wait is over
    ends the job `error` naming the cause, recorded on disk (not left `running`)."""
    from specialists.jobs import writer as writer_module

    real = writer_module.write_atomic

    def no_room_for_results(path: object, data: bytes, **kwargs: object) -> None:
        if str(path).endswith("result.txt"):
            raise OSError(28, "No space left on device")
        real(path, data, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(writer_module, "write_atomic", no_room_for_results)
    monkeypatch.setattr(writer_module, "FINAL_PATIENCE_S", 0.2)
    status = h.run(h.runner([RunFinished(text="x")]))
    assert (status.status, status.error) == (
        "error",
        "could not write result.txt: No space left on device",
    )
    assert h.kinds()[-1] == "error"
    assert h.store.read_status(h.job_id).status == "error"


def test_status_json_is_always_whole_while_supervisor_writes(h: Harness) -> None:
    """A concurrent reader never sees a torn status.json (real time: two threads race)."""
    steps: list[Step] = [Activity("toolcall", {"tool": f"t{i}"}) for i in range(300)]
    record, lock = new_job(h.store, h.tmp_path)
    runner = ScriptedRunner([*steps, RunFinished(text="x")])
    sup = Supervisor(h.store, record, runner, tick=0.01, handle_signals=False)
    thread = threading.Thread(target=sup.run)
    path = h.store.job_dir(record.id) / "status.json"
    thread.start()
    reads = 0
    while thread.is_alive():
        json.loads(path.read_bytes())  # never torn
        reads += 1
    thread.join()
    lock.release()
    assert reads >= 1 and sup.status.status == "done"


def test_feed_lines_render_usage_and_values_compactly() -> None:
    from specialists.jobs.lines import feed_line

    line = feed_line(
        "abcd1234",
        "reviewer",
        0,
        {
            "seq": 4,
            "ts": 61_000,
            "event": "turn_end",
            "turn": 2,
            "usage": {"input": 12, "output": 3, "cost_usd": 0.0125},
        },
    )
    assert line == "[abcd1234] reviewer             01:01  turn end    turn 2 in=12 out=3 $0.0125"
    other = feed_line(
        "abcd1234", "reviewer", 0, {"ts": 0, "event": "retry", "attempt": 2, "detail": {"a": 1}}
    )
    assert other.endswith('retry       attempt=2 detail={"a":1}')


def test_runner_options_come_from_config_toml_then_the_definition(tmp_path: Path) -> None:
    from specialists.config import merge_layers
    from specialists.supervise.plan import runner_options

    config = merge_layers([(tmp_path / "config.toml", {"runners": {"pi": {"extensions": []}}})])
    assert config.warnings == ()  # [runners.*] is known, not an "unknown key"
    assert runner_options(config.raw, "pi", {"pi_bin": "pi2"}) == {
        "extensions": [],
        "pi_bin": "pi2",
    }
    chosen = runner_options(config.raw, "pi", {"extensions": ["quality-gates"]})
    assert chosen == {"extensions": ["quality-gates"]}  # the definition wins, key by key
    assert runner_options(config.raw, "claude", {}) == {}
    assert runner_options({"runners": "not a table"}, "pi", {"a": 1}) == {"a": 1}


def test_a_builtin_on_pi_loads_our_extension_unless_it_or_the_config_opts_out(
    tmp_path: Path,
) -> None:
    from specialists.catalog import load_catalog
    from specialists.supervise.plan import runner_options

    assert runner_options({}, "pi", {}, builtin=True) == {"specialists_extension": True}
    assert runner_options({}, "pi", {}, builtin=False) == {}  # the person's own: as written
    assert runner_options({}, "claude", {}, builtin=True) == {}
    opted_out = {"specialists_extension": False}
    assert runner_options({}, "pi", opted_out, builtin=True) == opted_out
    config = {"runners": {"pi": opted_out}}
    assert runner_options(config, "pi", {}, builtin=True) == opted_out
    builtins = [s for s in load_catalog(tmp_path).all() if s.scope == "builtin"]
    assert builtins and all(
        runner_options({}, "pi", s.runner_options, builtin=True)["specialists_extension"]
        for s in builtins
    )
