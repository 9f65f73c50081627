"""process/lookup.py `which`: shutil.which's answer on POSIX, without importing shutil (a
run and `status` would pay its bz2 and lzma imports). Held equal on the shapes a PATH takes,
planted ones included; no process is started."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from specialists.process.lookup import which


@pytest.fixture
def dirs(tmp_path: Path) -> dict[str, Path]:
    """a: a script without the x bit and a directory named like the tool; b: the tool, a
    FIFO with the x bit, a symlink to the tool and a dangling one; c: empty."""
    made = {name: tmp_path / name for name in "abc"}
    for d in made.values():
        d.mkdir()
    (made["a"] / "tool").write_text("#!/bin/sh\n")
    (made["a"] / "dir").mkdir(mode=0o755)
    tool = made["b"] / "tool"
    tool.write_text("#!/bin/sh\n")
    tool.chmod(0o755)
    os.mkfifo(made["b"] / "fifo")
    (made["b"] / "fifo").chmod(0o755)
    (made["b"] / "link").symlink_to(tool)
    (made["b"] / "dangling").symlink_to(made["b"] / "nowhere")
    return made


NAMES = ["tool", "dir", "fifo", "link", "dangling", "missing"]


@pytest.mark.parametrize("name", NAMES)
@pytest.mark.parametrize(
    "order", ["a:b:c", "c:b:a", "a::b", "", ":", "a:a:b", "b/../b", "relative", "nowhere:b"]
)
def test_which_answers_as_shutil_does(
    dirs: dict[str, Path], name: str, order: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(dirs["a"].parent)

    def entry(part: str) -> str:  # "a" -> its directory, "b/../b" -> b's, spelled so
        if part in ("", "relative"):
            return "b" if part else ""
        if part == "nowhere":
            return str(dirs["a"].parent / "nowhere")
        return str(dirs[part[0]]) + part[1:]

    path = ":".join(entry(part) for part in order.split(":"))
    assert which(name, path) == shutil.which(name, path=path)


def test_a_name_with_a_slash_is_checked_as_it_is_and_path_defaults_to_the_environment(
    dirs: dict[str, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    for given in (dirs["b"] / "tool", dirs["a"] / "tool", dirs["a"] / "dir", dirs["b"] / "fifo"):
        assert which(str(given)) == shutil.which(str(given))
    monkeypatch.setenv("PATH", f"{dirs['a']}:{dirs['b']}")
    assert which("tool") == shutil.which("tool") == str(dirs["b"] / "tool")
    monkeypatch.delenv("PATH")
    assert which("sh") == shutil.which("sh", path=os.defpath)
