"""The machine's shared Ray connection (bridge_*.py) with real processes and sockets, over
the loopback node instead of Ray (tests/support/fake_bridge.py runs the real server): the
protocol, starting on demand without races, idling out, and the hostile cases. The same
client under real Ray is in test_ray_executor.py."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from specialists.base.errors import AgentUnavailable
from specialists.executors.bridge_client import BridgeLink, BridgeNodeClient, BridgePlacement
from specialists.executors.bridge_home import BridgeKey, Home, home_path
from specialists.executors.bridge_wire import HEADER, frame
from specialists.executors.remote import LinkLost, RemoteHost
from specialists.executors.travel import PathMap
from tests.support.fake_bridge import fake_command
from tests.support.processes import alive, killed_after, wait_dead
from tests.support.waiting import wait_until

pytestmark = [pytest.mark.integration, pytest.mark.timeout(180)]
REPO = Path(__file__).resolve().parents[2]
# Two "clusters": listening ports the client's TCP probe finds (the fake serves no Ray).
_PORTS = [socket.create_server(("127.0.0.1", 0)) for _ in range(2)]
ADDRESSES = [f"127.0.0.1:{s.getsockname()[1]}" for s in _PORTS]
KEY = BridgeKey(ADDRESSES[0], "tests")


@pytest.fixture
def fake(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[dict[str, Any]]:
    """Options for the fake bridge; every bridge a test started is killed at its end."""
    monkeypatch.setenv("PYTHONPATH", str(REPO))
    options: dict[str, Any] = {"--root": str(tmp_path / "node"), "--record": str(tmp_path / "rec")}
    with killed_after() as pids:
        options["pids"] = pids
        yield options


def command(fake: dict[str, Any], **extra: str):  # type: ignore[no-untyped-def]
    return fake_command({**{k: v for k, v in fake.items() if k.startswith("--")}, **extra})


def link(
    fake: dict[str, Any], key: BridgeKey = KEY, idle_s: float = 60, **extra: str
) -> BridgeLink:
    made = BridgeLink(key, timeout=10, idle_s=idle_s, command=command(fake, **extra))
    fake["pids"].append(made.bridge_pid())
    return made


def client(made: BridgeLink) -> BridgeNodeClient:
    return BridgeNodeClient(made, "loopback", "127.0.0.1", "")


def test_an_agent_runs_and_streams_through_the_bridge(fake, tmp_path):
    """start, numbered stdin writes (fired), reads in flight, kill and forget: the whole
    node-client seam over the socket, driven by the real RemoteHost/RemoteProcess."""
    host = RemoteHost(
        client(link(fake)), paths=PathMap(), forward_env=[], job_dir=None, job_key="k", lease_s=60
    )
    proc = host.spawn(["sh", "-c", "read x; echo got-$x; echo bye"], cwd=tmp_path)
    proc.send(b"hello\n")
    lines: list[Any] = []
    wait_until(lambda: lines.extend(proc.read(1.0)) or proc.done, 60, "the agent's end")
    assert [bytes(x) for x in lines if isinstance(x, bytes)] == [b"got-hello", b"bye"]
    proc.release()


def test_two_clients_starting_at_once_get_one_bridge(fake):
    """Eight links in eight threads, each with its own flock descriptor, race to start the
    bridge: one is started, all eight talk to it."""
    links = [BridgeLink(KEY, timeout=10, command=command(fake)) for _ in range(8)]
    pids: list[int] = []
    gate = threading.Barrier(len(links))

    def go(made: BridgeLink) -> None:
        gate.wait()
        pids.append(made.bridge_pid())

    threads = [threading.Thread(target=go, args=(made,)) for made in links]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    fake["pids"].extend(pids)
    assert len(pids) == len(links) and len(set(pids)) == 1, pids


def test_ending_the_job_whose_supervisor_started_the_bridge_leaves_the_bridge_alive(fake, tmp_path):
    """A supervisor adopts its job's orphans (a subreaper) and kills its whole tree when the
    job ends; the bridge it started carries a mark of its own, so it is not in that tree's
    reach and goes on serving the other jobs."""
    job_dir = tmp_path / "job"
    job_dir.mkdir()
    code = (
        "import sys\n"
        "from pathlib import Path\n"
        "from specialists.executors.bridge_client import BridgeLink\n"
        "from specialists.executors.bridge_home import BridgeKey\n"
        "from specialists.store import proctree\n"
        "from tests.support.fake_bridge import fake_command\n"
        f"job = Path({str(job_dir)!r})\n"
        "assert proctree.adopt_orphans(job)\n"
        f"link = BridgeLink(BridgeKey({KEY.address!r}, 'tests'), timeout=10, "
        f"command=fake_command({{'--root': {fake['--root']!r}}}))\n"
        "print(link.bridge_pid(), flush=True)\n"
        "proctree.kill_job(job)\n"
        "print('ended', flush=True)\n"
    )
    env = {**os.environ, "SPECIALISTS_JOB_DIR": str(job_dir)}
    out = subprocess.run(
        [sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=120
    )
    assert out.returncode == 0, out.stderr
    pid_text, ended = out.stdout.split()
    fake["pids"].append(int(pid_text))
    assert ended == "ended"
    assert alive(int(pid_text))
    assert client(link(fake)).call_sync("info")["node_id"] == "loopback"
    assert link(fake).bridge_pid() == int(pid_text)


def test_the_bridge_ends_after_its_idle_time_with_no_client_and_removes_its_socket(fake):
    made = link(fake, idle_s=0.5)
    pid = made.bridge_pid()
    assert client(made).call_sync("info")["node_id"] == "loopback"
    made.close()
    wait_dead(pid, 30)
    home = Home()
    try:
        assert not home.socket_present(KEY.name + ".sock")
    finally:
        home.close()


def test_a_dead_clients_placement_groups_are_released_and_the_bridge_lives_on(fake, tmp_path):
    """A supervisor killed with SIGKILL after placing a job: its socket closes, the bridge
    releases the group it held for it, and goes on serving the others."""
    mine = link(fake)
    code = (
        "import os, sys\n"
        "from specialists.executors.bridge_client import BridgeLink, BridgeConnector\n"
        "from specialists.executors.bridge_home import BridgeKey\n"
        "import specialists.executors.bridge_client as bc\n"
        f"bc._links[BridgeKey({KEY.address!r}, {KEY.namespace!r})] = BridgeLink("
        f"BridgeKey({KEY.address!r}, {KEY.namespace!r}), timeout=10)\n"
        "p = BridgeConnector().place('job1', {'address': %r, 'namespace': %r, "
        "'resources': {'CPU': 1}})\n"
        "print(p._group, flush=True)\n"
        "sys.stdin.read()\n"
    ) % (KEY.address, KEY.namespace)
    child = subprocess.Popen(
        [sys.executable, "-c", code], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
    )
    assert child.stdout is not None
    group = child.stdout.readline().strip()
    assert group.startswith("job1-")
    child.send_signal(signal.SIGKILL)
    child.wait(30)
    record = tmp_path / "rec"
    wait_until(lambda: f"release {group}" in record.read_text(), 30, "the group's release")
    assert client(mine).call_sync("info")["node_id"] == "loopback"


def test_a_placement_released_by_its_job_is_released_once(fake, tmp_path):
    made = link(fake)
    placed = BridgePlacement(made, {"node_id": "loopback", "ip": "127.0.0.1", "group": None}, "")
    placed.release()
    reply = made.call_sync("place", "j2", {"resources": {"CPU": 1}}, within=10)
    real = BridgePlacement(made, reply, "")
    real.release()
    real.release()
    assert client(made).call_sync("info")  # the release went before this answer
    assert (tmp_path / "rec").read_text().count(f"release {reply['group']}") == 1


def test_a_bridge_that_crashes_mid_call_is_link_lost_and_the_next_call_starts_another(
    fake, tmp_path
):
    """The call in flight fails with LinkLost (so a reader asks again from its sequence
    number); the next call starts a new bridge, which answers."""
    die = tmp_path / "die"
    made = link(fake, **{"--die-file": str(die)})
    first = made.bridge_pid()
    die.touch()
    pending = client(made).call("info")
    with pytest.raises(LinkLost):
        client(made).result(pending, 30)
    wait_dead(first, 30)
    assert client(made).call_sync("info")["node_id"] == "loopback"
    assert made.bridge_pid() != first
    fake["pids"].append(made.bridge_pid())


def test_a_stale_socket_is_replaced_by_a_new_bridge(fake):
    """A socket file of ours nobody listens on (a bridge killed with -9) is removed."""
    home = Home()
    stale = socket.socket(socket.AF_UNIX)
    stale.bind(home.at(KEY.name + ".sock"))
    stale.close()
    home.close()
    assert client(link(fake)).call_sync("info")["node_id"] == "loopback"


@pytest.mark.parametrize("planted", ["symlink", "file", "foreign socket"])
def test_a_planted_socket_path_is_refused_not_removed(fake, tmp_path, planted):
    """A link, a regular file, or a socket of another user where our socket goes: refused
    with one clear error, and left in place (never followed, never deleted)."""
    home = Home()
    path = home.path / (KEY.name + ".sock")
    if planted == "symlink":
        path.symlink_to(tmp_path / "elsewhere.sock")
    elif planted == "file":
        path.write_text("x")
    else:
        if os.geteuid() != 0:
            pytest.skip("chown to another user needs root")
        s = socket.socket(socket.AF_UNIX)
        s.bind(home.at(KEY.name + ".sock"))
        s.close()
        os.chown(path, 65534, 65534, follow_symlinks=False)
    home.close()
    made = BridgeLink(KEY, timeout=5, command=command(fake))
    with pytest.raises(AgentUnavailable, match=r"refusing .*not the Ray bridge's socket"):
        made.bridge_pid()
    assert os.path.lexists(path)


@pytest.mark.parametrize("bad", ["mode", "symlink"])
def test_a_bridge_directory_open_to_others_or_a_link_is_refused(tmp_path, bad):
    target = home_path()
    if bad == "mode":
        target.mkdir(mode=0o755)
        target.chmod(0o755)
        match = "mode 0755"
    else:
        (tmp_path / "real").mkdir(mode=0o700)
        target.symlink_to(tmp_path / "real")
        match = "a symbolic link"
    with pytest.raises(AgentUnavailable, match=match):
        Home()


def test_a_bridge_that_accepts_and_never_answers_is_a_clear_error_in_bounded_time(fake):
    made = BridgeLink(KEY, timeout=2, command=command(fake, **{"--mute": "1"}))
    with pytest.raises(AgentUnavailable, match="did not answer within 2s"):
        made.bridge_pid()


def test_a_call_the_bridge_never_answers_fails_within_its_bounds(fake):
    """call_sync gives up at its timeout; a plain call past its deadline is LinkLost and
    the connection to the silent bridge is dropped."""
    made = link(fake, **{"--hang": "1"})
    node = client(made)
    with pytest.raises(AgentUnavailable, match="did not answer `info` within 1s"):
        node.call_sync("info", timeout=1)
    pending = made.request("call", ["loopback", "127.0.0.1", ""], "info", [], within=1.0)
    with pytest.raises(LinkLost, match="did not answer"):
        pending.result(30)


def test_a_malformed_or_oversized_frame_closes_only_that_client(fake):
    """Garbage, an unknown op, and a header announcing 4 GiB: each gets one error or a
    closed socket, the bridge allocates nothing for it and serves everyone else."""
    made = link(fake)
    home = Home()
    try:
        for payload in (HEADER.pack(3) + b"Q!!", HEADER.pack(0xFFFFFFFF), frame(["nope", 1])):
            raw = socket.socket(socket.AF_UNIX)
            raw.settimeout(10)
            raw.connect(home.at(KEY.name + ".sock"))
            raw.sendall(payload)
            answer = raw.recv(65536)
            assert answer == b"" or b"err" in answer, answer
            raw.close()
    finally:
        home.close()
    assert client(made).call_sync("info")["node_id"] == "loopback"


def test_two_clusters_get_two_bridges(fake):
    one = link(fake, BridgeKey(ADDRESSES[0], "tests"))
    two = link(fake, BridgeKey(ADDRESSES[1], "tests"))
    assert one.bridge_pid() != two.bridge_pid()
    assert alive(one.bridge_pid()) and alive(two.bridge_pid())
    assert client(one).call_sync("info") and client(two).call_sync("info")


def test_a_supervisors_way_to_the_bridge_imports_no_ray():
    """What a shared-connection supervisor loads to place a job (the executor choice, the
    client, the starter, the frames) never imports Ray: that import is a driver's memory.
    `direct` still reaches Ray itself."""
    code = (
        "import sys\n"
        "from specialists.executors import job\n"
        "connector = job._connector({'connection': 'shared'})\n"
        "import specialists.executors.bridge_client, specialists.executors.bridge_start\n"
        "ray = sorted(m for m in sys.modules if m.split('.')[0] == 'ray')\n"
        "print(type(connector).__name__, ray)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    assert out.stdout.split(" ", 1) == ["BridgeConnector", "[]\n"]
