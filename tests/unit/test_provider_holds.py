"""The pure parts of a usage-limit pause: provider holds (store/holds.py) and the idle limit
of a paused job (supervise/due.py). No process starts."""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest

from specialists.events.lines import status_line
from specialists.features.usage_limits import holds
from specialists.fronts.jobs import job_brief
from specialists.store.kinds import undeclared
from specialists.store.records import JobStatus
from specialists.supervise.due import Facts, IdleTimedOut, Limits, due

NOW = 1_796_205_600_000


def test_a_hold_lasts_until_its_reset(tmp_path: Path) -> None:
    holds.hold(tmp_path, "anthropic", NOW + 60_000, "job1", "usage limit reached")
    found = holds.held(tmp_path, "anthropic", NOW)
    assert found == holds.ProviderHold("anthropic", NOW + 60_000, "job1", "usage limit reached")
    assert holds.held(tmp_path, "anthropic", NOW + 60_000) is None  # over at the reset
    assert holds.held(tmp_path, "openai", NOW) is None  # only that provider's launches
    assert undeclared(tmp_path) == []


def test_a_later_reset_wins_an_earlier_one_never_does(tmp_path: Path) -> None:
    holds.hold(tmp_path, "openai", NOW + 60_000, "a", "x")
    holds.hold(tmp_path, "openai", NOW + 10_000, "b", "y")
    assert holds.held(tmp_path, "openai", NOW).job == "a"  # type: ignore[union-attr]
    holds.hold(tmp_path, "openai", NOW + 90_000, "c", "z")
    assert holds.held(tmp_path, "openai", NOW).until_ms == NOW + 90_000  # type: ignore[union-attr]


@pytest.mark.parametrize(
    "planted",
    ["not json", '{"schema": 1, "until_ms": "soon"}', '{"schema": 9, "until_ms": 1}', "[]"],
)
def test_a_damaged_hold_is_no_hold(tmp_path: Path, planted: str) -> None:
    (tmp_path / "holds").mkdir()
    (tmp_path / "holds" / "openai.json").write_text(planted)
    assert holds.held(tmp_path, "openai", NOW) is None


def test_a_planted_link_is_not_followed(tmp_path: Path) -> None:
    (tmp_path / "holds").mkdir()
    secret = tmp_path / "secret.json"
    secret.write_text('{"schema": 1, "until_ms": 99999999999999, "job": "x"}')
    os.symlink(secret, tmp_path / "holds" / "openai.json")
    assert holds.held(tmp_path, "openai", NOW) is None


def test_a_provider_name_cannot_escape_the_holds_directory(tmp_path: Path) -> None:
    holds.hold(tmp_path, "../../etc/evil", NOW + 1000, "j", "x")
    assert [p.parent.name for p in tmp_path.rglob("*.json")] == ["holds"]
    assert holds.held(tmp_path, "../../etc/evil", NOW) is not None


@pytest.mark.parametrize(
    ("runner", "model", "provider"),
    [
        ("claude", "anthropic/claude-sonnet-4-5", "claude"),
        ("codex", "gpt-5-codex", "codex"),
        ("native", "anthropic/claude-sonnet-4-5", "anthropic"),
        ("pi", "openai/gpt-5", "openai"),
        ("pi", None, "pi"),
        (None, None, "unknown"),
    ],
)
def test_whose_limit_a_job_meets(runner: str | None, model: str | None, provider: str) -> None:
    assert holds.provider_of(runner, model) == provider


IDLE = Limits(idle_timeout_ms=60_000)


def _facts(**changes: object) -> Facts:
    base: dict[str, object] = {
        "status": "waiting",
        "run_started": 0.0,
        "last_output": 0.0,
        "limits": IDLE,
        "idle_since": 0.0,
        "saved_at": 10_000.0,
    }
    return Facts(**{**base, **changes})  # type: ignore[arg-type]


def test_a_paused_job_is_not_idle_before_its_reset() -> None:
    # five hours paused: no idle end while it waits, the idle limit runs from the reset on
    paused = _facts(paused_until=5 * 3600.0)
    assert not [d for d in due(4 * 3600.0, paused) if isinstance(d, IdleTimedOut)]
    assert not [d for d in due(5 * 3600.0 + 59, paused) if isinstance(d, IdleTimedOut)]
    assert IdleTimedOut(60_000) in due(5 * 3600.0 + 60, paused)
    # without a pause the same wait is idle after a minute
    assert IdleTimedOut(60_000) in due(60.0, _facts())


def test_every_view_says_paused_or_held_until_the_reset() -> None:
    until = int(time.time() * 1000) + 3_600_000
    paused = JobStatus(
        id="ab12cd34", specialist="tester", status="waiting", current_event="usage_limit",
        paused_until_ms=until,
    )  # fmt: skip
    held = JobStatus(
        id="ef56ab78", specialist="tester", status="starting", current_event="held",
        paused_until_ms=until,
    )  # fmt: skip
    assert "waiting" in status_line(paused) and "(usage limit)" in status_line(paused)
    assert " paused until " in status_line(paused)
    assert " held until " in status_line(held)
    assert job_brief(paused)["doing"].startswith("paused until ")
    assert job_brief(held)["doing"].startswith("held until ")
    done = JobStatus(id="ab12cd34", specialist="tester", status="done", paused_until_ms=until)
    assert "until" not in status_line(done)  # an ended job is never shown paused
