"""Isolated environments for tests that run agent CLIs (pi, claude, codex) or our runtime.

Everything lives under one temp root: HOME, XDG dirs, each agent's config dir and a project
directory that is a real git repo. Real API keys, agent settings and proxy variables from the
caller's environment are dropped, so a test can neither read the user's config nor reach the
network through a proxy. `AgentEnv.point_at(base_url)` wires every agent to a mock LLM.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[2]
TOOLS_BIN = REPO_ROOT / ".tools" / "node_modules" / ".bin"
BIN_DIR_VAR = "SPECIALISTS_TEST_BIN_DIR"

MOCK_API_KEY = "sk-mock-literal"
MOCK_PROVIDER = "mock"
MOCK_MODEL = "mock-model"
# Model ids pi knows under the `mock` provider (same list as the reference models.json).
PI_MOCK_MODELS = (
    "mock-model",
    "mock-slow",
    "mock-sleep",
    "mock-text",
    "mock-500",
    "mock-think",
    "mock-long",
)
CLAUDE_MOCK_MODEL = "claude-sonnet-4-5"
INSTALL_HINTS = {
    "pi": "scripts/setup (pi 1.6.0 and the Node it needs, under .tools/)",
    "claude": "scripts/setup (Claude Code 2.1.332 under .tools/)",
    "codex": "scripts/setup (Codex 0.171.0 under .tools/)",
}

# Dropped from the inherited environment: secrets, agent settings, proxies.
_DROP_PREFIXES = (
    "ANTHROPIC_",
    "OPENAI_",
    "CLAUDE_",
    "CLAUDECODE",
    "CODEX_",
    "PI_",
    "SPECIALISTS_",
    "GEMINI_",
    "GOOGLE_",
    "AWS_",
    "AZURE_",
    "XDG_",
    "GIT_",
    "NPM_CONFIG_",
)
_KEEP = {BIN_DIR_VAR}
_PROXY_VARS = {"http_proxy", "https_proxy", "all_proxy", "ftp_proxy", "no_proxy"}


def find_agent_bin(name: str) -> Path | None:
    """The agent CLI `name`: $SPECIALISTS_TEST_BIN_DIR, then <repo>/.tools, then PATH."""
    for directory in _bin_dirs():
        candidate = directory / name
        if candidate.is_file() and os.access(candidate, os.X_OK):
            return candidate
    found = shutil.which(name)
    return Path(found) if found else None


def _bin_dirs() -> list[Path]:
    dirs = []
    override = os.environ.get(BIN_DIR_VAR)
    if override:
        dirs.append(Path(override))
    dirs.append(TOOLS_BIN)
    return dirs


def missing_reason(name: str) -> str:
    return f"{name} not installed: {INSTALL_HINTS.get(name, 'install it')}"


def write_pi_models(
    agent_dir: Path,
    base_url: str,
    *,
    models: Sequence[str] = PI_MOCK_MODELS,
    api_key: str = MOCK_API_KEY,
) -> Path:
    """Write <agent_dir>/models.json: provider `mock` = OpenAI completions at base_url.

    `base_url` is the server root (the mock's `base_url`); "/v1" is appended unless present.
    """
    url = base_url.rstrip("/")
    if not url.endswith("/v1"):
        url += "/v1"
    entries = []
    for model in models:
        entry: dict[str, object] = {
            "id": model,
            "name": model,
            "contextWindow": 128000,
            "maxTokens": 4096,
        }
        if "think" in model:
            entry["reasoning"] = True
        entries.append(entry)
    doc = {
        "providers": {
            MOCK_PROVIDER: {
                "baseUrl": url,
                "api": "openai-completions",
                "apiKey": api_key,
                "compat": {"supportsDeveloperRole": False, "supportsReasoningEffort": False},
                "models": entries,
            }
        }
    }
    agent_dir.mkdir(parents=True, exist_ok=True)
    path = agent_dir / "models.json"
    path.write_text(json.dumps(doc, indent=2) + "\n")
    return path


def write_codex_config(codex_home: Path, base_url: str, *, model: str = MOCK_MODEL) -> Path:
    """Write <codex_home>/config.toml selecting provider `mock` (Responses API at base_url)."""
    url = base_url.rstrip("/")
    if not url.endswith("/v1"):
        url += "/v1"
    text = (
        f'model = "{model}"\n'
        f'model_provider = "{MOCK_PROVIDER}"\n'
        "\n"
        f"[model_providers.{MOCK_PROVIDER}]\n"
        'name = "mock"\n'
        f'base_url = "{url}"\n'
        'wire_api = "responses"\n'
        'env_key = "MOCK_API_KEY"\n'
        "request_max_retries = 0\n"
        "stream_max_retries = 0\n"
    )
    codex_home.mkdir(parents=True, exist_ok=True)
    path = codex_home / "config.toml"
    path.write_text(text)
    return path


def init_git_repo(path: Path, env: Mapping[str, str]) -> None:
    """`git init` + one empty commit, so HEAD exists (worktrees, diffs) in tests."""
    path.mkdir(parents=True, exist_ok=True)
    for argv in (
        ["git", "init", "-q", "-b", "main"],
        ["git", "commit", "-q", "--allow-empty", "-m", "init"],
    ):
        subprocess.run(argv, cwd=path, env=dict(env), check=True, capture_output=True)


@dataclass
class AgentEnv:
    root: Path
    home: Path
    project: Path
    pi_agent_dir: Path
    claude_config_dir: Path
    codex_home: Path
    env: dict[str, str] = field(default_factory=dict)

    def point_at(self, base_url: str) -> dict[str, str]:
        """Point pi, claude and codex at a mock LLM at `base_url` (server root, no /v1).

        Writes pi's models.json and codex's config.toml, updates `self.env` and returns the
        variables that changed (to apply to os.environ as well).
        """
        root = base_url.rstrip("/")
        write_pi_models(self.pi_agent_dir, root)
        write_codex_config(self.codex_home, root)
        changed = {
            "ANTHROPIC_BASE_URL": root,
            "OPENAI_BASE_URL": f"{root}/v1",
            "SPECIALISTS_MOCK_LLM_URL": root,
        }
        self.env.update(changed)
        return changed


def build_agent_env(
    root: Path,
    *,
    base_env: Mapping[str, str] | None = None,
    base_url: str | None = None,
    extra_path: Sequence[Path] = (),
    git_init: bool = True,
) -> AgentEnv:
    """Create the directory tree under `root` and the environment dict that uses it."""
    src = dict(os.environ if base_env is None else base_env)
    layout = AgentEnv(
        root=root,
        home=root / "home",
        project=root / "project",
        pi_agent_dir=root / "pi-agent",
        claude_config_dir=root / "claude-config",
        codex_home=root / "codex-home",
    )
    # The agents' temp dir is a child of `root`, not its parent: Codex refuses to set up its
    # sandbox helper (and then fails every command under bwrap) when CODEX_HOME lies inside
    # the temp dir, which pytest's tmp_path always does.
    tmp_dir = root / "tmp"
    xdg = {
        "XDG_CONFIG_HOME": root / "xdg" / "config",
        "XDG_STATE_HOME": root / "xdg" / "state",
        "XDG_DATA_HOME": root / "xdg" / "data",
        "XDG_CACHE_HOME": root / "xdg" / "cache",
        "XDG_RUNTIME_DIR": root / "xdg" / "runtime",
    }
    for d in (
        layout.home,
        layout.project,
        layout.pi_agent_dir,
        layout.claude_config_dir,
        layout.codex_home,
        tmp_dir,
        *xdg.values(),
    ):
        d.mkdir(parents=True, exist_ok=True)
    (root / "xdg" / "runtime").chmod(0o700)
    gitconfig = layout.home / ".gitconfig"
    gitconfig.write_text(
        "[user]\n\tname = Specialists Test\n\temail = test@example.invalid\n"
        "[init]\n\tdefaultBranch = main\n[commit]\n\tgpgsign = false\n"
    )

    env = {
        k: v
        for k, v in src.items()
        if k in _KEEP or (k.lower() not in _PROXY_VARS and not k.upper().startswith(_DROP_PREFIXES))
    }
    bin_dirs = [*extra_path, *(d for d in _bin_dirs() if d.is_dir())]
    path_parts = [str(d) for d in bin_dirs] + [p for p in src.get("PATH", "").split(":") if p]
    env.update({k: str(v) for k, v in xdg.items()})
    env.update(
        {
            "HOME": str(layout.home),
            "TMPDIR": str(tmp_dir),
            "PATH": ":".join(dict.fromkeys(path_parts)),
            "NO_PROXY": "127.0.0.1,localhost",
            "no_proxy": "127.0.0.1,localhost",
            # git: only our config, fixed identity
            "GIT_CONFIG_NOSYSTEM": "1",
            "GIT_CONFIG_GLOBAL": str(gitconfig),
            "GIT_TERMINAL_PROMPT": "0",
            # pi
            "PI_CODING_AGENT_DIR": str(layout.pi_agent_dir),
            "PI_OFFLINE": "1",
            "PI_SKIP_VERSION_CHECK": "1",
            "PI_TELEMETRY": "0",
            # claude code
            "CLAUDE_CONFIG_DIR": str(layout.claude_config_dir),
            "ANTHROPIC_API_KEY": "dummy",
            "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
            "DISABLE_AUTOUPDATER": "1",
            "DISABLE_TELEMETRY": "1",
            "DISABLE_ERROR_REPORTING": "1",
            # codex / openai sdk
            "CODEX_HOME": str(layout.codex_home),
            "MOCK_API_KEY": MOCK_API_KEY,
            "OPENAI_API_KEY": MOCK_API_KEY,
            # npm must not phone home either
            "NPM_CONFIG_OFFLINE": "true",
            "NPM_CONFIG_UPDATE_NOTIFIER": "false",
            # ours
            "SPECIALISTS_PROJECT_ROOT": str(layout.project),
        }
    )
    layout.env = env
    if git_init:
        init_git_repo(layout.project, env)
    if base_url is not None:
        layout.point_at(base_url)
    else:
        # Nothing listens here: a stray default call fails fast instead of reaching a real API.
        layout.env.update(
            {"ANTHROPIC_BASE_URL": "http://127.0.0.1:9", "OPENAI_BASE_URL": "http://127.0.0.1:9/v1"}
        )
    return layout
