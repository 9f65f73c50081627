"""A squash asked for between a child's child_closed and its job's final status waits for
that status (bounded) instead of refusing the child as still finalizing."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import pytest

from specialists.features.threads import parent


def _child(phase: str, active: bool) -> Any:
    return SimpleNamespace(phase=phase, status=SimpleNamespace(active=active), record="r")


def test_a_closed_child_still_winding_down_is_waited_for(monkeypatch: pytest.MonkeyPatch) -> None:
    views = iter([_child("closed", True), _child("closed", False)])
    monkeypatch.setattr(parent, "child_view", lambda threads, jobs, record: next(views))
    done = parent._wound_down(None, None, _child("closed", True))  # type: ignore[arg-type]
    assert not done.status.active


def test_the_wait_is_bounded_and_never_applies_to_a_running_child(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(parent, "WIND_DOWN_WAIT_S", 0.2)
    monkeypatch.setattr(parent, "child_view", lambda threads, jobs, record: _child("closed", True))
    assert parent._wound_down(None, None, _child("closed", True)).status.active  # type: ignore[arg-type]
    running = _child("running", True)
    assert parent._wound_down(None, None, running) is running  # type: ignore[arg-type]
