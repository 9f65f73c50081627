"""The cyclic garbage collector while a command loads: one rule for every command.

Loading modules and starting a job make no garbage cycles, so a collection meanwhile only
rescans what was just loaded, again and again (a fifth of a foreground run's own CPU).
`hold` turns the collector off; `collect_from_here` takes what was loaded as permanent
(`gc.freeze`: it lives as long as the process, and no collection walks it again) and turns
the collector back on for the work itself, which does make cycles.
"""

from __future__ import annotations

import gc


def hold() -> None:
    gc.disable()


def collect_from_here() -> None:
    if not gc.isenabled():
        gc.freeze()
        gc.enable()
