"""PiRunner against tests/support/fake_pi.py: a real subprocess speaking pi's RPC protocol.

Fast (no Node): each test spawns a Python fake that replays pi-shaped events.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
import textwrap
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from specialists.base.errors import AgentUnavailable, UserError
from specialists.runners.base import (
    Abort,
    Activity,
    AgentExited,
    AnswerDelta,
    Close,
    FollowUp,
    Kill,
    LaunchSpec,
    RunFinished,
    RunnerEvent,
    Steer,
    Terminate,
)
from specialists.runners.pi import PiRunner, build_argv, resolve_pi_command
from specialists.runners.pi_protocol import split_pi_model
from tests.support.waiting import wait_until

FAKE_PI = Path(__file__).resolve().parents[1] / "support" / "fake_pi.py"
FAKE_CMD = [sys.executable, str(FAKE_PI)]


def make_spec(tmp_path: Path, scenario: str = "basic", **kw: Any) -> LaunchSpec:
    env = {"FAKE_PI_SCENARIO": scenario, "FAKE_PI_LOG": str(tmp_path / "commands.jsonl")}
    env["FAKE_PI_ARGV_FILE"] = str(tmp_path / "argv.json")
    env.update(kw.pop("env", {}))
    options = {"pi_bin": FAKE_CMD, **kw.pop("options", {})}
    defaults: dict[str, Any] = {
        "job_id": "job1",
        "job_dir": tmp_path / "job",
        "cwd": tmp_path,
        "prompt": "Run echo hi using bash, then say DONE.",
        "system_prompt": "You are a careful tester.",
        "model": "mock/mock-model",
    }
    defaults.update(kw)
    return LaunchSpec(env=env, options=options, **defaults)


class Driver:
    """Pumps a runner, collecting events, until a condition holds (no fixed sleeps)."""

    def __init__(self, runner: PiRunner) -> None:
        self.runner = runner
        self.events: list[RunnerEvent] = []

    def until(self, pred: Callable[[RunnerEvent], bool], timeout: float = 60.0) -> RunnerEvent:
        deadline = time.monotonic() + timeout
        seen = len(self.events)
        while True:
            for ev in self.events[seen:]:
                if pred(ev):
                    return ev
            seen = len(self.events)
            if time.monotonic() > deadline:
                kinds = [getattr(e, "event", e.kind) for e in self.events]
                raise AssertionError(f"timed out; events so far: {kinds}")
            self.events.extend(self.runner.poll(0.1))

    def finished(self, timeout: float = 60.0) -> RunFinished:
        ev = self.until(lambda e: isinstance(e, RunFinished), timeout)
        assert isinstance(ev, RunFinished)
        return ev

    def exited(self, timeout: float = 60.0) -> AgentExited:
        ev = self.until(lambda e: isinstance(e, AgentExited), timeout)
        assert isinstance(ev, AgentExited)
        return ev

    def logged(self) -> list[tuple[str, dict[str, Any]]]:
        return [(e.event, dict(e.fields)) for e in self.events if isinstance(e, Activity) and e.log]

    def text(self) -> str:
        return "".join(e.text for e in self.events if isinstance(e, AnswerDelta))


def start(spec: LaunchSpec) -> Driver:
    runner = PiRunner()
    runner.start(spec)
    return Driver(runner)


@pytest.fixture(autouse=True)
def _reap(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """Kill every runner a test started, whatever happened in the test."""
    runners: list[PiRunner] = []
    real_start = PiRunner.start

    def tracking_start(self: PiRunner, spec: LaunchSpec) -> None:
        runners.append(self)
        real_start(self, spec)

    monkeypatch.setattr(PiRunner, "start", tracking_start)
    yield
    for runner in runners:
        runner.send(Kill())


def commands(tmp_path: Path) -> list[dict[str, Any]]:
    path = tmp_path / "commands.jsonl"
    return [json.loads(x) for x in path.read_text().splitlines()] if path.exists() else []


# --- a whole job ---------------------------------------------------------------------------


def test_basic_run_events_result_and_clean_exit(tmp_path: Path) -> None:
    d = start(make_spec(tmp_path))
    done = d.finished()
    assert done == RunFinished(
        text="DONE", error=None, session_file=str(tmp_path / "job" / "session.jsonl")
    )
    assert [k for k, _ in d.logged()] == [
        "toolcall",
        "tool_execution_end",
        "turn_end",
        "text",
        "turn_end",
    ]
    assert d.logged()[0][1] == {"tool": "bash", "args": "echo hi"}
    assert d.text() == "DONE"
    assert d.runner.handle.pid is not None and d.runner.busy is False
    d.runner.send(Close())
    exited = d.exited()
    assert (exited.exit_code, exited.signal) == (0, None)
    assert "fake pi 1.6.0 starting" in exited.stderr_tail
    sent = [c["type"] for c in commands(tmp_path)]
    assert sent == ["prompt", "get_last_assistant_text", "get_state"]
    assert all(c["id"].startswith("sp-") for c in commands(tmp_path))


def test_argv_carries_model_tools_system_prompt_skills_session_and_extras(tmp_path: Path) -> None:
    skill = tmp_path / "skills" / "review"
    skill.mkdir(parents=True)
    spec = make_spec(
        tmp_path,
        permission="READ_ONLY",
        thinking_level="high",
        skill_paths=[skill, Path("missing-skill")],
        extra_args=["--no-context-files"],
    )
    d = start(spec)
    d.finished()
    argv = json.loads((tmp_path / "argv.json").read_text())
    assert argv[:4] == ["--mode", "rpc", "--no-extensions", "--no-skills"]
    assert "--no-prompt-templates" in argv

    def flag(name: str) -> str:
        return str(argv[argv.index(name) + 1])

    assert (flag("--provider"), flag("--model")) == ("mock", "mock-model")
    assert flag("--tools") == "read,bash,grep,find,ls"
    assert flag("--thinking") == "high"
    assert flag("--session") == str(tmp_path / "job" / "session.jsonl")
    assert Path(flag("--append-system-prompt")).read_text() == "You are a careful tester."
    assert argv.count("--skill") == 1 and flag("--skill") == str(skill)
    assert argv[-1] == "--no-context-files"
    assert (
        "notice",
        {
            "message": "skill path not found; skipped",
            "level": "warning",
            "path": str(tmp_path / "missing-skill"),
        },
    ) in d.logged()


def test_build_argv_tiers_bare_model_and_bad_values(tmp_path: Path) -> None:
    def argv_for(**kw: Any) -> list[str]:
        spec = make_spec(tmp_path, **kw)
        return build_argv(
            ["pi"], spec, session_file=tmp_path / "s.jsonl", system_prompt_file=None, skill_paths=[]
        )

    bash_only = argv_for(permission="BASH_ONLY", model="gpt-4o")
    assert bash_only[bash_only.index("--tools") + 1] == "bash"
    assert "--provider" not in bash_only and bash_only[bash_only.index("--model") + 1] == "gpt-4o"
    high = argv_for(permission="HIGH", model=None)
    assert high[high.index("--tools") + 1] == "read,bash,edit,write,grep,find,ls"
    assert "--model" not in high and "--append-system-prompt" not in high
    with pytest.raises(UserError):
        argv_for(permission="ROOT")
    with pytest.raises(UserError, match="thinking level"):
        argv_for(thinking_level="extreme")
    assert split_pi_model("openrouter/anthropic/claude") == ("openrouter", "anthropic/claude")
    assert split_pi_model("/x") == (None, "/x")


def test_resume_session_is_passed_to_pi(tmp_path: Path) -> None:
    old = tmp_path / "old-session.jsonl"
    d = start(
        make_spec(tmp_path, scenario="text", resume_session=str(old), env={"FAKE_PI_TEXT": "FIRST"})
    )
    assert d.finished().text == "FIRST"
    d.runner.send(Close())
    d.exited()
    argv = json.loads((tmp_path / "argv.json").read_text())
    assert argv[argv.index("--session") + 1] == str(old)
    assert d.runner.handle.session_ref == str(old)
    # A second runner on the same file appends to it (the fake records each message there).
    d2 = start(make_spec(tmp_path, scenario="text", resume_session=str(old)))
    d2.finished()
    roles = [json.loads(x)["role"] for x in old.read_text().splitlines()]
    assert roles == ["user", "assistant", "user", "assistant"]


def test_close_right_after_start_waits_for_the_run(tmp_path: Path) -> None:
    d = start(
        make_spec(tmp_path, scenario="slow", env={"FAKE_PI_CHUNKS": "20", "FAKE_PI_DELAY": "0.01"})
    )
    d.runner.send(Close())  # stdin EOF now would make pi drop the run
    assert d.finished().text == "".join(f"tok{i} " for i in range(20))
    assert d.exited().exit_code == 0


# --- final detection and errors ------------------------------------------------------------


def test_retry_then_success_is_one_successful_run(tmp_path: Path) -> None:
    d = start(make_spec(tmp_path, scenario="retry"))
    done = d.finished()
    assert (done.text, done.error) == ("DONE", None)
    assert [k for k, _ in d.logged()].count("retry") == 1
    assert len([e for e in d.events if isinstance(e, RunFinished)]) == 1


def test_retries_exhausted_is_an_error_run(tmp_path: Path) -> None:
    d = start(make_spec(tmp_path, scenario="retry_fail"))
    done = d.finished()
    assert done.error == "500 mock internal error"
    assert [k for k, _ in d.logged()].count("retry") == 3


def test_provider_error_without_retry_finishes_with_the_error(tmp_path: Path) -> None:
    d = start(make_spec(tmp_path, scenario="error"))
    assert d.finished().error == "401 invalid api key"


def test_rejected_prompt(tmp_path: Path) -> None:
    d = start(make_spec(tmp_path, scenario="reject"))
    done = d.finished()
    assert done.text is None and done.error == "pi rejected the prompt: No API key found for fake"


def test_crash_without_agent_end_reports_the_exit_only(tmp_path: Path) -> None:
    d = start(make_spec(tmp_path, scenario="crash"))
    exited = d.exited()
    assert (exited.exit_code, exited.signal) == (1, None)
    assert "simulated crash" in exited.stderr_tail
    assert not [e for e in d.events if isinstance(e, RunFinished)]
    assert d.runner.poll(0.01) == []
    d.runner.send(Kill())  # idempotent after exit
    d.runner.send(Terminate())


def test_garbage_lines_are_skipped_and_the_run_completes(tmp_path: Path) -> None:
    d = start(make_spec(tmp_path, scenario="garbage"))
    assert d.finished().text == "DONE"
    malformed = [f for k, f in d.logged() if k == "notice" and "malformed" in f["message"]]
    assert len(malformed) == 3


def test_extension_dialog_is_cancelled(tmp_path: Path) -> None:
    d = start(make_spec(tmp_path, scenario="ext"))
    assert d.finished().text == "UI:cancelled"
    [answer] = [c for c in commands(tmp_path) if c["type"] == "extension_ui_response"]
    assert answer == {"type": "extension_ui_response", "id": "ui-1", "cancelled": True}


def test_think_logs_one_thinking_event(tmp_path: Path) -> None:
    d = start(make_spec(tmp_path, scenario="think"))
    d.finished()
    assert [k for k, _ in d.logged()] == ["thinking", "text", "turn_end"]


def test_oversized_agent_end_still_ends_the_run(tmp_path: Path) -> None:
    env = {"FAKE_PI_HUGE_MB": "20"}
    d = start(
        make_spec(tmp_path, scenario="huge_end", env=env, options={"max_line_bytes": 1 << 20})
    )
    assert d.finished().text == "DONE"


def test_a_100_mb_line_keeps_memory_bounded(tmp_path: Path) -> None:
    """In a child process, so the peak RSS belongs to this scenario alone."""
    script = textwrap.dedent(
        f"""
        import resource, sys
        from pathlib import Path
        from specialists.runners.base import Activity, Kill, LaunchSpec, RunFinished
        from specialists.runners.pi import PiRunner
        tmp = Path({str(tmp_path)!r})
        spec = LaunchSpec(job_id="j", job_dir=tmp / "job", cwd=tmp, prompt="go", system_prompt="",
            model=None, env={{"FAKE_PI_SCENARIO": "huge"}}, options={{"pi_bin": {FAKE_CMD!r}}})
        r = PiRunner(); r.start(spec); events = []
        while not any(isinstance(e, RunFinished) for e in events):
            events += r.poll(1.0)
        r.send(Kill())
        [done] = [e for e in events if isinstance(e, RunFinished)]
        skipped = [e.fields for e in events if isinstance(e, Activity) and "bytes" in e.fields]
        # VmHWM: this process's own peak (ru_maxrss can carry the forking parent's peak).
        status = Path("/proc/self/status")
        lines = status.read_text().splitlines() if status.exists() else []
        hwm = [x for x in lines if x.startswith("VmHWM")]
        maxrss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        peak_kb = int(hwm[0].split()[1]) if hwm else maxrss
        print(done.text, skipped[0]["bytes"], peak_kb)
        """
    )
    out = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=60, check=True
    )
    text, size, rss_kb = out.stdout.split()
    assert text == "DONE"
    assert int(size) > 100 * 1024 * 1024
    assert int(rss_kb) < 120 * 1024, f"peak RSS {int(rss_kb) // 1024} MB for a 100 MB line"


# --- steer, follow-up, abort, signals ------------------------------------------------------

SLOW = {"FAKE_PI_CHUNKS": "60", "FAKE_PI_DELAY": "0.01"}


def test_steer_is_acked_and_answered_in_the_same_run(tmp_path: Path) -> None:
    d = start(make_spec(tmp_path, scenario="slow", env=SLOW))
    d.until(lambda e: isinstance(e, AnswerDelta))
    d.runner.send(Steer("focus on the tests"))
    ack = d.until(lambda e: isinstance(e, Activity) and e.event == "steer_ack")
    assert isinstance(ack, Activity) and ack.fields == {
        "message": "focus on the tests",
        "as_prompt": False,
    }
    assert d.finished().text == "ECHO: focus on the tests"
    assert len([e for e in d.events if isinstance(e, RunFinished)]) == 1


def test_follow_up_during_a_run_is_answered_before_it_ends(tmp_path: Path) -> None:
    d = start(make_spec(tmp_path, scenario="slow", env=SLOW))
    d.until(lambda e: isinstance(e, AnswerDelta))
    d.runner.send(FollowUp("and then summarize"))
    assert d.finished().text == "ECHO: and then summarize"
    [follow] = [c for c in commands(tmp_path) if c.get("message") == "and then summarize"]
    assert follow["type"] == "prompt" and follow["streamingBehavior"] == "followUp"


def test_follow_up_when_idle_starts_a_new_run_in_the_same_process(tmp_path: Path) -> None:
    d = start(make_spec(tmp_path, scenario="text"))
    first = d.finished()
    pid = d.runner.handle.pid
    d.runner.send(FollowUp("again"))
    assert d.runner.busy
    second = d.until(lambda e: isinstance(e, RunFinished) and e is not first)
    assert isinstance(second, RunFinished) and second.text == "DONE"
    assert d.runner.handle.pid == pid


def test_abort_mid_stream_finishes_as_aborted_with_partial_text(tmp_path: Path) -> None:
    d = start(make_spec(tmp_path, scenario="slow", env=SLOW))
    d.until(lambda e: isinstance(e, AnswerDelta))
    d.runner.send(Abort())
    done = d.finished()
    assert done.error == "aborted"
    assert done.text and done.text.startswith("tok0 ") and len(done.text) < len("tok0 ") * 60
    d.runner.send(Close())
    assert d.exited().exit_code == 0


def wait_for_file(d: Driver, path: Path, timeout: float = 60.0) -> None:
    """The fake writes its argv file once its signal handlers are installed."""
    deadline = time.monotonic() + timeout
    while not path.exists():
        assert time.monotonic() < deadline, f"{path} never appeared"
        d.events.extend(d.runner.poll(0.02))


def test_abort_of_a_hanging_run(tmp_path: Path) -> None:
    d = start(make_spec(tmp_path, scenario="hang"))
    d.runner.send(Abort())  # written after the prompt, so pi sees a run to abort
    assert d.finished().error == "aborted"


def test_terminate_mid_run_exits_143(tmp_path: Path) -> None:
    d = start(make_spec(tmp_path, scenario="hang"))
    wait_for_file(d, tmp_path / "argv.json")
    d.runner.send(Terminate())
    exited = d.exited()
    assert (exited.exit_code, exited.signal) == (143, None)
    assert not [e for e in d.events if isinstance(e, RunFinished)]


def test_kill_mid_run_reports_the_signal(tmp_path: Path) -> None:
    d = start(make_spec(tmp_path, scenario="hang"))
    d.runner.send(Kill())
    d.runner.send(Kill())
    exited = d.exited()
    assert (exited.exit_code, exited.signal) == (None, 9)


def test_long_stream_through_the_pipe(tmp_path: Path) -> None:
    d = start(make_spec(tmp_path, scenario="long"))
    cpu0 = time.process_time()
    done = d.finished()
    cpu = time.process_time() - cpu0
    assert len(d.text()) == 10_000 and done.text == "(long)"
    assert cpu < 1.0, f"reading 21 MB of pi stdout took {cpu:.2f} s CPU"


# --- finding pi ----------------------------------------------------------------------------


def test_missing_pi_says_how_to_install(tmp_path: Path) -> None:
    with pytest.raises(
        AgentUnavailable, match=re.escape("npm install -g @earendil-works/pi-coding-agent@1.6.0")
    ):
        resolve_pi_command({}, {"PATH": str(tmp_path)})
    with pytest.raises(AgentUnavailable, match="not an executable"):
        resolve_pi_command({"pi_bin": str(tmp_path / "nope")}, {"PATH": str(tmp_path)})
    runner = PiRunner()
    with pytest.raises(AgentUnavailable):
        runner.start(make_spec(tmp_path, options={"pi_bin": str(tmp_path / "nope")}))


def test_pi_as_a_node_script_needs_node(tmp_path: Path) -> None:
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    pi = bin_dir / "pi"
    pi.write_text("#!/usr/bin/env node\nconsole.log('hi')\n")
    pi.chmod(0o755)
    with pytest.raises(AgentUnavailable, match=r"pi needs Node\.js; no `node` on PATH"):
        resolve_pi_command({}, {"PATH": str(bin_dir)})
    node = bin_dir / "node"
    node.write_text("#!/bin/sh\necho v24.22.3\n")
    node.chmod(0o755)
    # A Node script is started by the Node chosen for it (process/node.py).
    assert resolve_pi_command({}, {"PATH": str(bin_dir)}) == [str(node), str(pi)]
    env = {"PATH": str(bin_dir), "SPECIALISTS_PI_BIN": str(pi)}
    assert resolve_pi_command({}, env) == [str(node), str(pi)]
    assert resolve_pi_command({"pi_bin": ["node", "x.js"]}, env) == ["node", "x.js"]


# --- the process around the protocol ---------------------------------------------------------


def test_kill_after_exit_reaches_children_pi_left_behind(tmp_path: Path) -> None:
    # The supervisor's last act is runner.send(Kill()); after pi had exited it did nothing, so a
    # child in pi's process group outlived the job.
    pid_file = tmp_path / "child.pid"
    code = (
        "import subprocess, sys\n"
        "p = subprocess.Popen(['sleep', '30'], stdout=subprocess.DEVNULL)\n"
        f"open({str(pid_file)!r}, 'w').write(str(p.pid))\n"
    )
    d = start(make_spec(tmp_path, options={"pi_bin": [sys.executable, "-c", code]}))
    assert d.exited().exit_code == 0
    child = int(pid_file.read_text())
    d.runner.send(Kill())
    wait_until(lambda: not _alive(child), what="the child left behind to die of kill()")


def test_polling_a_pi_that_closed_its_output_does_not_spin(tmp_path: Path) -> None:
    d = start(make_spec(tmp_path, options={"pi_bin": ["sh", "-c", "exec >&- 2>&-; sleep 30"]}))
    polls = 0
    started = time.monotonic()
    while time.monotonic() - started < 0.5:
        assert d.runner.poll(0.1) == []
        polls += 1
    assert polls <= 10, f"poll(0.1) returned {polls} times in 0.5 s"


def _alive(pid: int) -> bool:
    try:
        return ") Z " not in Path(f"/proc/{pid}/stat").read_text()
    except FileNotFoundError:
        return False


# --- fallback model, extensions, response format -------------------------------------------


def test_a_provider_failure_is_retried_once_on_the_fallback_model(tmp_path: Path) -> None:
    """The run fails at the provider; the runner switches pi to the fallback (set_model) and
    sends the message again: one successful run, and a notice that says why."""
    d = start(make_spec(tmp_path, "error", fallback_model="mock/mock-text"))
    done = d.finished()
    assert (done.text, done.error) == ("answered by mock/mock-text", None)
    sent = commands(tmp_path)
    assert [c["type"] for c in sent[:3]] == ["prompt", "set_model", "prompt"]
    assert sent[1]["provider"] == "mock" and sent[1]["modelId"] == "mock-text"
    assert sent[2]["message"] == sent[0]["message"]
    notice = next(f for k, f in d.logged() if k == "notice" and "falling back" in f["message"])
    assert notice["message"] == "falling back to mock/mock-text: 401 invalid api key"


def test_a_bare_fallback_name_uses_the_primary_provider_and_falls_back_only_once(
    tmp_path: Path,
) -> None:
    d = start(make_spec(tmp_path, "error", fallback_model="mock-text"))
    assert d.finished().text == "answered by mock/mock-text"
    assert sum(c["type"] == "set_model" for c in commands(tmp_path)) == 1


def test_a_fallback_pi_does_not_know_leaves_the_original_error(tmp_path: Path) -> None:
    env = {"FAKE_PI_MODELS": "mock/mock-model"}
    d = start(make_spec(tmp_path, "error", fallback_model="mock/nope", env=env))
    done = d.finished()
    assert done.error == "401 invalid api key"
    messages = [f["message"] for k, f in d.logged() if k == "notice"]
    assert any(m.startswith("pi refused the fallback model mock/nope") for m in messages)


def test_no_fallback_for_a_run_that_succeeded_or_was_aborted(tmp_path: Path) -> None:
    d = start(make_spec(tmp_path, "text", fallback_model="mock/mock-text"))
    assert d.finished().text == "DONE"
    d.runner.send(Close())
    d.exited()
    assert "set_model" not in [c["type"] for c in commands(tmp_path)]


def _install_extensions(agent_dir: Path, *names: str) -> dict[str, Path]:
    ext = agent_dir / "extensions"
    ext.mkdir(parents=True, exist_ok=True)
    made = {}
    for name in names:
        if name == "service-skills":
            path = ext / f"{name}.ts"  # a single-file extension
            path.write_text("export default function () {}\n")
        else:
            path = ext / name  # a directory extension
            path.mkdir()
            (path / "index.ts").write_text("export default function () {}\n")
        made[name] = path
    return made


def extension_argv(tmp_path: Path, **kw: Any) -> list[str]:
    d = start(make_spec(tmp_path, "text", **kw))
    d.finished()
    argv = json.loads((tmp_path / "argv.json").read_text())
    d.runner.send(Kill())
    return [argv[i + 1] for i, a in enumerate(argv) if a == "-e"]


def test_the_seed_policy_re_includes_quality_gates_for_writers_and_service_skills(
    tmp_path: Path,
) -> None:
    agent_dir = tmp_path / "pi-agent"
    made = _install_extensions(agent_dir, "quality-gates", "service-skills", "beads")
    env = {"PI_CODING_AGENT_DIR": str(agent_dir)}
    writes = extension_argv(tmp_path, env=env, permission="MEDIUM")
    assert writes == [str(made["quality-gates"]), str(made["service-skills"])]
    reads = extension_argv(tmp_path, env=env, permission="READ_ONLY")
    assert reads == [str(made["service-skills"])]  # nothing to lint: no quality gates


def test_without_installed_extensions_nothing_is_re_included(tmp_path: Path) -> None:
    env = {"PI_CODING_AGENT_DIR": str(tmp_path / "empty-agent-dir")}
    assert extension_argv(tmp_path, env=env) == []


def test_chosen_extensions_replace_the_policy_and_missing_ones_are_noticed(
    tmp_path: Path,
) -> None:
    agent_dir = tmp_path / "pi-agent"
    made = _install_extensions(agent_dir, "quality-gates", "service-skills")
    own = tmp_path / "tools" / "mine.ts"
    own.parent.mkdir()
    own.write_text("export default function () {}\n")
    options = {"extensions": ["service-skills", "tools/mine.ts", "not-installed"]}
    env = {"PI_CODING_AGENT_DIR": str(agent_dir)}
    d = start(make_spec(tmp_path, "text", env=env, options=options))
    d.finished()
    argv = json.loads((tmp_path / "argv.json").read_text())
    chosen = [argv[i + 1] for i, a in enumerate(argv) if a == "-e"]
    assert chosen == [str(made["service-skills"]), str(own)]
    assert argv.count("--no-extensions") == 1
    assert (
        "notice",
        {"message": "pi extension 'not-installed' not found; skipped", "level": "warning"},
    ) in d.logged()
    assert extension_argv(tmp_path, env=env, options={"extensions": []}) == []


def test_extensions_that_are_not_a_list_of_names_are_a_config_error(tmp_path: Path) -> None:
    with pytest.raises(UserError, match="extensions must be a list"):
        PiRunner().start(make_spec(tmp_path, options={"extensions": "quality-gates"}))


def test_response_format_is_asked_for_and_a_non_json_answer_noticed(tmp_path: Path) -> None:
    d = start(make_spec(tmp_path, "text", response_format="json", env={"FAKE_PI_TEXT": "no"}))
    done = d.finished()
    assert done.text == "no"  # kept as it is: never lost, never an error
    prompt_file = tmp_path / "job" / "system_prompt.md"
    assert prompt_file.read_text().startswith("You are a careful tester.\n\n")
    assert "single JSON value" in prompt_file.read_text()
    [(_, notice)] = [(k, f) for k, f in d.logged() if k == "notice"]
    assert notice["message"].startswith("the answer is not valid JSON")


def test_a_json_answer_passes_and_markdown_is_only_asked_for(tmp_path: Path) -> None:
    env = {"FAKE_PI_TEXT": '```json\n{"ok": true}\n```'}
    d = start(make_spec(tmp_path, "text", response_format="json", env=env))
    d.finished()
    assert [k for k, _ in d.logged() if k == "notice"] == []
    d.runner.send(Kill())
    other = tmp_path / "md"
    other.mkdir()
    d = start(make_spec(other, "text", response_format="markdown"))
    d.finished()
    assert "as Markdown" in (other / "job" / "system_prompt.md").read_text()
