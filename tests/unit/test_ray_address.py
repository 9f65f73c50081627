"""`--executor ray` without an address joins only a cluster this user started or named (issue
21 item 3): the `ray start` address file in /tmp/ray is taken only when it is this user's own.
No Ray needed: the file is planted in a temporary folder standing for /tmp/ray; another
user's ownership is made with chown to an unused uid (we are root in CI), or through the
`uid` seam when we are not."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from specialists.errors import AgentUnavailable, UserError
from specialists.executors.ray_address import cluster_file, resolve_address

OTHER_UID = 4242  # no such user: ownership only
ROOT = os.getuid() == 0


@pytest.fixture
def ray_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.delenv("RAY_ADDRESS", raising=False)
    folder = tmp_path / "ray"
    folder.mkdir(mode=0o755)
    folder.chmod(0o755)
    return folder


def plant(folder: Path, text: str = "10.0.0.9:6379\n", mode: int = 0o644) -> Path:
    path = folder / "ray_current_cluster"
    path.write_text(text)
    path.chmod(mode)
    return path


def test_our_own_file_names_the_cluster(ray_dir: Path) -> None:
    path = plant(ray_dir, "127.0.0.1:6379\nmore\n")
    assert resolve_address("auto", current=path) == "127.0.0.1:6379"


def test_no_file_means_no_cluster(ray_dir: Path) -> None:
    with pytest.raises(AgentUnavailable, match="no Ray cluster is running"):
        resolve_address("auto", current=ray_dir / "ray_current_cluster")


def test_a_named_address_is_taken_and_the_file_never_read(
    ray_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = plant(ray_dir, mode=0o666)  # hostile, but not consulted
    assert resolve_address("10.1.1.1:6379", current=path) == "10.1.1.1:6379"
    monkeypatch.setenv("RAY_ADDRESS", "10.2.2.2:6379")
    assert resolve_address("auto", current=path) == "10.2.2.2:6379"


@pytest.mark.skipif(not ROOT, reason="chown to another uid needs root; the seam test covers it")
def test_another_users_file_is_refused(ray_dir: Path) -> None:
    path = plant(ray_dir)
    os.chown(path, OTHER_UID, OTHER_UID)
    with pytest.raises(UserError, match=f"belongs to uid {OTHER_UID}, not to this user"):
        resolve_address("auto", current=path)


def test_another_users_file_through_the_seam(ray_dir: Path) -> None:
    path = plant(ray_dir)
    with pytest.raises(UserError, match="not to this user"):
        cluster_file(path, uid=os.getuid() + 1)


@pytest.mark.skipif(not ROOT, reason="chown to another uid needs root")
def test_a_folder_another_user_owns_is_refused(ray_dir: Path) -> None:
    path = plant(ray_dir)
    os.chown(ray_dir, OTHER_UID, OTHER_UID)
    with pytest.raises(UserError, match="who can replace it"):
        resolve_address("auto", current=path)


@pytest.mark.parametrize(
    ("file_mode", "dir_mode", "problem"),
    [
        (0o666, 0o755, r"can be written by others \(mode 666\)"),
        (0o620, 0o755, r"can be written by others \(mode 620\)"),
        (0o644, 0o777, "can be written by others, who can replace it"),
    ],
)
def test_writable_by_others_is_refused(
    ray_dir: Path, file_mode: int, dir_mode: int, problem: str
) -> None:
    path = plant(ray_dir, mode=file_mode)
    ray_dir.chmod(dir_mode)
    with pytest.raises(UserError, match=problem) as err:
        resolve_address("auto", current=path)
    assert "not joining the Ray cluster" in err.value.one_line()


def test_a_sticky_shared_folder_like_tmp_is_fine(ray_dir: Path) -> None:
    path = plant(ray_dir)
    ray_dir.chmod(0o1777)
    assert resolve_address("auto", current=path) == "10.0.0.9:6379"


def test_a_symlink_or_a_fifo_is_refused_without_hanging(ray_dir: Path, tmp_path: Path) -> None:
    target = plant(tmp_path, "10.6.6.6:6379\n")
    link = ray_dir / "ray_current_cluster"
    link.symlink_to(target)
    with pytest.raises(UserError, match="not joining the Ray cluster"):
        resolve_address("auto", current=link)
    link.unlink()
    os.mkfifo(link, 0o644)
    with pytest.raises(UserError, match="is not a regular file"):
        resolve_address("auto", current=link)


def test_the_folder_itself_may_not_be_a_symlink(ray_dir: Path, tmp_path: Path) -> None:
    real = tmp_path / "elsewhere"
    real.mkdir()
    plant(real)
    fake = tmp_path / "fake-ray"
    fake.symlink_to(real)
    with pytest.raises(UserError, match="is not a directory"):
        resolve_address("auto", current=fake / "ray_current_cluster")
