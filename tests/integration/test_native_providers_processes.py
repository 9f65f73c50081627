"""The tests of tests/unit/test_native_providers.py that start processes (git, a runner, a
supervisor): the integration tier, as the unit tier starts none (tests/conftest.py)."""

from __future__ import annotations

import sys
from pathlib import Path

from specialists.config import Config
from specialists.native.providers.registry import resolve_model


def test_resolving_does_not_import_sdks() -> None:
    resolve_model("openai/g", Config(), {"OPENAI_API_KEY": "k"})
    resolve_model("anthropic/g", Config(), {"ANTHROPIC_API_KEY": "k"})
    code = (
        "import sys\n"
        "from specialists.config import Config\n"
        "from specialists.runners.native import NativeRunner\n"
        "from specialists.native.providers.registry import resolve_model, make_client\n"
        "make_client(resolve_model('openai/g', Config(), {'OPENAI_API_KEY': 'k'}))\n"
        "print(sorted(m for m in ('openai', 'anthropic', 'yaml') if m in sys.modules))\n"
    )
    import subprocess

    src = Path(__file__).resolve().parents[2] / "src"
    out = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        check=True,
        env={"PYTHONPATH": str(src)},
    )
    assert out.stdout.strip() == "[]"
