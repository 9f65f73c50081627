"""The Ray executor on a local 2-node cluster (head + one worker node, on this machine):
per-job overhead remote vs local, agent-output latency (p50/p90), actor memory per 100
sessions, a supervisor's memory (local, on the shared connection, direct), the shared
connection's memory with 100 supervisors on it, and many jobs' wall time remote vs local.

    .venv/bin/python -m benchmarks.bench_ray            (BENCH_RAY_JOBS=40 by default)
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from benchmarks.bench_run import wait_all_terminal
from benchmarks.common import isolated_project, machine, median_ms, p90_ms, sp_argv, timed

RUNS = 5
JOBS = int(os.environ.get("BENCH_RAY_JOBS", "40"))
SESSIONS = 100
HELD = int(os.environ.get("BENCH_RAY_HELD", "100"))
LINES = 200
STORE = 80 * 1024 * 1024
SPEC = """\
metadata: {name: echo, description: fast fake agent}
execution:
  runner: {type: command, command: ./agent.sh}
prompt: {system: "", task_template: "$prompt"}
"""


def start_cluster():  # type: ignore[no-untyped-def]
    os.environ["RAY_AUTH_MODE"] = "disabled"
    from ray.cluster_utils import Cluster

    c = Cluster(
        initialize_head=True,
        head_node_args={"num_cpus": 1, "include_dashboard": False, "object_store_memory": STORE},
    )
    c.add_node(num_cpus=2, resources={"worker": 10_000}, object_store_memory=STORE)
    c.wait_for_nodes()
    return c


def project(address: str) -> tuple[dict[str, str], Path]:
    layout = isolated_project()
    root = layout.project
    (root / "specialists").mkdir()
    (root / "specialists" / "echo.specialist.yaml").write_text(SPEC)
    (root / "agent.sh").write_text("#!/bin/sh\nexec cat\n")
    (root / "agent.sh").chmod(0o755)
    (root / ".gitignore").write_text(".specialists/\n")
    git = ["git", "-C", str(root)]
    subprocess.run([*git, "add", "-A"], check=True, env=layout.env)
    subprocess.run([*git, "commit", "-qm", "bench"], check=True, env=layout.env)
    (root / ".specialists").mkdir(exist_ok=True)
    (root / ".specialists" / "config.toml").write_text(
        f'[executor]\naddress = "{address}"\nnamespace = "bench"\nresources = {{ worker = 1 }}\n'
    )
    return layout.env, root


def per_job(env: dict[str, str], root: Path) -> None:
    for label, extra in (("local", []), ("ray", ["--executor", "ray"])):
        walls = []
        for i in range(RUNS + 1):
            wall, _, out = timed(
                sp_argv("run", "echo", "--prompt", f"hi {i}", *extra), env=env, cwd=root
            )
            assert out.returncode == 0, out.stderr
            if i:  # the first remote run also starts the node's actor: reported apart
                walls.append(wall)
            else:
                first = wall
        print(
            f"foreground job, {label:5}: median {median_ms(walls):7.0f} ms "
            f"(first {first * 1000:.0f} ms, {RUNS} runs)"
        )


def latency(address: str) -> None:
    """Agent stdout line -> the supervisor's runner has it (events.jsonl is one local append
    later), through the node actor; the same through a local AgentProcess."""
    import ray

    from specialists.executors.bridge_client import BridgeNodeClient, link_for
    from specialists.executors.ray_link import RayNodeClient, alive_nodes, connect
    from specialists.executors.remote import RemoteHost
    from specialists.executors.travel import PathMap
    from specialists.process.agent import AgentProcess

    code = (
        "import time,sys\n"
        f"for i in range({LINES}):\n"
        "    print(time.time(), flush=True); time.sleep(0.01)\n"
    )
    argv = [sys.executable, "-c", code]
    connect(address, "bench", 30)
    worker = next(n["NodeID"] for n in ray.nodes() if n["Alive"] and "worker" in n["Resources"])
    client = RayNodeClient(worker, alive_nodes()[worker], "bench", "", address, 30)
    host = RemoteHost(
        client, paths=PathMap(), forward_env=[], job_dir=None, job_key="bench", lease_s=60
    )
    tmp = Path(tempfile.mkdtemp())
    bridged = RemoteHost(
        BridgeNodeClient(
            link_for({"address": address, "namespace": "bench"}), worker, alive_nodes()[worker], ""
        ),
        paths=PathMap(),
        forward_env=[],
        job_dir=None,
        job_key="bench",
        lease_s=60,
    )
    starts = (
        ("ray, direct", lambda: host.spawn(argv, cwd=tmp, stdin_pipe=False)),
        ("ray, shared", lambda: bridged.spawn(argv, cwd=tmp, stdin_pipe=False)),
        ("local", lambda: AgentProcess(argv, cwd=tmp, stdin_pipe=False)),
    )
    for label, start in starts:
        proc: Any = start()
        delays: list[float] = []
        while not proc.done:
            lines = proc.read(1.0)
            now = time.time()
            delays.extend(now - float(x) for x in lines if isinstance(x, bytes) and x.strip())
        proc.release()
        print(
            f"agent line -> runner, {label:11}: p50 {median_ms(delays):6.2f} ms, "
            f"p90 {p90_ms(delays):6.2f} ms ({len(delays)} lines)"
        )
    memory(client, host, tmp)


def memory(client, host, tmp: Path) -> None:  # type: ignore[no-untyped-def]
    before = client.call_sync("stats")["rss_bytes"]
    procs = [host.spawn(["sleep", "600"], cwd=tmp) for _ in range(SESSIONS)]
    for proc in procs:  # a pending read per session, as supervisors keep one in flight
        proc.read(0.0)
    after = client.call_sync("stats")
    print(
        f"node actor: {SESSIONS} sessions held in one actor, its RSS "
        f"{before / 2**20:.0f} -> {after['rss_bytes'] / 2**20:.0f} MiB "
        f"(+{(after['rss_bytes'] - before) / 2**20:.1f} MiB; the agents' own memory apart)"
    )
    for proc in procs:
        proc.kill_tree()
        proc.release()


def add_specialist(env: dict[str, str], root: Path, name: str, script: str) -> None:
    """`name` runs `./<name>.sh` (`script`), committed so that its code can travel."""
    (root / f"{name}.sh").write_text("#!/bin/sh\n" + script + "\n")
    (root / f"{name}.sh").chmod(0o755)
    spec = root / "specialists" / f"{name}.specialist.yaml"
    spec.write_text(SPEC.replace("./agent.sh", f"./{name}.sh").replace("echo", name))
    subprocess.run(["git", "-C", str(root), "add", "-A"], check=True, env=env)
    subprocess.run(["git", "-C", str(root), "commit", "-qm", name], check=True, env=env)


def supervisor_rss(env: dict[str, str], root: Path) -> None:
    add_specialist(env, root, "slow", "cat > /dev/null; sleep 3")
    direct = root / "specialists" / "slowdirect.specialist.yaml"
    direct.write_text(
        SPEC.replace("./agent.sh", "./slow.sh")
        .replace("echo", "slowdirect")
        .replace("execution:\n", "execution:\n  executor: {kind: ray, connection: direct}\n")
    )
    subprocess.run(["git", "-C", str(root), "add", "-A"], check=True, env=env)
    subprocess.run(["git", "-C", str(root), "commit", "-qm", "direct"], check=True, env=env)
    runs: tuple[tuple[str, str, list[str]], ...] = (
        ("local", "slow", []),
        ("ray, shared", "slow", ["--executor", "ray"]),
        ("ray, direct", "slowdirect", []),
    )
    for label, name, extra in runs:
        out = subprocess.run(
            sp_argv("run", name, "--prompt", "x", "--background", *extra),
            env=env,
            cwd=root,
            capture_output=True,
            text=True,
            check=True,
        )
        job = root / ".specialists" / "jobs" / out.stdout.strip()
        peak = 0
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            try:
                st = json.loads((job / "status.json").read_text())
            except (OSError, ValueError):
                continue
            if st["status"] in ("done", "error", "cancelled"):
                break
            pid = st.get("supervisor_pid")
            if pid:
                peak = max(peak, _rss_kib(pid))
            time.sleep(0.1)
        print(f"supervisor RSS, {label:11}: {peak / 1024:.0f} MiB (peak while its job ran)")


def _rss_kib(pid: int) -> int:
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    except OSError:
        return 0
    return 0


def bridge_pids() -> list[int]:
    """The shared connections' processes running now."""
    found = []
    for entry in Path("/proc").iterdir():
        try:
            if entry.name.isdigit() and "bridge_ray" in (entry / "cmdline").read_text():
                found.append(int(entry.name))
        except OSError:
            continue
    return found


def held(env: dict[str, str], root: Path) -> None:
    """HELD jobs running at once (each waits for a file): the bridge's RSS with HELD
    supervisors connected, and theirs."""
    go = root.parent / "go"
    add_specialist(env, root, "hold", f'cat > /dev/null; while [ ! -e "{go}" ]; do sleep 0.2; done')
    jobs_dir = root / ".specialists" / "jobs"
    t0 = time.perf_counter()
    ids = []
    for i in range(HELD):
        argv = sp_argv("run", "hold", "--prompt", f"h{i}", "--background", "--executor", "ray")
        out = subprocess.run(argv, env=env, cwd=root, capture_output=True, text=True)
        assert out.returncode == 0, out.stderr
        ids.append(out.stdout.strip())
    pids: dict[str, int] = {}
    deadline = time.monotonic() + 900
    while len(pids) < HELD and time.monotonic() < deadline:
        for job_id in ids:
            try:
                st = json.loads((jobs_dir / job_id / "status.json").read_text())
            except (OSError, ValueError):
                continue
            if st["status"] == "running" and (jobs_dir / job_id / "executor.json").exists():
                pids[job_id] = st["supervisor_pid"]
        time.sleep(0.5)
    running_s = time.perf_counter() - t0
    sups = sorted(_rss_kib(p) for p in pids.values())
    bridges = [(p, _rss_kib(p)) for p in bridge_pids()]
    print(
        f"{len(pids)} of {HELD} jobs running at once after {running_s:.0f} s; supervisors "
        f"median {sups[len(sups) // 2] / 1024:.0f} MiB, total {sum(sups) / 1024:.0f} MiB; "
        f"bridge RSS {', '.join(f'{r / 1024:.0f} MiB' for _, r in bridges)}; "
        f"load {os.getloadavg()[0]:.1f}"
    )
    go.touch()
    wait_all_terminal(jobs_dir, ids, timeout=900)
    not_done = sum(
        json.loads((jobs_dir / j / "status.json").read_text())["status"] != "done" for j in ids
    )
    print(
        f"  all {HELD} ended {time.perf_counter() - t0:.0f} s after the first launch; "
        f"not done: {not_done}"
    )


def many(env: dict[str, str], root: Path) -> None:
    jobs_dir = root / ".specialists" / "jobs"
    for label, extra in (("local", []), ("ray", ["--executor", "ray"])):
        t0 = time.perf_counter()
        ids = []
        for i in range(JOBS):
            out = subprocess.run(
                sp_argv("run", "echo", "--prompt", f"job {i}", "--background", *extra),
                env=env,
                cwd=root,
                capture_output=True,
                text=True,
            )
            assert out.returncode == 0, out.stderr
            ids.append(out.stdout.strip())
        wait_all_terminal(jobs_dir, ids, timeout=900)
        wall = time.perf_counter() - t0
        lost = 0
        for job_id in ids:
            lines = (jobs_dir / job_id / "events.jsonl").read_text().splitlines()
            seqs = [json.loads(line)["seq"] for line in lines]
            st = json.loads((jobs_dir / job_id / "status.json").read_text())
            ok = st["status"] == "done" and seqs == list(range(1, len(seqs) + 1))
            lost += 0 if ok else 1
        print(
            f"{JOBS} background jobs, {label:5}: {wall:6.1f} s to all terminal "
            f"({wall / JOBS * 1000:.0f} ms/job), jobs with a gap or not done: {lost} "
            f"(load {os.getloadavg()[0]:.1f})"
        )


def main() -> None:
    print(f"# Ray executor, local 2-node cluster — {machine()}")
    cluster = start_cluster()
    try:
        env, root = project(cluster.address)
        per_job(env, root)
        supervisor_rss(env, root)
        if "--skip-held" not in sys.argv:
            held(env, root)
        many(env, root)
        latency(cluster.address)
    finally:
        import ray

        ray.shutdown()  # the cluster refuses to remove the node this driver is attached to
        cluster.shutdown()


if __name__ == "__main__":
    main()
