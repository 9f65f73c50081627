"""The tests of tests/unit/test_catalog_cli.py that start processes (git, a runner, a
supervisor): the integration tier, as the unit tier starts none (tests/conftest.py)."""

from __future__ import annotations


def test_cli_modules_do_not_import_yaml_or_catalog() -> None:
    import subprocess
    import sys

    code = (
        "import sys, specialists.cli.cmd_list, specialists.cli.cmd_show;"
        "bad = [m for m in ('yaml', 'specialists.catalog') if m in sys.modules];"
        "print(bad)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"
