"""runners/pi_credentials.py: refuse a pi job only when pi certainly has no credential."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from specialists.base.errors import AgentUnavailable
from specialists.runners.pi_credentials import check_pi_credential


@pytest.fixture
def agent_dir(tmp_path: Path) -> Path:
    path = tmp_path / "pi-agent"
    path.mkdir()
    return path


def env(agent_dir: Path, **extra: str) -> dict[str, str]:
    return {"PI_CODING_AGENT_DIR": str(agent_dir), "HOME": str(agent_dir.parent), **extra}


def test_no_key_anywhere_is_refused_with_one_line(agent_dir: Path) -> None:
    with pytest.raises(AgentUnavailable) as refused:
        check_pi_credential("anthropic", env(agent_dir))
    assert refused.value.exit_code == 3
    line = refused.value.one_line()
    assert "pi has no credential for anthropic" in line and "ANTHROPIC_API_KEY" in line
    assert "\n" not in line


@pytest.mark.parametrize("extra", [{"ANTHROPIC_API_KEY": "k"}, {"ANTHROPIC_OAUTH_TOKEN": "t"}])
def test_an_environment_variable_pi_reads_is_enough(agent_dir: Path, extra) -> None:
    check_pi_credential("anthropic", env(agent_dir, **extra))


def test_a_stored_login_is_enough(agent_dir: Path) -> None:
    (agent_dir / "auth.json").write_text(json.dumps({"openai": {"type": "api_key", "key": "k"}}))
    check_pi_credential("openai", env(agent_dir))
    with pytest.raises(AgentUnavailable):
        check_pi_credential("anthropic", env(agent_dir))


def test_a_provider_models_json_defines_is_left_to_pi(agent_dir: Path) -> None:
    (agent_dir / "models.json").write_text(json.dumps({"providers": {"openai": {}}}))
    check_pi_credential("openai", env(agent_dir))


@pytest.mark.parametrize("provider", [None, "google-vertex", "amazon-bedrock", "mock", "x"])
def test_providers_whose_credentials_we_cannot_judge_are_left_to_pi(agent_dir, provider):
    check_pi_credential(provider, env(agent_dir))


@pytest.mark.parametrize(
    "text", ["{not json", "[]", '{"providers": []}', "[" * 100_000 + "]" * 100_000]
)
def test_an_unreadable_or_odd_file_makes_nothing_certain(agent_dir: Path, text: str) -> None:
    (agent_dir / "models.json").write_text(text)
    check_pi_credential("anthropic", env(agent_dir))


def test_a_fifo_in_place_of_auth_json_does_not_hang(agent_dir: Path) -> None:
    import os

    os.mkfifo(agent_dir / "auth.json")
    check_pi_credential("anthropic", env(agent_dir))  # unreadable: left to pi
