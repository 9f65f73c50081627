"""The shared words are defined once and every room agrees with them."""

from __future__ import annotations

from pathlib import Path

from specialists.base import vocab
from specialists.runners.registry import RUNNER_CLASSES


def test_every_runner_name_has_a_class_and_the_default_is_one_of_them() -> None:
    assert tuple(RUNNER_CLASSES) == (*vocab.RUNNER_NAMES, vocab.PROC_RUNNER, vocab.WORKFLOW_RUNNER)
    assert vocab.DEFAULT_RUNNER in vocab.RUNNER_NAMES


def test_default_permission_is_a_tier() -> None:
    assert vocab.DEFAULT_PERMISSION in vocab.PERMISSION_TIERS


def test_split_model_reads_provider_and_name_at_the_first_slash() -> None:
    assert vocab.split_model("openrouter/anthropic/claude") == ("openrouter", "anthropic/claude")
    assert vocab.split_model("sonnet") == (None, "sonnet")
    assert vocab.split_model("/x") == (None, "/x")
    assert vocab.split_model("x/") == (None, "x/")


def test_the_catalog_and_the_runners_resolve_skill_paths_one_way(tmp_path: Path) -> None:
    """One rule (seed 000 section 4.1): ~ is home, absolute stays, relative is under base."""
    from specialists.catalog.skills import resolve_skill_path

    home = tmp_path / "home"
    assert resolve_skill_path("~", tmp_path, home=home) == home
    assert resolve_skill_path("~/s/x", tmp_path, home=home) == home / "s" / "x"
    assert resolve_skill_path("/abs/s", tmp_path, home=home) == Path("/abs/s")
    assert resolve_skill_path("./s", tmp_path, home=home) == tmp_path / "s"
    assert resolve_skill_path("~root/s", tmp_path).is_absolute()  # another user's home
    assert resolve_skill_path("~no-such-user-xyz/s", tmp_path) == tmp_path / "~no-such-user-xyz/s"
