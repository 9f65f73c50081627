"""The views stay out of the fast paths: status, result, feed, steer, stop and the hooks
import nothing of tui/, web/ or fleet/, nor Textual or the web stack."""

from __future__ import annotations

import pytest

from tests.integration.test_import_budget import FAST_COMMANDS, imported_modules

VIEW_MODULES = ("specialists.tui", "specialists.web", "specialists.fleet")
VIEW_LIBRARIES = ("textual", "starlette", "uvicorn", "sse_starlette")


@pytest.mark.parametrize("args", FAST_COMMANDS, ids=lambda a: " ".join(a))
def test_fast_paths_import_no_view(args, tmp_path):
    names = imported_modules(args, tmp_path)
    leaked = sorted(
        n for n in names if n.startswith(VIEW_MODULES) or n.split(".")[0] in VIEW_LIBRARIES
    )
    assert leaked == [], f"`specialists {' '.join(args)}` imports view modules: {leaked}"


def test_help_of_top_and_web_stays_light(tmp_path):
    """`--help` of the view commands parses without importing Textual or the web stack."""
    for command in ("top", "web"):
        names = imported_modules([command, "--help"], tmp_path)
        assert not [n for n in names if n.split(".")[0] in VIEW_LIBRARIES], command
