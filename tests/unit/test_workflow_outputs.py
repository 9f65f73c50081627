"""A workflow child's `output` file (seed 004): written inside the project only, bounded,
atomically, never through a symlink and never over something that is not a regular file."""

from __future__ import annotations

import os
import threading
from pathlib import Path

import pytest

from specialists.base.errors import UserError
from specialists.features.workflows.options import child_options
from specialists.features.workflows.outputs import MAX_OUTPUT_BYTES, check_output, write_output
from specialists.features.workflows.testing import FakeChildren
from tests.unit.test_workflows_runtime import go, make


@pytest.mark.parametrize(
    ("raw", "said"),
    [
        ("../up.md", "leaves the project"),
        ("reports/../../up.md", "leaves the project"),
        (".", "leaves the project"),
        (".specialists/jobs/x/result.txt", "inside .specialists/"),
        ("./.git/config", "inside .git/"),
        (".GIT/config", "inside .GIT/"),
        ("vendor/lib/.git/config", "inside .git/"),
        (".Specialists/jobs/x/result.txt", "inside .Specialists/"),
        ("/abs/../etc/passwd", "leaves its directory"),
        ("a\x1b[2Jb.md", "control characters"),
        ("x" * 5000, "over 4,096"),
        ("", "must be a file path"),
        (7, "must be a file path"),
        (["a"], "must be a file path"),
    ],
)
def test_bad_output_paths_are_refused_when_the_options_are_read(raw: object, said: str) -> None:
    with pytest.raises(UserError, match=said):
        child_options({"key": "k", "agent": "a", "task": "t", "output": raw})


def test_no_output_and_a_plain_path_are_read() -> None:
    assert check_output(None, "w") is None and check_output(False, "w") is None
    assert child_options({"key": "k", "agent": "a", "task": "t", "output": "r/a.md"}).output == (
        "r/a.md"
    )
    a = child_options({"key": "k", "agent": "a", "task": "t", "output": "r/a.md"}).input_hash()
    b = child_options({"key": "k", "agent": "a", "task": "t", "output": "r/b.md"}).input_hash()
    assert a != b  # where it writes is one of the key's inputs


def test_it_writes_inside_the_project_making_directories(tmp_path: Path) -> None:
    project = tmp_path / "proj"
    project.mkdir()
    written = write_output(project, "reports/lane-a/review.md", "findings\n", "w")
    assert written == project / "reports" / "lane-a" / "review.md"
    assert written.read_text() == "findings\n"
    again = write_output(project, str(project / "reports" / "lane-a" / "review.md"), "v2", "w")
    assert again == written and written.read_text() == "v2"  # an absolute path inside it
    assert sorted(os.listdir(written.parent)) == ["review.md"]  # no temp file left
    with pytest.raises(UserError, match="is outside the project"):
        write_output(project, str(tmp_path / "elsewhere.md"), "x", "w")
    assert not (tmp_path / "elsewhere.md").exists()
    (project / "vendor" / "lib" / ".git").mkdir(parents=True)  # a nested repository
    with pytest.raises(UserError, match=r"inside \.Git/"):
        write_output(project, str(project / "vendor/lib/.Git/config"), "x", "w")
    assert os.listdir(project / "vendor" / "lib" / ".git") == []


def test_a_symlinked_directory_out_of_the_project_is_not_followed(tmp_path: Path) -> None:
    project, outside = tmp_path / "proj", tmp_path / "outside"
    project.mkdir()
    outside.mkdir()
    (project / "reports").symlink_to(outside, target_is_directory=True)
    with pytest.raises(UserError, match="reports is a symbolic link or not a directory"):
        write_output(project, "reports/review.md", "x", "w")
    assert list(outside.iterdir()) == []
    (project / "deep").mkdir()
    (project / "deep" / "down").symlink_to(outside, target_is_directory=True)
    with pytest.raises(UserError, match="deep/down is a symbolic link"):
        write_output(project, "deep/down/x/review.md", "x", "w")
    assert list(outside.iterdir()) == []


def test_a_symlink_fifo_or_directory_at_the_name_is_left_alone(tmp_path: Path) -> None:
    project = tmp_path / "proj"
    project.mkdir()
    secret = tmp_path / "secret.txt"
    secret.write_text("keep me")
    (project / "link.md").symlink_to(secret)
    os.mkfifo(project / "pipe.md")
    (project / "dir.md").mkdir()
    for name, what in (
        ("link.md", "a symbolic link"),
        ("pipe.md", "a FIFO"),
        ("dir.md", "a directory"),
    ):
        done = threading.Event()
        errors: list[str] = []

        def attempt(
            name: str = name, errors: list[str] = errors, done: threading.Event = done
        ) -> None:
            try:
                write_output(project, name, "x", "w")
            except UserError as exc:
                errors.append(exc.message)
            done.set()

        threading.Thread(target=attempt, daemon=True).start()
        assert done.wait(10), f"writing over {name} hung"
        assert len(errors) == 1 and f"is {what}; not replaced" in errors[0]
    assert secret.read_text() == "keep me" and (project / "link.md").is_symlink()


def test_an_answer_over_the_bound_is_not_written(tmp_path: Path) -> None:
    with pytest.raises(UserError, match="over the 16 MiB"):
        write_output(tmp_path, "big.md", "x" * (MAX_OUTPUT_BYTES + 1), "w")
    assert not (tmp_path / "big.md").exists()


def test_two_keys_of_one_run_may_not_share_an_output_file(tmp_path: Path) -> None:
    children = FakeChildren()
    runs = make(tmp_path, children)
    items = [
        {"key": "a", "agent": "x", "task": "t", "output": "r/same.md"},
        {"key": "b", "agent": "x", "task": "t", "output": "r/./same.md"},
    ]
    with pytest.raises(UserError, match="already the output of key 'a'"):
        go(runs.all(items))
    assert children.launches == []  # refused before either launched
    go(runs.run("c", agent="x", task="t", output="r/c.md"))
    with pytest.raises(UserError, match="already the output of key 'c'"):
        go(runs.run("d", agent="x", task="t", output="r/c.md"))
