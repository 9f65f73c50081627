"""External-job profiles before anything runs: the definition names a provider, the person's
config.toml registers it, and the prompt digest says what a provider job is for."""

from __future__ import annotations

from pathlib import Path

import pytest

from specialists.base.errors import ConfigError, UserError
from specialists.base.reader import Invalid
from specialists.catalog.schema import parse_runner
from specialists.runners.base import LaunchSpec
from specialists.runners.external_job import prompt_digest, provider_options


@pytest.mark.parametrize(
    ("block", "said"),
    [
        ({"type": "external-job"}, "runner.provider: expected a provider name"),
        ({"type": "external-job", "provider": "../x"}, "runner.provider: expected a provider"),
        ({"type": "external-job", "provider": "a/b"}, "runner.provider: expected a provider"),
        ({"type": "external-job", "provider": "p", "options": [1]}, "runner.options: expected a"),
    ],
)
def test_a_definition_must_name_a_provider(block: dict[str, object], said: str) -> None:
    with pytest.raises(Invalid) as info:
        parse_runner(block, "runner")
    assert said in str(info.value)


def test_external_job_is_a_runner_name_with_options() -> None:
    runner, options = parse_runner(
        {"type": "external_job", "provider": "surf-oracle", "options": {"model": "pro"}}, "runner"
    )
    assert runner == "external-job" and options == {
        "provider": "surf-oracle",
        "options": {"model": "pro"},
    }


def test_the_provider_comes_from_the_persons_registry() -> None:
    tables = {"external_job_providers": {"surf": {"command": "surf-job", "args": ["--json"]}}}
    resolved = provider_options(tables, {"provider": "surf", "options": {}})
    assert resolved["provider_command"] == ["surf-job", "--json"]
    with pytest.raises(UserError, match="'other' is not registered \\(registered: surf\\)"):
        provider_options(tables, {"provider": "other"})
    with pytest.raises(UserError, match="registered: none"):
        provider_options({}, {"provider": "surf"})
    for entry, said in (
        ({}, "command: expected a command"),
        ({"command": "x\x00y"}, "command: expected a command"),
        ({"command": "x", "args": "--json"}, "args: expected a list"),
    ):
        with pytest.raises(ConfigError, match=said):
            provider_options({"external_job_providers": {"surf": entry}}, {"provider": "surf"})


def test_the_digest_changes_with_the_prompt_the_instructions_and_the_options(
    tmp_path: Path,
) -> None:
    def spec(prompt: str, system: str = "") -> LaunchSpec:
        return LaunchSpec("j", tmp_path, tmp_path, prompt, system, None)

    base = prompt_digest(spec("q"), "p", {})
    assert base == prompt_digest(spec("q"), "p", {})
    others = {
        prompt_digest(spec("q2"), "p", {}),
        prompt_digest(spec("q", "be brief"), "p", {}),
        prompt_digest(spec("q"), "p", {"model": "pro"}),
        prompt_digest(spec("q"), "p2", {}),
    }
    assert base not in others and len(others) == 4


def test_a_provider_reply_nested_too_deep_is_no_json_object() -> None:
    """It escaped as a RecursionError from the runner's poll (a supervisor crash), where any
    other unreadable reply fails the job in one line."""
    from specialists.process.short import CommandResult
    from specialists.runners.external_job import _reply

    deep = ("[" * 5000 + "]" * 5000).encode()
    with pytest.raises(UserError, match="printed no JSON object"):
        _reply(CommandResult(("p",), 0, deep, b""), "reattach")
    assert _reply(CommandResult(("p",), 1, deep, b""), "reattach") == {}
