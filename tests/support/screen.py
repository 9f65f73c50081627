"""Headless Textual helpers: the screen as plain text, text snapshots, waiting on the app.

The text comes from the same compositor render Textual's own SVG screenshots export; a
text snapshot reads well in a diff. Set SPECIALISTS_UPDATE_SNAPSHOTS=1 to rewrite them.
"""

from __future__ import annotations

import asyncio
import io
import os
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from rich.console import Console

SNAPSHOTS = Path(__file__).resolve().parent.parent / "unit" / "snapshots"
# Read at import: the isolated environment of each test drops unknown variables.
UPDATE = os.environ.get("SPECIALISTS_UPDATE_SNAPSHOTS") == "1"


def screen_text(app: Any) -> str:
    width, height = app.size
    console = Console(
        width=width,
        height=height,
        file=io.StringIO(),
        force_terminal=True,
        color_system=None,
        record=True,
        legacy_windows=False,
        safe_box=False,
    )
    render = app.screen._compositor.render_update(full=True, screen_stack=app._background_screens)
    console.print(render)
    lines = console.export_text().splitlines()
    return "\n".join(line.rstrip() for line in lines) + "\n"


def assert_snapshot(name: str, text: str) -> None:
    path = SNAPSHOTS / f"{name}.txt"
    if UPDATE or not path.exists():
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
        if not UPDATE:
            raise AssertionError(f"snapshot {path} was missing and has been written: check it")
        return
    expected = path.read_text()
    assert text == expected, f"screen differs from {path} (SPECIALISTS_UPDATE_SNAPSHOTS=1)"


async def until(pilot: Any, predicate: Callable[[], bool], timeout: float, what: str) -> None:
    """Let the app run until `predicate()` holds; fail after `timeout` seconds."""
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout}s waiting for {what}")
        await pilot.pause(0.05)


async def settled_text(pilot: Any, app: Any, timeout: float = 20) -> str:
    """The screen once two captures 0.1 s apart agree (layout and widths done on idle)."""
    deadline = time.monotonic() + timeout
    before = screen_text(app)
    while True:
        await pilot.pause(0.1)
        now = screen_text(app)
        if now == before or time.monotonic() > deadline:
            return now
        before = now


def run(coro: Any) -> Any:
    return asyncio.run(coro)
