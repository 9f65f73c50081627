"""Shared fixtures for every test.

- `isolated_env` (autouse): os.environ points HOME, XDG dirs and every agent's config dir at
  a temp tree, drops real keys and proxies, and sets SPECIALISTS_PROJECT_ROOT to a temp git
  repo. Nothing a test runs can read or write the real user config.
- `_no_network` (session, autouse): sockets may only connect to loopback or unix sockets;
  any other attempt raises and fails the test that made it, even if the error was caught.
- `_no_process_in_unit_tests` (autouse): a test under tests/unit (the fast tier) that starts
  a process (subprocess, fork, exec, spawn, os.system) fails, even if the error was caught:
  such a test belongs in tests/integration.
- `mock_llm`: a started MockLLM that pi, claude and codex in `isolated_env` already point at.
- `pi_bin`, `claude_bin`, `codex_bin`: the real CLIs, or a skip that says how to install.
- `supervisors`: the one start with its supervisor launch faked (tests/support/starting.py).
"""

from __future__ import annotations

import ipaddress
import os
import shutil
import socket
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from specialists.project import boot
from tests.support.agent_env import AgentEnv, build_agent_env, find_agent_bin, missing_reason
from tests.support.mock_llm import MockLLM
from tests.support.processes import end_left_behind
from tests.support.starting import FakeSupervisors

# Every process of ours boots its features first (specialists/__main__.py, Project); tests
# that build the rooms by hand run in this one, so it boots here, as a real process would.
boot()

# --------------------------------------------------------------------------- no network


class NetworkAccessDenied(RuntimeError):
    """A test tried to reach a non-loopback address."""


_blocked: list[str] = []


def _loopback_host(host: Any) -> bool:
    if host in (None, "", "localhost", "localhost.localdomain"):
        return True
    if isinstance(host, bytes):
        host = host.decode(errors="replace")
    try:
        return ipaddress.ip_address(str(host).split("%", 1)[0]).is_loopback
    except ValueError:
        return False  # a DNS name other than localhost: resolving it is already network


def _check_address(family: int, address: Any) -> None:
    if family == getattr(socket, "AF_UNIX", object()):
        return
    host = address[0] if isinstance(address, tuple) and address else address
    if not _loopback_host(host):
        _blocked.append(repr(address))
        raise NetworkAccessDenied(f"tests must not reach the network: connect to {address!r}")


@pytest.fixture(scope="session", autouse=True)
def _no_network() -> Iterator[None]:
    real_connect = socket.socket.connect
    real_connect_ex = socket.socket.connect_ex
    real_getaddrinfo = socket.getaddrinfo

    def connect(self: socket.socket, address: Any) -> None:
        _check_address(self.family, address)
        real_connect(self, address)

    def connect_ex(self: socket.socket, address: Any) -> int:
        _check_address(self.family, address)
        return real_connect_ex(self, address)

    def getaddrinfo(host: Any, *args: Any, **kwargs: Any) -> Any:
        if not _loopback_host(host):
            _blocked.append(f"getaddrinfo({host!r})")
            raise NetworkAccessDenied(f"tests must not reach the network: resolve {host!r}")
        return real_getaddrinfo(host, *args, **kwargs)

    mp = pytest.MonkeyPatch()
    mp.setattr(socket.socket, "connect", connect)
    mp.setattr(socket.socket, "connect_ex", connect_ex)
    mp.setattr(socket, "getaddrinfo", getaddrinfo)
    try:
        yield
    finally:
        mp.undo()


@pytest.fixture(autouse=True)
def _fail_on_network_attempt(_no_network: None) -> Iterator[None]:
    _blocked.clear()
    yield
    if _blocked:
        attempts = ", ".join(_blocked)
        _blocked.clear()
        pytest.fail(f"test tried to reach the network: {attempts}")


# --------------------------------------------------------------------------- no processes

UNIT_DIR = Path(__file__).resolve().parent / "unit"


class ProcessStartDenied(RuntimeError):
    """A fast-tier (unit) test tried to start a process."""


@pytest.fixture(autouse=True)
def _no_process_in_unit_tests(request: pytest.FixtureRequest) -> Iterator[None]:
    if UNIT_DIR not in Path(str(request.node.path)).parents:
        yield
        return
    tried: list[str] = []

    def deny(what: str) -> Any:
        def refuse(*args: Any, **kwargs: Any) -> Any:
            shown = repr(args[1] if what == "subprocess" and len(args) > 1 else args[:1])
            tried.append(f"{what} {shown[:120]}")
            raise ProcessStartDenied(
                f"unit tests start no process ({what} {shown[:120]}): "
                "move the test to tests/integration"
            )

        return refuse

    mp = pytest.MonkeyPatch()
    mp.setattr(subprocess.Popen, "_execute_child", deny("subprocess"))
    for name in ("fork", "forkpty", "posix_spawn", "posix_spawnp", "system", "execv", "execve",
                 "execvp", "execvpe", "spawnv", "spawnve", "spawnvp", "spawnvpe"):  # fmt: skip
        if hasattr(os, name):
            mp.setattr(os, name, deny(f"os.{name}"))
    try:
        yield
    finally:
        mp.undo()
    if tried:
        pytest.fail("a unit test started a process: " + "; ".join(tried))


# --------------------------------------------------------------------------- environment


@pytest.fixture(scope="session")
def _git_template(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One `git init` per session; each test copies it (much cheaper than running git)."""
    layout = build_agent_env(tmp_path_factory.mktemp("git-template"), git_init=True)
    return layout.project / ".git"


@pytest.fixture(autouse=True)
def isolated_env(
    request: pytest.FixtureRequest,
    tmp_path_factory: pytest.TempPathFactory,
    monkeypatch: pytest.MonkeyPatch,
    _git_template: Path,
) -> Iterator[AgentEnv]:
    """os.environ for this test = an isolated AgentEnv (see tests/support/agent_env.py).
    What the test left running in its directories (a job kept alive, a held agent) is
    ended after it, so it neither waits out the session nor loads the tests after it."""
    layout = build_agent_env(tmp_path_factory.mktemp("env"), git_init=False)
    shutil.copytree(_git_template, layout.project / ".git", symlinks=True)
    for key in list(os.environ):
        if key not in layout.env:
            monkeypatch.delenv(key)
    for key, value in layout.env.items():
        monkeypatch.setenv(key, value)
    yield layout
    if UNIT_DIR in Path(str(request.node.path)).parents:
        return  # a unit test starts no process
    roots = [str(layout.root)]
    if isinstance(tmp := request.node.funcargs.get("tmp_path"), Path):
        roots.append(str(tmp))
    end_left_behind(roots)


@pytest.fixture
def mock_llm(isolated_env: AgentEnv, monkeypatch: pytest.MonkeyPatch) -> Iterator[MockLLM]:
    """A running MockLLM; pi/claude/codex config in `isolated_env` points at it."""
    with MockLLM() as server:
        for key, value in isolated_env.point_at(server.base_url).items():
            monkeypatch.setenv(key, value)
        yield server
        # A rule that raised or a crash in the mock must not pass as an agent-side error.
        assert not server.errors, f"mock LLM errors: {server.errors}"


@pytest.fixture
def supervisors(monkeypatch: pytest.MonkeyPatch) -> Iterator[FakeSupervisors]:
    """Jobs start for real (supervise/start.py) on the test's store; no supervisor runs."""
    fake = FakeSupervisors()
    monkeypatch.setattr("specialists.supervise.start.spawn_supervisor", fake)
    yield fake
    fake.close()


def _agent_bin(name: str) -> Path:
    path = find_agent_bin(name)
    if path is None:
        pytest.skip(missing_reason(name))
    return path


@pytest.fixture
def pi_bin() -> Path:
    return _agent_bin("pi")


@pytest.fixture
def claude_bin() -> Path:
    return _agent_bin("claude")


@pytest.fixture
def codex_bin() -> Path:
    return _agent_bin("codex")
