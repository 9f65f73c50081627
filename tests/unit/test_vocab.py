"""The shared words are defined once and every room agrees with them."""

from __future__ import annotations

from specialists import vocab
from specialists.runners.registry import RUNNER_CLASSES


def test_every_runner_name_has_a_class_and_the_default_is_one_of_them() -> None:
    assert tuple(RUNNER_CLASSES) == vocab.RUNNER_NAMES
    assert vocab.DEFAULT_RUNNER in vocab.RUNNER_NAMES


def test_default_permission_is_a_tier() -> None:
    assert vocab.DEFAULT_PERMISSION in vocab.PERMISSION_TIERS
