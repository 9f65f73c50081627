"""Which Node starts pi (process/node.py): the one its package accepts, or one clear line.

Fake `node` binaries are tiny shell scripts that print a version; the real pi 1.6.0 and the
Node scripts/setup put beside it under .tools/ prove the lookup on the real layout. A pi that
cannot run is refused before any job exists (exit 3, one line naming both Nodes).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from specialists.base.errors import AgentUnavailable
from specialists.process import node as node_module
from specialists.process.node import NODE_ENV, choose_node, package_of
from specialists.runners.pi import resolve_pi_command

pytestmark = pytest.mark.integration


def fake_node(directory: Path, version: str) -> Path:
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / "node"
    path.write_text(f"#!/bin/sh\necho v{version}\n")
    path.chmod(0o755)
    return path


def fake_pi_package(root: Path, engines: str = ">=22.19.0") -> Path:
    """An npm layout: node_modules/<pkg>/cli.js and node_modules/.bin/pi -> it."""
    package = root / "node_modules" / "@earendil-works" / "pi-coding-agent"
    package.mkdir(parents=True)
    doc = {"name": "@earendil-works/pi-coding-agent", "version": "1.6.0"}
    (package / "package.json").write_text(json.dumps({**doc, "engines": {"node": engines}}))
    cli = package / "cli.js"
    cli.write_text("#!/usr/bin/env node\n")
    cli.chmod(0o755)
    bin_dir = root / "node_modules" / ".bin"
    bin_dir.mkdir()
    (bin_dir / "pi").symlink_to(cli)
    return bin_dir / "pi"


def pi_tester_project() -> Path:
    """The test project with a `tester` specialist on pi."""
    project = Path(os.environ["SPECIALISTS_PROJECT_ROOT"])
    specs = project / "specialists"
    specs.mkdir(exist_ok=True)
    (specs / "tester.specialist.yaml").write_text(
        "metadata: {name: tester, description: t}\n"
        "execution: {runner: pi, model: mock/mock-model}\n"
        "prompt: {system: s, task_template: $prompt}\n"
    )
    return project


def run_tester(project: Path, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    argv = [sys.executable, "-m", "specialists", "run", "tester", "--prompt", "hi"]
    return subprocess.run(argv, cwd=project, env=env, capture_output=True, text=True, timeout=120)


def no_jobs(project: Path) -> bool:
    jobs = project / ".specialists" / "jobs"
    return not jobs.exists() or not any(jobs.iterdir())


@pytest.fixture(autouse=True)
def fresh_cache() -> None:
    node_module._cache.clear()


def test_the_package_says_which_node_it_needs(tmp_path: Path) -> None:
    pi = fake_pi_package(tmp_path)
    package = package_of(str(pi))
    assert package is not None
    assert (package.name, package.version, package.needs) == (
        "@earendil-works/pi-coding-agent",
        "1.6.0",
        (22, 19, 0),
    )


@pytest.mark.parametrize("planted", ["fifo", "dev-zero"])
def test_a_planted_package_json_is_passed_over_not_waited_on(tmp_path: Path, planted: str) -> None:
    """A FIFO or a link to /dev/zero where the package.json should be: the lookup goes on
    to the next directory up (here none), never hangs or reads without end."""
    pi = fake_pi_package(tmp_path)
    package_json = (
        tmp_path / "node_modules" / "@earendil-works" / "pi-coding-agent" / "package.json"
    )
    package_json.unlink()
    if planted == "fifo":
        os.mkfifo(package_json)
    else:
        package_json.symlink_to("/dev/zero")
    assert package_of(str(pi)) is None


def test_a_node_beside_the_launcher_wins_over_an_older_one_on_path(tmp_path: Path) -> None:
    pi = fake_pi_package(tmp_path)
    old = fake_node(tmp_path / "system", "20.20.2")
    new = fake_node(pi.parent, "24.22.3")
    env = {"PATH": str(old.parent)}
    assert resolve_pi_command({}, {**env, "SPECIALISTS_PI_BIN": str(pi)}) == [str(new), str(pi)]


def test_a_new_enough_node_on_path_is_used(tmp_path: Path) -> None:
    pi = fake_pi_package(tmp_path)
    new = fake_node(tmp_path / "system", "22.19.0")
    assert choose_node(str(pi), {"PATH": str(new.parent)}, "pi") == str(new)


def test_only_an_old_node_is_one_line_naming_found_and_needed(tmp_path: Path) -> None:
    pi = fake_pi_package(tmp_path)
    old = fake_node(tmp_path / "system", "20.20.2")
    with pytest.raises(AgentUnavailable) as caught:
        choose_node(str(pi), {"PATH": str(old.parent)}, "pi")
    message = caught.value.one_line()
    assert "\n" not in message
    assert "pi 1.6.0 needs Node >= 22.19.0" in message
    assert f"found {old} (v20.20.2)" in message
    assert "scripts/setup" in message and NODE_ENV in message


def test_a_chosen_node_is_the_only_candidate(tmp_path: Path) -> None:
    pi = fake_pi_package(tmp_path)
    fake_node(pi.parent, "24.22.3")  # would do, but a person named another one
    old = fake_node(tmp_path / "mine", "22.1.0")
    with pytest.raises(AgentUnavailable, match=r"found .*mine/node \(v22\.1\.0\)"):
        choose_node(str(pi), {"PATH": "", NODE_ENV: str(old)}, "pi")


def test_a_node_that_does_not_run_and_no_node_at_all(tmp_path: Path) -> None:
    pi = fake_pi_package(tmp_path)
    broken = tmp_path / "broken" / "node"
    broken.parent.mkdir()
    broken.write_text("#!/bin/sh\nexit 1\n")
    broken.chmod(0o755)
    with pytest.raises(AgentUnavailable, match="does not run"):
        choose_node(str(pi), {"PATH": str(broken.parent)}, "pi")
    with pytest.raises(AgentUnavailable, match="no `node` on PATH"):
        choose_node(str(pi), {"PATH": str(tmp_path / "empty")}, "pi")


def test_the_real_pi_gets_the_node_setup_installed(pi_bin: Path, tmp_path: Path) -> None:
    """scripts/setup's layout: pi 1.6.0 and a Node >= 22.19 side by side under .tools."""
    old = fake_node(tmp_path / "system", "20.20.2")
    argv = resolve_pi_command({}, {"PATH": str(old.parent), "SPECIALISTS_PI_BIN": str(pi_bin)})
    assert argv[1] == str(pi_bin)
    out = subprocess.run([*argv, "--version"], capture_output=True, text=True, timeout=60)
    assert out.stdout.strip() == "1.6.0", out.stderr


def test_a_pi_job_without_a_usable_node_is_refused_before_it_exists(
    pi_bin: Path, tmp_path: Path
) -> None:
    """`sp run` on pi whose only Node is too old: exit 3, one line, no job directory."""
    project = pi_tester_project()
    lonely = tmp_path / "lonely-bin"
    lonely.mkdir()
    (lonely / "pi").symlink_to(os.path.realpath(pi_bin))  # no node beside it
    old = fake_node(tmp_path / "system", "20.20.2")
    env = {**os.environ, "PATH": f"{lonely}:{old.parent}:/usr/bin:/bin"}
    out = run_tester(project, env)
    assert out.returncode == 3, out
    lines = [ln for ln in out.stderr.splitlines() if ln.strip()]
    assert "needs Node >= 22.19.0" in lines[0] and "v20.20.2" in lines[0], out.stderr
    assert "Traceback" not in out.stderr
    assert no_jobs(project)


def test_a_removed_tools_dir_is_one_line_and_no_job(pi_bin: Path, tmp_path: Path) -> None:
    """The pi a project was pointed at (its .tools) is gone: `sp run` says so, exit 3, and no
    job is created; `sp doctor` names it too."""
    project = pi_tester_project()
    gone = tmp_path / ".tools" / "node_modules" / ".bin" / "pi"
    env = {**os.environ, "SPECIALISTS_PI_BIN": str(gone), "PATH": "/usr/bin:/bin"}
    out = run_tester(project, env)
    assert out.returncode == 3, out
    first = out.stderr.strip().splitlines()[0]
    assert "pi is not installed" in first and str(gone) in first, out.stderr
    assert "Traceback" not in out.stderr
    assert no_jobs(project)


def _counting_node(directory: Path, version: str) -> tuple[Path, Path]:
    """A fake node that also counts how often it was asked."""
    directory.mkdir(parents=True, exist_ok=True)
    count, path = directory / "asked", directory / "node"
    path.write_text(f"#!/bin/sh\necho x >> {count}\necho v{version}\n")
    path.chmod(0o755)
    return path, count


def _asked(count: Path) -> int:
    return len(count.read_text().splitlines()) if count.exists() else 0


def test_a_version_asked_once_is_kept_in_the_state_directory(tmp_path: Path) -> None:
    pi = fake_pi_package(tmp_path)
    node, count = _counting_node(tmp_path / "system", "24.22.3")
    state = tmp_path / "state"
    state.mkdir()
    env = {"PATH": str(node.parent)}
    for _ in range(3):  # three runs: three processes, each with an empty memory
        node_module._cache.clear()
        assert choose_node(str(pi), env, "pi", state) == str(node)
    assert _asked(count) == 1
    kept = json.loads((state / "cache" / "nodes.json").read_text())
    assert kept["nodes"][str(node)][2] == [24, 22, 3]
    # A Node replaced in place (another size or mtime) is asked again.
    node.write_text(node.read_text().replace("24.22.3", "20.20.2") + "\n")
    node_module._cache.clear()
    with pytest.raises(AgentUnavailable, match=r"v20\.20\.2"):
        choose_node(str(pi), env, "pi", state)
    assert _asked(count) == 2


def test_no_state_directory_no_cache_made(tmp_path: Path) -> None:
    pi = fake_pi_package(tmp_path)
    node, _ = _counting_node(tmp_path / "system", "24.22.3")
    assert choose_node(str(pi), {"PATH": str(node.parent)}, "pi", tmp_path / "none") == str(node)
    assert not (tmp_path / "none").exists()


@pytest.mark.parametrize("damage", ["garbage", "wrong", "old", "symlink", "fifo", "directory"])
def test_a_damaged_or_planted_cache_costs_a_question_never_the_run(
    tmp_path: Path, damage: str
) -> None:
    pi = fake_pi_package(tmp_path)
    node, count = _counting_node(tmp_path / "system", "24.22.3")
    state = tmp_path / "state"
    (state / "cache").mkdir(parents=True)
    kept = state / "cache" / "nodes.json"
    st = node.stat()
    if damage == "garbage":
        kept.write_bytes(b"\x00{not json")
    elif damage == "wrong":  # a version that is no version: asked again
        body = {str(node): [st.st_size, st.st_mtime_ns, ["24", None, 3]]}
        kept.write_text(json.dumps({"schema": 1, "nodes": body}))
    elif damage == "old":  # the answer for another binary at this path
        body = {str(node): [st.st_size + 1, st.st_mtime_ns, [99, 0, 0]]}
        kept.write_text(json.dumps({"schema": 1, "nodes": body}))
    elif damage == "symlink":
        secret = tmp_path / "elsewhere.json"
        secret.write_text("{}")
        kept.symlink_to(secret)
    elif damage == "fifo":
        os.mkfifo(kept)
    else:
        kept.mkdir()
    env = {"PATH": str(node.parent)}
    assert choose_node(str(pi), env, "pi", state) == str(node)
    assert _asked(count) == 1
    if damage == "symlink":
        assert (tmp_path / "elsewhere.json").read_text() == "{}"  # never written through


def test_concurrent_runs_keep_a_readable_cache(tmp_path: Path) -> None:
    """Runs in parallel, each asking for its own Node: the cache stays whole JSON, and each
    asks at most once more after."""
    pi = fake_pi_package(tmp_path)
    state = tmp_path / "state"
    state.mkdir()
    nodes = [_counting_node(tmp_path / f"n{i}", "24.22.3") for i in range(6)]
    code = (
        "import sys; from pathlib import Path; from specialists.process.node import choose_node;"
        "choose_node(sys.argv[1], {'PATH': sys.argv[2]}, 'pi', Path(sys.argv[3]))"
    )
    procs = [
        subprocess.Popen([sys.executable, "-c", code, str(pi), str(n.parent), str(state)])
        for n, _ in nodes
    ]
    assert all(p.wait(timeout=60) == 0 for p in procs)
    doc = json.loads((state / "cache" / "nodes.json").read_text())
    assert set(doc["nodes"]) <= {str(n) for n, _ in nodes} and doc["nodes"]
    for node, count in nodes:
        node_module._cache.clear()
        assert choose_node(str(pi), {"PATH": str(node.parent)}, "pi", state) == str(node)
        assert 1 <= _asked(count) <= 2
