"""The tests of tests/unit/test_pi_sidecar.py that start processes (git, a runner, a
supervisor): the integration tier, as the unit tier starts none (tests/conftest.py)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from tests.support.agent_env import AgentEnv
from tests.support.sidecar import spawn
from tests.unit.test_pi_sidecar import (
    OWNER,
    _alive,
    emit,
    root,  # noqa: F401 - fixtures
)


def test_a_closed_stdin_ends_the_sidecar_cleanly(isolated_env: AgentEnv) -> None:
    peer, proc = spawn(OWNER, isolated_env.project)
    assert peer.result("hello")["owner"] == OWNER
    peer.close()
    assert proc.wait(20) == 0
    peer.wait_eof()


def test_bad_arguments_are_one_clear_line(isolated_env: AgentEnv) -> None:
    for args, expected in [
        (["--owner", "../etc"], "error: invalid owner '../etc'"),
        (
            ["--owner", OWNER, "--cwd", "/no/such/dir"],
            "error: --cwd /no/such/dir is not a directory",
        ),
    ]:
        proc = subprocess.run(
            [sys.executable, "-m", "specialists", "sidecar", *args],
            capture_output=True,
            text=True,
            timeout=60,
            stdin=subprocess.DEVNULL,
        )
        assert proc.returncode == 2 and proc.stderr.startswith(expected), proc.stderr


def test_unacknowledged_events_survive_a_restart_and_acknowledged_ones_do_not_return(
    root: Path, isolated_env: AgentEnv
) -> None:
    """R-E6: a batch pushed but never acked is pushed again by the next sidecar; never lost."""
    first = emit(root, "first exit")
    peer, proc = spawn(OWNER, isolated_env.project)
    peer.result("hello")
    assert [e["id"] for e in peer.wait_push("events")["events"]] == [first]
    proc.kill()  # pi crashed before it accepted the message: no ack
    proc.wait(20)

    peer, proc = spawn(OWNER, isolated_env.project)
    peer.result("hello")
    push = peer.wait_push("events")
    assert [e["id"] for e in push["events"]] == [first]
    peer.result("ack", batch=push["batch"])
    peer.close()
    assert proc.wait(20) == 0

    second = emit(root, "second exit")
    peer, proc = spawn(OWNER, isolated_env.project)
    peer.result("hello")
    assert [e["id"] for e in peer.wait_push("events")["events"]] == [second]  # not `first`
    peer.close()
    proc.wait(20)


def test_the_sidecar_ends_when_pi_dies_even_if_its_stdin_stays_open(isolated_env: AgentEnv) -> None:
    """A grandchild holding the pipe open must not keep an orphaned sidecar alive."""
    read_end, write_end = os.pipe()
    launcher = (
        "import os, subprocess, sys\n"
        "p = subprocess.Popen([sys.executable, '-m', 'specialists', 'sidecar', '--owner', "
        f"{OWNER!r}, '--cwd', {str(isolated_env.project)!r}, '--parent-pid', str(os.getpid())], "
        f"stdin={read_end}, "
        "stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, pass_fds=())\n"
        "print(p.pid, flush=True)\n"
        "os._exit(0)\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", launcher],
        capture_output=True,
        text=True,
        timeout=60,
        pass_fds=(read_end,),
    )
    os.close(read_end)
    pid = int(out.stdout.split()[0])
    try:
        os.write(write_end, b'{"id": 1, "op": "hello"}\n')  # starts the watch
        deadline = time.monotonic() + 30
        while _alive(pid):
            assert time.monotonic() < deadline, "the orphaned sidecar kept running"
            threading.Event().wait(0.05)
    finally:
        os.close(write_end)


def test_owner_keys_match_what_the_extension_computes() -> None:
    """core.mjs's ownerKey reduces session ids exactly like events.owners.session_owner."""
    from specialists.events.owners import session_owner

    node = shutil.which("node")
    if node is None:
        pytest.skip("node is not installed")
    ids = ["01a230b9-c1bb-7754", "a b/c", "..x..", "", "ü" * 3, "x" * 300, "a..b", ".hidden."]
    core = Path(__file__).resolve().parents[2] / "src/specialists/pi_extension/core.mjs"
    script = (
        f"import {{ ownerKey }} from {json.dumps(str(core))};"
        f"console.log(JSON.stringify({json.dumps(ids)}.map((s) => ownerKey({{}}, s))));"
    )
    out = subprocess.run(
        [node, "--input-type=module", "-e", script],
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    assert json.loads(out.stdout) == [session_owner("pi", s) for s in ids]
