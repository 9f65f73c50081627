"""The tests of tests/unit/test_top.py that start processes (git, a runner, a
supervisor): the integration tier, as the unit tier starts none (tests/conftest.py)."""

from __future__ import annotations

from tests.unit.test_top import _sp


def test_top_without_a_terminal_is_one_clear_line():
    out = _sp("top")
    assert out.returncode == 2
    assert out.stderr == (
        "error: top needs a terminal: stdout is not a TTY (for a one-shot view use "
        "`specialists status`; in a browser `specialists web`)\n"
    )


def test_top_without_textual_says_how_to_install():
    code = (
        "import sys; sys.modules['textual'] = None\n"
        "from specialists.cli.main import main; sys.exit(main(['top']))"
    )
    out = _sp(code=code)
    assert out.returncode == 3  # a missing dependency (docs/cli.md), not bad input
    assert out.stderr == (
        "error: top needs the optional Textual package "
        "(install it with: pip install 'specialists[tui]')\n"
    )
