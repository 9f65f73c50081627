"""config.toml: merging user and project files, validation messages."""

from __future__ import annotations

from pathlib import Path

import pytest

from specialists.base.errors import ConfigError
from specialists.catalog.config import load_config, merge_layers


@pytest.fixture
def dirs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[Path, Path]:
    user = tmp_path / "xdg"
    project = tmp_path / "proj"
    (user / "specialists").mkdir(parents=True)
    (project / ".specialists").mkdir(parents=True)
    monkeypatch.setenv("XDG_CONFIG_HOME", str(user))
    return user / "specialists" / "config.toml", project / ".specialists" / "config.toml"


def test_no_files_gives_defaults(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "none"))
    config = load_config(tmp_path)
    assert config.default_model is None and config.providers == {} and config.sources == ()


def test_project_wins_over_user(dirs: tuple[Path, Path]) -> None:
    user, project = dirs
    user.write_text(
        'default_runner = "pi"\ndefault_model = "openai/gpt-4.1"\n'
        '[providers.vllm]\nbase_url = "http://gpu:8000/v1"\ninput_price_per_mtok = 1\n'
        "output_price_per_mtok = 2\n"
    )
    project.write_text(
        'default_model = "vllm/qwen"\n[providers.vllm]\noutput_price_per_mtok = 5\n'
        '[providers.vllm.models."qwen"]\ncontext_window = 32768\n'
    )
    config = load_config(project.parent.parent)
    assert config.default_runner == "pi"
    assert config.default_model == "vllm/qwen"
    vllm = config.providers["vllm"]
    assert vllm.base_url == "http://gpu:8000/v1"
    assert (vllm.input_price_per_mtok, vllm.output_price_per_mtok) == (1.0, 5.0)
    assert vllm.models["qwen"].context_window == 32768
    assert vllm.source == project
    assert config.sources == (user, project)


@pytest.mark.parametrize(
    ("body", "needle"),
    [
        ("default_model = 3", "default_model: expected text, got a number (3)"),
        ('default_model = "a\\u0000b"', "default_model: contains a NUL character"),
        ('default_model = "two words"', "default_model: expected one word"),
        ('default_runner = "docker"', "default_runner: expected one of pi, claude"),
        ("[providers.x]\ncontext_window = 1e999", "context_window: expected a positive integer"),
        ("[providers.x]\ninput_price_per_mtok = inf", "expected a number >= 0 (US dollars"),
        ("x = " + "9" * 5000, "a number with too many digits"),
        ("x = " + "[" * 5000 + "]" * 5000, "nested too deeply"),
        ('[providers.x]\napi = "grpc"', "providers.x.api: expected one of openai-chat"),
        ('[providers.x]\nbase_url = "ftp://h"', "providers.x.base_url: expected an http"),
        (
            "[providers.x]\ncontext_window = -1",
            "providers.x.context_window: expected at least 1, got -1",
        ),
        (
            '[providers.x]\ninput_price_per_mtok = "cheap"',
            "input_price_per_mtok: expected a number",
        ),
        ("providers = 3", "providers: expected a table, got a number (3)"),
        ("default_model = [", "not valid TOML"),
    ],
)
def test_bad_values_name_file_key_and_expectation(
    dirs: tuple[Path, Path], body: str, needle: str
) -> None:
    _, project = dirs
    project.write_text(body)
    with pytest.raises(ConfigError) as exc:
        load_config(project.parent.parent)
    assert needle in exc.value.message
    assert str(project) in exc.value.message


def test_unknown_keys_warn_and_are_left_out(tmp_path: Path) -> None:
    config = merge_layers(
        [(tmp_path / "c.toml", {"hooks": {"x": 1}, "providers": {"p": {"colour": "red"}}})]
    )
    assert f"{tmp_path / 'c.toml'}: hooks: unknown key, ignored" in config.warnings
    assert any("providers.p.colour: unknown key" in w for w in config.warnings)
    assert "hooks" not in config.raw
