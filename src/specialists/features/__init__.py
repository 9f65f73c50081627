"""The features: each adds record kinds, operations and hooks to the core, and nothing else.

`load()` registers every feature's hooks (its `plugin.py`), once per process; the composition
root calls them (`specialists.project.boot`). The order is the order of the news an owner reads:
the completion notice (registered by the root) first, then a proc's job_exit, then a goal
mission's step.
"""

from __future__ import annotations

import importlib

# Each `specialists.features.<name>.plugin` has `register()`: cheap (hooks named by Lazy, no
# import of the feature's own modules), so every process may boot.
FEATURES = (
    "procs",
    "timers",
    "threads",
    "asks",
    "missions",
    "beads",
    "gates",
    "attention",
    "workflows",
    "schedules",
    "manage",
    "spend",
    "usage_limits",
    "sandbox",  # after threads: a resolver's sandbox is committed before its queue reads it
)


def load() -> None:
    for name in FEATURES:
        importlib.import_module(f"specialists.features.{name}.plugin").register()
