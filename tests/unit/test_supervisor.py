"""The supervisor state machine, driven by a scripted runner (no processes)."""

from __future__ import annotations

import json
import threading
import time
from pathlib import Path

import pytest

from specialists.jobs.control import post_request
from specialists.jobs.store import JobStore
from specialists.runners.base import Activity, AgentExited, RunFinished, TextDelta, Usage
from specialists.runners.testing import ScriptedRunner
from specialists.supervise.supervisor import Supervisor
from tests.support.jobs import new_job


@pytest.fixture
def store(tmp_path: Path) -> JobStore:
    return JobStore(tmp_path / ".specialists")


def supervise(store: JobStore, tmp_path: Path, runner: ScriptedRunner, **rec: object):
    record, lock = new_job(store, tmp_path, **rec)
    sup = Supervisor(store, record, runner, tick=0.01, handle_signals=False)
    try:
        status = sup.run()
    finally:
        lock.release()
    return record.id, status, sup


def kinds(store: JobStore, job_id: str) -> list[str]:
    return [e["event"] for e in store.read_events(job_id)]


def test_successful_run_writes_result_events_and_ready_marker(store, tmp_path):
    runner = ScriptedRunner(
        [
            Activity("thinking"),
            Activity("toolcall", {"tool": "bash", "args": "echo hi"}, current_tool="bash(echo hi)"),
            Activity("tool_execution", log=False),
            Activity("tool_execution_end", {"tool": "bash", "duration_ms": 5}),
            TextDelta("DO"),
            Activity("text"),
            Usage(input_tokens=10, output_tokens=3, cost_usd=0.01),
            Usage(input_tokens=5, output_tokens=2, cost_usd=0.02),
            RunFinished(text="DONE"),
        ]
    )
    job_id, status, _ = supervise(store, tmp_path, runner)
    assert status.status == "done"
    assert store.read_result(job_id) == "DONE"
    assert kinds(store, job_id) == [
        "starting",
        "thinking",
        "toolcall",
        "tool_execution_end",
        "text",
        "run_end",
        "done",
    ]
    on_disk = store.read_status(job_id)
    assert on_disk is not None and on_disk.status == "done"
    assert on_disk.tokens == {"input": 15, "output": 5}
    assert on_disk.cost_usd == pytest.approx(0.03)
    assert on_disk.tool_calls == 1
    assert on_disk.events == 7
    assert (store.ready_dir / job_id).exists()
    seqs = [e["seq"] for e in store.read_events(job_id)]
    assert seqs == list(range(1, 8))


def test_agent_error_ends_job_in_error_without_result(store, tmp_path):
    runner = ScriptedRunner([RunFinished(text=None, error="provider returned 500")])
    job_id, status, _ = supervise(store, tmp_path, runner)
    assert status.status == "error"
    assert status.error == "provider returned 500"
    assert store.read_result(job_id) is None
    assert kinds(store, job_id)[-1] == "error"


def test_agent_crash_without_final_answer_records_exit(store, tmp_path):
    runner = ScriptedRunner(
        [Activity("thinking"), AgentExited(None, signal=9, stderr_tail="oom\n")]
    )
    _job_id, status, _ = supervise(store, tmp_path, runner)
    assert status.status == "error"
    assert status.error == "agent killed by SIGKILL before finishing: oom"
    assert status.exit_code == -9


def test_missing_agent_binary_is_one_clear_error(store, tmp_path):
    runner = ScriptedRunner(unavailable="pi is not installed: npm install -g x")
    job_id, status, _ = supervise(store, tmp_path, runner)
    assert status.status == "error"
    assert status.error == "pi is not installed: npm install -g x"
    assert kinds(store, job_id) == ["starting", "error"]


def test_timeout_kills_agent_and_errors(store, tmp_path):
    runner = ScriptedRunner([Activity("thinking"), 30.0])
    _job_id, status, _ = supervise(store, tmp_path, runner, timeout_ms=200)
    assert status.status == "error"
    assert status.error == "timeout after 0.2s"
    assert ("terminate", "") in runner.calls


def test_stall_is_flagged_not_killed_by_default(store, tmp_path):
    runner = ScriptedRunner([Activity("thinking"), 0.4, RunFinished(text="late")])
    job_id, status, _ = supervise(store, tmp_path, runner, stall_timeout_ms=100)
    assert status.status == "done"
    assert "stalled" in kinds(store, job_id)
    assert status.stalled is False


def test_stall_kill_when_configured(store, tmp_path):
    runner = ScriptedRunner([Activity("thinking"), 30.0])
    _, status, _ = supervise(store, tmp_path, runner, stall_timeout_ms=100, stall_kill=True)
    assert status.status == "error"
    assert status.error is not None and status.error.startswith("stalled")


def run_in_thread(store, tmp_path, runner, **rec):
    record, lock = new_job(store, tmp_path, **rec)
    sup = Supervisor(store, record, runner, tick=0.01, handle_signals=False)
    thread = threading.Thread(target=sup.run)
    thread.start()
    return record, lock, sup, thread


def wait_for(predicate, timeout=5.0):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return
        time.sleep(0.01)
    raise AssertionError("condition not met in time")


def test_stop_request_aborts_and_cancels(store, tmp_path):
    runner = ScriptedRunner([Activity("thinking"), 30.0])
    record, lock, sup, thread = run_in_thread(store, tmp_path, runner)
    wait_for(lambda: store.read_status(record.id).status == "running")
    post_request(store.job_dir(record.id), "stop")
    thread.join(5)
    lock.release()
    assert sup.status.status == "cancelled"
    assert ("abort", "") in runner.calls
    assert store.read_result(record.id) is None
    assert kinds(store, record.id)[-3:] == ["stop_ack", "stopping", "cancelled"]


def test_steer_is_delivered_and_acked_with_request_id(store, tmp_path):
    runner = ScriptedRunner([Activity("thinking"), 0.5, RunFinished(text="ok")])
    record, lock, _sup, thread = run_in_thread(store, tmp_path, runner)
    wait_for(lambda: store.read_status(record.id).status == "running")
    req = post_request(store.job_dir(record.id), "steer", "focus on tests")
    thread.join(5)
    lock.release()
    assert ("steer", "focus on tests") in runner.calls
    acks = [e for e in store.read_events(record.id) if e["event"] == "steer_ack"]
    assert acks == [acks[0]] and acks[0]["request"] == req.id and acks[0]["delivered"] is True


def test_steer_refused_by_one_shot_runner(store, tmp_path):
    runner = ScriptedRunner([Activity("thinking"), 0.5, RunFinished(text="ok")], steerable=False)
    record, lock, _sup, thread = run_in_thread(store, tmp_path, runner)
    wait_for(lambda: store.read_status(record.id).status == "running")
    post_request(store.job_dir(record.id), "steer", "x")
    thread.join(5)
    lock.release()
    ack = next(e for e in store.read_events(record.id) if e["event"] == "steer_ack")
    assert ack["delivered"] is False and "cannot be steered" in ack["reason"]
    assert ("steer", "x") not in runner.calls


def test_follow_up_while_running_is_queued_then_sent(store, tmp_path):
    runner = ScriptedRunner([Activity("thinking"), 0.4, RunFinished(text="first")])
    record, lock, sup, thread = run_in_thread(store, tmp_path, runner)
    wait_for(lambda: store.read_status(record.id).status == "running")
    post_request(store.job_dir(record.id), "follow_up", "and more")
    thread.join(5)
    lock.release()
    assert sup.status.status == "done"
    assert store.read_result(record.id) == "re: and more"
    assert ("follow_up", "and more") in runner.calls


def test_keep_alive_waits_then_accepts_follow_up_then_idles_out(store, tmp_path):
    runner = ScriptedRunner([RunFinished(text="one")])
    record, lock, sup, thread = run_in_thread(
        store, tmp_path, runner, keep_alive=True, idle_timeout_ms=400
    )
    wait_for(lambda: store.read_status(record.id).status == "waiting")
    assert (store.job_dir(record.id) / "answers" / "001.txt").read_text() == "one"
    wait_for(lambda: (store.ready_dir / record.id).exists())  # each answer is announced
    post_request(store.job_dir(record.id), "follow_up", "two")
    wait_for(lambda: ("follow_up", "two") in runner.calls)
    thread.join(5)
    lock.release()
    assert sup.status.status == "done"
    assert store.read_result(record.id) == "re: two"
    assert "idle_timeout" in kinds(store, record.id)


def test_pre_script_output_is_injected_and_failure_not_fatal(store, tmp_path):
    runner = ScriptedRunner([RunFinished(text="ok")])
    job_id, status, _ = supervise(
        store,
        tmp_path,
        runner,
        task="context: \u27eapre_script_output\u27eb",
        pre_scripts=[
            {"path": "echo from-script", "phase": "pre", "inject_output": True},
            {"path": "exit 3", "phase": "pre", "inject_output": False},
        ],
        post_scripts=[{"path": "touch post-ran", "phase": "post", "inject_output": False}],
    )
    assert status.status == "done"
    assert runner.calls[0] == ("start", "context: from-script")
    scripts = [e for e in store.read_events(job_id) if e["event"] == "script"]
    assert [s["exit_code"] for s in scripts] == [0, 3, 0]
    assert (tmp_path / "post-ran").exists()


def test_status_json_is_always_whole_while_supervisor_writes(store, tmp_path):
    steps = [Activity("toolcall", {"tool": f"t{i}"}) for i in range(300)] + [RunFinished(text="x")]
    record, lock, _sup, thread = run_in_thread(store, tmp_path, ScriptedRunner(steps))
    path = store.job_dir(record.id) / "status.json"
    reads = 0
    while thread.is_alive():
        json.loads(path.read_bytes())  # never torn
        reads += 1
    thread.join()
    lock.release()
    assert reads > 10


def test_timeout_counts_per_run_not_across_keep_alive_waits(store, tmp_path):
    runner = ScriptedRunner([RunFinished(text="one")])
    record, lock, sup, thread = run_in_thread(
        store, tmp_path, runner, keep_alive=True, idle_timeout_ms=2000, timeout_ms=300
    )
    wait_for(lambda: store.read_status(record.id).status == "waiting")
    time.sleep(0.5)  # longer than the timeout, but the job is idle, not running
    post_request(store.job_dir(record.id), "follow_up", "two")
    wait_for(lambda: ("follow_up", "two") in runner.calls)
    wait_for(lambda: store.read_status(record.id).status == "waiting")
    post_request(store.job_dir(record.id), "stop")
    thread.join(5)
    lock.release()
    assert sup.status.status == "done", sup.status.error
    assert store.read_result(record.id) == "re: two"


def test_result_that_cannot_be_written_ends_in_error_not_stuck(store, tmp_path, monkeypatch):
    from specialists.jobs import store as store_module

    def disk_full(*args, **kwargs):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(store_module, "write_atomic", disk_full)
    job_id, status, _ = supervise(store, tmp_path, ScriptedRunner([RunFinished(text="x")]))
    assert status.status == "error"
    assert status.error == "could not write result.txt: No space left on device"
    assert kinds(store, job_id)[-1] == "error"


def test_current_tool_keeps_the_call_summary_while_the_tool_runs(store, tmp_path):
    record, lock = new_job(store, tmp_path)
    sup = Supervisor(store, record, ScriptedRunner(), tick=0.01, handle_signals=False)
    sup._on_activity(Activity("toolcall", {"tool": "bash"}, current_tool="bash(echo hi)"))
    sup._on_activity(Activity("tool_execution", log=False, current_tool="bash"))
    assert sup.status.current_tool == "bash(echo hi)"
    sup._on_activity(Activity("tool_execution_end", {"tool": "bash"}))
    assert sup.status.current_tool is None
    sup._on_activity(Activity("tool_execution", log=False, current_tool="read"))
    assert sup.status.current_tool == "read"
    lock.release()


def test_feed_lines_render_usage_and_values_compactly():
    from specialists.cli.render import feed_line

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
    assert line == "[abcd1234] reviewer     01:01  turn_end    turn 2 in=12 out=3 $0.0125"
    other = feed_line(
        "abcd1234", "reviewer", 0, {"ts": 0, "event": "retry", "attempt": 2, "detail": {"a": 1}}
    )
    assert other.endswith('retry       attempt=2 detail={"a":1}')


def test_an_answer_that_arrives_while_closing_is_the_result(store, tmp_path):
    # A steer that raced the end of a run makes the agent answer once more before it exits.
    runner = ScriptedRunner(
        [RunFinished(text="first"), RunFinished(text="after the steer")], exits_on_close=False
    )
    runner.extend([AgentExited(0)])
    job_id, status, _ = supervise(store, tmp_path, runner)
    assert status.status == "done"
    assert store.read_result(job_id) == "after the steer"


def test_runner_args_reach_the_agent_command_line(store, tmp_path):
    def launch(runner_name: str, options: dict) -> tuple:
        fake = ScriptedRunner([RunFinished(text="ok")])
        record, lock = new_job(store, tmp_path, runner=runner_name, runner_options=options)
        Supervisor(store, record, fake, tick=0.01, handle_signals=False).run()
        lock.release()
        assert fake.spec is not None
        return tuple(fake.spec.extra_args)

    assert launch("pi", {"args": ["--no-context-files"]}) == ("--no-context-files",)
    assert launch("command", {"command": "cat", "args": ["-n"]}) == ()  # its own argv
