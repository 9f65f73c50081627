"""The Ray executor on a real local cluster (ray.cluster_utils.Cluster: a head node and a
worker node, no dashboard, small object stores, RAY_AUTH_MODE=disabled). Jobs are started
with the real CLI; `resources = {worker = 1}` puts them on the worker node, so each test proves
the agent ran on the non-head node, inside the node's one actor, with output streamed back.

The cluster is started once per test process (xdist group "ray": one cluster, one worker).
Run these alone with `pytest -m ray`."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.integration.test_cli_pi import sp, status, wait_until
from tests.support.mock_llm import MockLLM, Reply, ToolCall
from tests.support.processes import alive

ray = pytest.importorskip("ray", reason="the ray extra is not installed (pip install -e '.[ray]')")
from ray.cluster_utils import Cluster  # noqa: E402

# A test's timeout also covers the cluster's start or shutdown when it is the first or last.
pytestmark = [
    pytest.mark.integration,
    pytest.mark.ray,
    pytest.mark.xdist_group("ray"),
    pytest.mark.timeout(600),
]

STORE = 80 * 1024 * 1024
SCRIPT = "job.sh"
ACTIVE = ("starting", "running", "waiting")


_CLUSTER: list[Cluster] = []


# Ray waits 30 s for a node to register, and its own raylet start gives up after 30 s: on a
# loaded 2-core machine (a full test run beside other work) that is not enough. The cluster
# gets minutes to come up, and a start that Ray itself gave up on is tried again.
CLUSTER_START_S = 180.0
CLUSTER_TRIES = 3


def start_cluster() -> Cluster:
    node: dict[str, Any] = {"object_store_memory": STORE, "include_dashboard": False}
    problems = []
    for _ in range(CLUSTER_TRIES):
        c = Cluster(initialize_head=False)
        try:
            head = c.add_node(wait=False, num_cpus=1, **node)
            c._wait_for_node(head, timeout=CLUSTER_START_S)
            worker = c.add_node(
                wait=False, num_cpus=2, resources={"worker": 1000}, object_store_memory=STORE
            )
            c._wait_for_node(worker, timeout=CLUSTER_START_S)
            c.wait_for_nodes(timeout=CLUSTER_START_S)
            return c
        except Exception as exc:  # Ray's own start timeouts raise plain Exception
            problems.append(f"{type(exc).__name__}: {exc}")
            c.shutdown()
    pytest.fail(f"the local Ray cluster did not start in {CLUSTER_TRIES} tries: {problems}")


@pytest.fixture(scope="module")
def cluster() -> Iterator[Cluster]:
    os.environ["RAY_AUTH_MODE"] = "disabled"
    c = start_cluster()
    _CLUSTER.append(c)
    yield c
    _CLUSTER.remove(c)
    c.shutdown()


def cluster_of() -> Cluster:
    return _CLUSTER[-1]


def worker_ids(c: Cluster) -> set[str]:
    return {n.node_id for n in c.worker_nodes}


def project(c: Cluster, script: str, *, config: str = "", runner: str = "") -> Path:
    """The test's project: a committed `job.sh` run by the `job` specialist, on Ray."""
    root = Path(os.environ["SPECIALISTS_PROJECT_ROOT"])
    (root / SCRIPT).write_text("#!/bin/sh\n" + script + "\n")
    (root / SCRIPT).chmod(0o755)
    (root / ".gitignore").write_text(".specialists/\n")
    subprocess.run(["git", "add", "-A"], cwd=root, check=True)
    subprocess.run(["git", "commit", "-qm", "job"], cwd=root, check=True)
    (root / "specialists").mkdir(exist_ok=True)
    execution = runner or "{runner: {type: command, command: ./job.sh}}"
    (root / "specialists" / "job.specialist.yaml").write_text(
        f"metadata: {{name: job, description: t}}\nexecution: {execution}\n"
        'prompt: {task_template: "$prompt"}\n'
    )
    (root / ".specialists").mkdir(exist_ok=True)
    (root / ".specialists" / "config.toml").write_text(
        f'[executor]\naddress = "{c.address}"\nnamespace = "tests"\n'
        f"resources = {{ worker = 1 }}\n{config}"
    )
    return root


def job_dir(job_id: str) -> Path:
    return Path(os.environ["SPECIALISTS_PROJECT_ROOT"]) / ".specialists" / "jobs" / job_id


def events(job_id: str) -> list[dict[str, Any]]:
    lines = (job_dir(job_id) / "events.jsonl").read_text().splitlines()
    return [json.loads(line) for line in lines]


def placed_on(job_id: str) -> str:
    return json.loads((job_dir(job_id) / "executor.json").read_text())["node_id"]


def run_bg(prompt: str, *extra: str) -> str:
    out = sp("run", "job", "--prompt", prompt, "--background", "--executor", "ray", *extra)
    assert out.returncode == 0, out.stderr
    return out.stdout.strip()


def test_a_command_job_runs_on_the_worker_node_and_its_changes_come_back(cluster):
    """Foreground run to `done`: the answer streamed back, the job ran on the non-head node,
    and the file it wrote is in sandbox <id>, not in our working copy."""
    root = project(cluster, "cat; echo made > made.txt")
    out = sp("run", "job", "--prompt", "hello from ray", "--executor", "ray", timeout=180)
    assert out.returncode == 0, out.stderr
    job_id = next(p.name for p in (root / ".specialists" / "jobs").iterdir())
    assert status(job_id)["status"] == "done"
    assert sp("result", job_id).stdout.strip() == "hello from ray"
    assert placed_on(job_id) in worker_ids(cluster)
    assert not (root / "made.txt").exists()
    sandbox = root / ".specialists" / "sandboxes" / job_id / "made.txt"
    assert sandbox.read_text() == "made\n"
    notices = [e["message"] for e in events(job_id) if e["event"] == "notice"]
    assert any("landed as sandbox" in n for n in notices), notices


def test_a_native_job_runs_on_the_worker_node_to_done(cluster, mock_llm: MockLLM):
    """The native loop runs on the node as a relay process; its tool call and answer come
    back as events, and the model (the mock) is reached from the node."""
    # Only API keys travel by default; the mock's address is one more variable to send.
    forward = 'forward_env = ["*_API_KEY", "OPENAI_BASE_URL"]\n'
    project(cluster, "true", config=forward, runner="{runner: native, model: openai/mock-model}")
    mock_llm.enqueue(
        Reply(tool_calls=(ToolCall("bash", {"command": "echo from-the-node"}),)),
        Reply("DONE remotely"),
    )
    job_id = run_bg("use bash once")
    wait_until(lambda: status(job_id)["status"] in ("done", "error"), 180, "the native job")
    st = status(job_id)
    assert st["status"] == "done", (
        st,
        events(job_id),
        (job_dir(job_id) / "supervisor.log").read_text()[-3000:],
    )
    assert sp("result", job_id).stdout.strip() == "DONE remotely"
    assert placed_on(job_id) in worker_ids(cluster)
    assert mock_llm.wait_for_requests(2)[-1].tool_results() == ["from-the-node\n"]
    kinds = [e["event"] for e in events(job_id)]
    assert "toolcall" in kinds or "tool_execution_end" in kinds, kinds


def test_a_pi_job_runs_on_the_worker_node_to_done(cluster, mock_llm: MockLLM, pi_bin: Path):
    """The real pi on the node, its session written there and brought back, so the job can
    be continued; pi's config (the mock's address) is forwarded by name."""
    forward = 'forward_env = ["*_API_KEY", "PI_*"]\n'
    project(cluster, "true", config=forward, runner="{runner: pi, model: mock/mock-model}")
    mock_llm.enqueue(
        Reply(tool_calls=(ToolCall("bash", {"command": "echo pi-on-the-node"}),)),
        Reply("DONE from pi"),
    )
    job_id = run_bg("use bash once")
    wait_until(lambda: status(job_id)["status"] not in ACTIVE, 180, "the pi job")
    st = status(job_id)
    assert st["status"] == "done", (st, events(job_id)[-3:])
    assert sp("result", job_id).stdout.strip() == "DONE from pi"
    assert placed_on(job_id) in worker_ids(cluster)
    assert mock_llm.wait_for_requests(2)[-1].tool_results() == ["pi-on-the-node\n"]
    session = Path(st["session_file"])
    assert session.is_file() and session.parent == job_dir(job_id)


def agent_job_on_the_node(
    mock_llm: MockLLM, runner: str, forward: str, tool: ToolCall, *, first: int = 0
) -> str:
    """A job of `runner` (the real CLI, mock model) on the worker node, after `first` replies
    already queued: one tool call then an answer. Its id once it is `done`, with the tool's
    output from the node."""
    project(cluster_of(), "true", config=f"forward_env = {forward}\n", runner=runner)
    mock_llm.enqueue(Reply(tool_calls=(tool,)), Reply("DONE on the node"))
    job_id = run_bg("use your shell tool once")
    wait_until(lambda: status(job_id)["status"] not in ACTIVE, 240, f"the {runner} job")
    st = status(job_id)
    log = (job_dir(job_id) / "supervisor.log").read_text()[-2000:]
    assert st["status"] == "done", (st, events(job_id)[-4:], log)
    assert sp("result", job_id).stdout.strip() == "DONE on the node"
    results = mock_llm.wait_for_requests(first + 2)[-1].tool_results()
    assert results[-1].strip().endswith("on-the-node"), results
    return job_id


# A stdio MCP server with one tool, `where`: the directory it runs in.
PROBE_MCP = """import json, os, sys
for line in sys.stdin:
    msg = json.loads(line)
    if "id" not in msg:
        continue
    method, result = msg["method"], {}
    if method == "initialize":
        result = {"protocolVersion": msg["params"]["protocolVersion"], "capabilities":
                  {"tools": {}}, "serverInfo": {"name": "probe", "version": "1"}}
    elif method == "tools/list":
        result = {"tools": [{"name": "where", "description": "where the server runs",
                             "inputSchema": {"type": "object", "properties": {}}}]}
    elif method == "tools/call":
        result = {"content": [{"type": "text", "text": "mcp-at " + os.getcwd()}]}
    print(json.dumps({"jsonrpc": "2.0", "id": msg["id"], "result": result}), flush=True)
"""


def test_a_claude_job_runs_on_the_worker_node_to_done(cluster, mock_llm: MockLLM, claude_bin):
    """The real Claude Code on the node: its config dir, the mock's address and its key
    forwarded by name; its Bash tool runs there, and its session comes back. Its MCP server
    is named by a path of this machine's checkout, rewritten to the node's copy, and starts
    there (the model sees the node's directory)."""
    root = Path(os.environ["SPECIALISTS_PROJECT_ROOT"])
    (root / "probe_mcp.py").write_text(PROBE_MCP)
    forward = '["*_API_KEY", "ANTHROPIC_*", "CLAUDE_*", "DISABLE_*"]'
    server = json.dumps({"command": "python3", "args": [str(root / "probe_mcp.py")]})
    options = f"mcp_servers: {{probe: {server}}}, args: [--allowedTools=mcp__probe__where]"
    runner = f"{{runner: {{type: claude, {options}}}, model: anthropic/claude-sonnet-4-5}}"
    mock_llm.enqueue(Reply(tool_calls=(ToolCall("mcp__probe__where", {}),)))
    bash = ToolCall("Bash", {"command": "echo claude-on-the-node"})
    job_id = agent_job_on_the_node(mock_llm, runner, forward, bash, first=1)
    assert placed_on(job_id) in worker_ids(cluster)
    assert status(job_id)["session_file"]
    where = mock_llm.model_requests[1].tool_results()[0]
    assert "mcp-at /tmp/specialists-ray/tests/work/" in where, where


def test_a_codex_job_runs_on_the_worker_node_to_done(cluster, mock_llm: MockLLM, codex_bin):
    """The real Codex on the node: CODEX_HOME (the mock provider) and the key forwarded by
    name; its exec_command runs there."""
    forward = '["*_API_KEY", "CODEX_*", "OPENAI_*", "TMPDIR"]'
    runner = "{runner: codex, model: mock-model}"
    shell = ToolCall("exec_command", {"cmd": "echo codex-on-the-node"})
    job_id = agent_job_on_the_node(mock_llm, runner, forward, shell)
    assert placed_on(job_id) in worker_ids(cluster)


GRANDCHILD = "setsid sh -c 'trap \"\" TERM; echo $$ > grandchild.pid; exec sleep 300' & sleep 300"


def test_stop_mid_run_kills_the_remote_tree(cluster):
    """`specialists stop` ends the job `cancelled` and kills, on the node, a grandchild that
    left the agent's session and ignores SIGTERM."""
    project(cluster, GRANDCHILD)
    job_id = run_bg("x")
    pid = grandchild(job_id)
    assert alive(pid)
    assert sp("stop", job_id, timeout=120).returncode == 0
    wait_until(lambda: status(job_id)["status"] == "cancelled", 60, "cancelled")
    wait_until(lambda: not alive(pid), 30, "the grandchild's death")


def grandchild(job_id: str) -> int:
    """The grandchild's pid, from the node's checkout (same machine in this cluster)."""
    found: list[Path] = []

    def written() -> bool:
        found[:] = list(Path("/tmp/specialists-ray/tests/work").glob(f"{job_id}-*/grandchild.pid"))
        return bool(found) and found[0].read_text().strip() != ""

    wait_until(written, 120, "the grandchild's pid file on the node")
    return int(found[0].read_text())


def test_a_timeout_ends_the_remote_job_and_its_tree_as_locally(cluster):
    """`--timeout 8s` (room for placing and staging under load): the job ends `error`
    "timeout after 8s" and the node's tree is gone."""
    project(cluster, GRANDCHILD)
    job_id = run_bg("x", "--timeout", "8s")
    pid = grandchild(job_id)
    wait_until(lambda: status(job_id)["status"] not in ACTIVE, 120, "the timeout")
    st = status(job_id)
    assert (st["status"], st["error"]) == ("error", "timeout after 8s"), st
    wait_until(lambda: not alive(pid), 30, "the grandchild's death")


# The agent: counts its starts outside the checkout, prints a line, waits for a file,
# prints 500 more, and exits 0.
STEADY = (
    'cat > /dev/null; echo start >> "$STARTS"; echo first; '
    'while [ ! -e "$GO" ]; do sleep 0.05; done; seq 1 500'
)


def test_kill_9_of_the_supervisor_then_a_new_one_reattaches(cluster, tmp_path):
    """The supervisor dies without a word mid-job; its keeper finds it dead at once, and
    recovery starts a supervisor that reattaches to the agent on its node and reads on from
    its last checkpoint: the job ends `done` with every line, every event once (seq with no
    gap and no repeat), and the agent started once. executor.json names the node's process."""
    os.environ["STARTS"], os.environ["GO"] = str(tmp_path / "starts"), str(tmp_path / "go")
    forward = 'forward_env = ["STARTS", "GO"]\n'
    project(cluster, STEADY, config=forward)
    job_id = run_bg("x")
    stdout = job_dir(job_id) / "stdout.log"
    wait_until(lambda: stdout.exists() and b"first" in stdout.read_bytes(), 120, "the agent")
    record = json.loads((job_dir(job_id) / "executor.json").read_text())
    assert record["proc"] and record["pid"] > 0 and record["node_id"] in worker_ids(cluster)
    first = status(job_id)["supervisor_pid"]
    os.kill(first, signal.SIGKILL)
    wait_until(lambda: not alive(first), 30, "the supervisor's death")
    (tmp_path / "go").touch()
    wait_until(lambda: status(job_id)["status"] not in ACTIVE, 180, "the job's end")
    st = status(job_id)
    assert st["status"] == "done", (st, events(job_id)[-5:])
    assert st["supervisor_pid"] != first
    assert stdout.read_text().split() == ["first", *(str(i) for i in range(1, 501))]
    seqs = [e["seq"] for e in events(job_id)]
    assert seqs == list(range(1, len(seqs) + 1))
    kinds = [e["event"] for e in events(job_id)]
    assert kinds.count("starting") == 1 and kinds.count("done") == 1, kinds
    # The words are cut by their text alone (supervise/words.py): each character counted once.
    said = sum(e["chars"] for e in events(job_id) if e["event"] == "text")
    assert said == len(stdout.read_text()), kinds
    notices = [e["message"] for e in events(job_id) if e["event"] == "notice"]
    assert any("reattached to the agent" in n for n in notices), notices
    assert (tmp_path / "starts").read_text() == "start\n"


def test_kill_9_mid_native_job_then_the_relay_is_taken_over(cluster, mock_llm: MockLLM):
    """A native job (the relay on the node) whose supervisor dies while the model is
    answering its second request: the successor reads the relay's events on, the job ends
    `done` with the answer, every event once, and the model was asked twice (the loop on
    the node was not restarted)."""
    forward = 'forward_env = ["*_API_KEY", "OPENAI_BASE_URL"]\n'
    project(cluster, "true", config=forward, runner="{runner: native, model: openai/mock-model}")
    mock_llm.enqueue(
        Reply(tool_calls=(ToolCall("bash", {"command": "echo before-the-crash"}),)),
        Reply("DONE after the crash", hang_after=0),
    )
    job_id = run_bg("use bash once")
    mock_llm.wait_for_requests(2, timeout=180)
    pid = json.loads((job_dir(job_id) / "executor.json").read_text())["pid"]
    first = status(job_id)["supervisor_pid"]
    os.kill(first, signal.SIGKILL)
    wait_until(lambda: not alive(first), 30, "the supervisor's death")
    mock_llm.release()
    wait_until(lambda: status(job_id)["status"] not in ACTIVE, 180, "the job's end")
    st = status(job_id)
    assert st["status"] == "done", (st, events(job_id)[-5:])
    assert sp("result", job_id).stdout.strip() == "DONE after the crash"
    assert len(mock_llm.model_requests) == 2
    assert json.loads((job_dir(job_id) / "executor.json").read_text())["pid"] == pid
    seqs = [e["seq"] for e in events(job_id)]
    assert seqs == list(range(1, len(seqs) + 1))
    kinds = [e["event"] for e in events(job_id)]
    assert kinds.count("starting") == 1 and kinds.count("run_end") == 1, kinds
    assert kinds.count("tool_execution_end") == 1, kinds
    notices = [e["message"] for e in events(job_id) if e["event"] == "notice"]
    assert any("reattached to the agent" in n for n in notices), notices


def test_kill_9_of_the_supervisor_past_the_lease_ends_the_job_saying_so(cluster):
    """Nobody looks for longer than the lease (lease_s = 2): the node kills the agent's
    tree; the next `status` starts a supervisor that finds the agent killed or forgotten,
    and the job ends `error` saying the lease ran out. (The supervisor's keeper, which
    would look at once, is killed first: supervise/keeper.py.)"""
    project(cluster, GRANDCHILD, config="lease_s = 2\n")
    job_id = run_bg("x")
    pid = grandchild(job_id)
    # A crash before the first checkpoint ends the job as a plain crash (nothing to take
    # over); this test is about the one after it, so it waits for the checkpoint.
    wait_until(lambda: (job_dir(job_id) / "reattach.json").exists(), 60, "a checkpoint")
    supervisor = status(job_id)["supervisor_pid"]
    os.kill(_parent(supervisor), signal.SIGKILL)  # its keeper
    os.kill(supervisor, signal.SIGKILL)
    wait_until(lambda: not alive(pid), 60, "the lease killing the remote tree")
    wait_until(lambda: status(job_id)["status"] == "error", 120, "the job's end")
    error = status(job_id)["error"] or ""
    assert "lease" in error, error


def _parent(pid: int) -> int:
    stat = Path(f"/proc/{pid}/stat").read_text()
    return int(stat[stat.rfind(")") + 2 :].split()[1])


CONCURRENT = int(os.environ.get("SPECIALISTS_RAY_CONCURRENT", "100"))


@pytest.mark.timeout(900)
def test_concurrent_jobs_across_two_nodes_lose_no_event(cluster, tmp_path):
    """CONCURRENT (100) jobs, no resources asked (spread over both nodes by key), all running
    at once (each waits for a file before it prints), then each prints 2,000 numbered lines:
    every job ends done with every line in order and no gap in seq.

    The supervisors share the machine's one Ray connection (the bridge): each is about
    24 MiB and no Ray driver. Before it, each was a driver (91 MiB, a second of CPU to
    connect) and 100 at once on this 2-core machine failed a third of its jobs, so the test
    ran 16. See docs/executors.md ("One connection per machine")."""
    os.environ["GO"] = str(tmp_path / "go")
    hold = 'cat > /dev/null; while [ ! -e "$GO" ]; do sleep 0.2; done; seq 1 2000'
    project(cluster, hold, config='forward_env = ["GO"]\nconnect_timeout_s = 60\n')
    root = Path(os.environ["SPECIALISTS_PROJECT_ROOT"])
    config = root / ".specialists" / "config.toml"
    config.write_text(config.read_text().replace("resources = { worker = 1 }", "resources = {}"))
    ids = launch_many(CONCURRENT)
    wait_until(
        lambda: all(running(j) for j in ids) or any(ended(j) for j in ids),
        600,
        f"{CONCURRENT} jobs running at once",
    )
    early = {j: _status_of(j).get("error") for j in ids if ended(j)}
    assert not early, early
    (tmp_path / "go").touch()
    wait_until(lambda: all(ended(j) for j in ids), 600, f"{CONCURRENT} jobs' ends")
    failed = {j: _status_of(j).get("error") for j in ids if _status_of(j)["status"] != "done"}
    if failed:
        log = (job_dir(next(iter(failed))) / "supervisor.log").read_text()[-3000:]
        raise AssertionError(f"{len(failed)} of {len(ids)} not done: {failed}\n{log}")
    nodes = set()
    for job_id in ids:
        lines = (job_dir(job_id) / "stdout.log").read_text().split()
        assert lines == [str(i) for i in range(1, 2001)]
        seqs = [e["seq"] for e in events(job_id)]
        assert seqs == list(range(1, len(seqs) + 1))
        nodes.add(placed_on(job_id))
    assert len(nodes) == 2, nodes


def test_supervisors_on_the_shared_connection_load_no_ray_and_direct_still_works(cluster, tmp_path):
    """A supervisor on the default (shared) connection has no Ray library mapped, and the
    bridge it reached is the one Ray driver; with `connection = "direct"` the supervisor is
    a driver itself, as before, and its job still ends done."""
    os.environ["GO"] = str(tmp_path / "go")
    hold = 'cat > /dev/null; echo up; while [ ! -e "$GO" ]; do sleep 0.1; done'
    root = project(cluster, hold, config='forward_env = ["GO"]\n')
    config = root / ".specialists" / "config.toml"
    shared = run_bg("shared")
    config.write_text(config.read_text() + 'connection = "direct"\n')
    direct = run_bg("direct")
    for job_id in (shared, direct):
        wait_until(lambda j=job_id: running(j), 180, f"job {job_id} running")
    ours = _pids_running("specialists.executors.bridge_ray", os.environ["XDG_RUNTIME_DIR"])
    bridges = [p for p in ours if _has_ray(p)]
    assert len(bridges) == 1, bridges
    assert not _has_ray(status(shared)["supervisor_pid"])
    assert _has_ray(status(direct)["supervisor_pid"])
    (tmp_path / "go").touch()
    for job_id in (shared, direct):
        wait_until(lambda j=job_id: ended(j), 180, f"job {job_id}'s end")
        assert status(job_id)["status"] == "done", status(job_id)


def _has_ray(pid: int) -> bool:
    """Ray's core library is mapped into the process (it is, once `ray` is imported)."""
    return "_raylet" in Path(f"/proc/{pid}/maps").read_text()


def _pids_running(*fragments: str) -> list[int]:
    found = []
    for entry in Path("/proc").iterdir():
        try:
            line = (entry / "cmdline").read_text() if entry.name.isdigit() else ""
            if line and all(f in line for f in fragments):
                found.append(int(entry.name))
        except OSError:
            continue
    return found


def launch_many(count: int, at_once: int = 4) -> list[str]:
    """`run --background` `count` times, `at_once` launchers at a time."""
    argv = [sys.executable, "-m", "specialists", "run", "job", "--background"]
    argv += ["--executor", "ray", "--prompt"]
    root = os.environ["SPECIALISTS_PROJECT_ROOT"]
    ids: list[str] = []
    for first in range(0, count, at_once):
        batch = [
            subprocess.Popen([*argv, f"job {i}"], cwd=root, stdout=subprocess.PIPE, text=True)
            for i in range(first, min(count, first + at_once))
        ]
        for proc in batch:
            out, _ = proc.communicate(timeout=300)
            assert proc.returncode == 0
            ids.append(out.strip())
    return ids


def _status_of(job_id: str) -> dict[str, Any]:
    try:
        return json.loads((job_dir(job_id) / "status.json").read_text())
    except (OSError, ValueError):
        return {}


def running(job_id: str) -> bool:
    """Its agent runs on a node (executor.json names its process) and it has not ended."""
    record = job_dir(job_id) / "executor.json"
    return _status_of(job_id).get("status") == "running" and record.exists()


def ended(job_id: str) -> bool:
    return _status_of(job_id).get("status") not in (None, *ACTIVE)


FAN_OUT = """
async def main(runs, args):
    children = await runs.all(
        [{"key": f"c{i}", "agent": "job", "task": f"child {i}"} for i in range(3)]
    )
    return [c.output for c in children]
"""


def test_a_workflow_fans_its_children_out_over_the_cluster(cluster):
    """A workflow (a job, here on this machine) whose three children use a specialist with
    `executor: ray`: each child is an ordinary job named by the workflow as parent, runs on
    the worker node, and its answer comes back into the workflow's result."""
    root = project(
        cluster, "cat", runner="{runner: {type: command, command: ./job.sh}, executor: ray}"
    )
    folder = root / ".specialists" / "workflows"
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "fan.py").write_text(FAN_OUT)
    out = sp("workflow", "run", "fan", "--detach", timeout=120)
    assert out.returncode == 0, out.stderr
    workflow = out.stdout.strip().split()[-1]
    wait_until(lambda: status(workflow)["status"] not in ACTIVE, 300, "the workflow")
    st = status(workflow)
    assert st["status"] == "done", (st, events(workflow)[-5:])
    assert json.loads(sp("result", workflow).stdout) == ["child 0", "child 1", "child 2"]
    children = [
        d.name
        for d in (root / ".specialists" / "jobs").iterdir()
        if json.loads((d / "job.json").read_text()).get("parent_id") == workflow
    ]
    assert len(children) == 3
    for child in children:
        assert status(child)["status"] == "done"
        assert placed_on(child) in worker_ids(cluster)
    assert not (job_dir(workflow) / "executor.json").exists()  # the workflow ran here


def test_an_unreachable_address_is_one_clear_error():
    """No cluster there: the job ends error within the connect timeout, saying so."""
    root = Path(os.environ["SPECIALISTS_PROJECT_ROOT"])
    (root / "specialists").mkdir(exist_ok=True)
    (root / "specialists" / "job.specialist.yaml").write_text(
        "metadata: {name: job, description: t}\n"
        "execution: {runner: {type: command, command: cat}, executor: ray}\n"
    )
    (root / ".specialists").mkdir(exist_ok=True)
    (root / ".specialists" / "config.toml").write_text(
        '[executor]\naddress = "127.0.0.1:9"\nconnect_timeout_s = 3\n'
    )
    out = sp("run", "job", "--prompt", "x", timeout=60)
    assert out.returncode != 0
    last = out.stderr.strip().splitlines()[-1]
    assert last.startswith("error: ") and "cannot reach the Ray cluster at 127.0.0.1:9" in last
    assert "Traceback" not in out.stderr


def test_a_node_that_dies_mid_job_ends_the_job_error_naming_it(cluster):
    """A third node (resource `doomed`) is removed while the job runs on it: the job ends
    `error`, and the error names that node."""
    doomed = cluster.add_node(num_cpus=1, resources={"doomed": 10}, object_store_memory=STORE)
    cluster.wait_for_nodes()
    root = project(cluster, "cat > /dev/null; echo up; exec sleep 300")
    config = root / ".specialists" / "config.toml"
    config.write_text(config.read_text().replace("worker = 1", "doomed = 1"))
    job_id = run_bg("x")
    wait_until(
        lambda: (
            (job_dir(job_id) / "stdout.log").exists()
            and b"up" in (job_dir(job_id) / "stdout.log").read_bytes()
        ),
        120,
        "the job running",
    )
    assert placed_on(job_id) == doomed.node_id
    cluster.remove_node(doomed, allow_graceful=False)
    wait_until(lambda: status(job_id)["status"] == "error", 120, "the job's end")
    error = status(job_id)["error"] or ""
    assert doomed.node_id[:12] in error, error
    assert "died" in error, error
