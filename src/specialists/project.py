"""The project one command (or one MCP server) works in, opened once and passed in.

`specialists.fronts.cli.main` builds a `Project` before dispatching and hands it to the command;
the MCP server builds one at start and keeps it in its context. Everything an interface does
to a project goes through here: planning a job (with its owner) and starting it, in the
background or in this very process (a foreground run, the MCP server's synchronous tools),
through the one start (supervise/start.py), so every interface does those steps in the
same order and fails the same way.

The root is found lazily (`SPECIALISTS_PROJECT_ROOT`, else the nearest directory above the
working directory holding `.specialists/` or `.git`): commands that never touch a project
(`hook`, `install --user`) never look for one.
"""

from __future__ import annotations

import os

from specialists.base.lazy import Lazy
from specialists.store.news import NEWS
from specialists.store.paths import STATE_DIR_NAME, find_project_root

# `typing`, `pathlib` and the store cost milliseconds; `hook` never needs them, and `status`
# reads the store by text paths (`root_dir`), so only type checkers (and the commands that
# take `root`) import them.
TYPE_CHECKING = False
if TYPE_CHECKING:
    from pathlib import Path

    from specialists.base.owner import Owner
    from specialists.store.jobs import JobStore
    from specialists.store.records import JobRecord
    from specialists.supervise.plan import JobRequest
    from specialists.supervise.recorder import Observer
    from specialists.supervise.start import Started


def boot() -> None:
    """Register what the rooms above the store add to a job's life, once per process: the
    composition root. Cheap: every hook is named, and imported when it first runs."""
    if NEWS.booted:
        return
    from specialists import features
    from specialists.base.ops import register_noun
    from specialists.runners.registry import EXECUTORS
    from specialists.supervise.hooks import HOOKS

    NEWS.teller = Lazy("specialists.supervise.news:tell_owners_after_crash")
    NEWS.revivers.append(Lazy("specialists.supervise.start:restart"))
    EXECUTORS["ray"] = Lazy("specialists.executors.job:remote_runner")
    HOOKS.planning.append(Lazy("specialists.executors.settings:planned"))
    HOOKS.housekeeping.append(Lazy("specialists.events.notices:prune_stale"))
    for noun in ("steer", "follow-up", "stop", "interrupt", "children"):  # the job-control ops
        register_noun(noun, f"specialists.supervise.verbs:{noun.upper().replace('-', '_')}")
    register_noun("events", "specialists.supervise.look:EVENTS")
    register_noun("clean", "specialists.supervise.clean:CLEAN")
    register_noun("gc", "specialists.supervise.clean:GC")
    features.load()
    NEWS.booted = True


NEWS.boot = boot  # a `Project(lazy=True)` boots when a job's news is first told
# Clearing a read answer's notices needs no feature: `result` does it without the boot.
NEWS.clearers.append(Lazy("specialists.events.notices:clear"))


class Project:
    """A project root and its job store, found once. `lazy`: the features boot only when a
    job's news needs them (the read verbs: `status`, `result`, `feed`), not now."""

    __slots__ = ("_owner", "_root", "_root_dir", "_start", "_store")

    def __init__(
        self, root: Path | None = None, *, start: Path | None = None, lazy: bool = False
    ) -> None:
        if not lazy:
            boot()
        self._root = root
        self._root_dir = None if root is None else os.fspath(root)
        self._start = start
        self._store: JobStore | None = None
        self._owner: Owner | None = None

    @property
    def root_dir(self) -> str:
        """The root as text: all a read verb needs, without `pathlib`."""
        if self._root_dir is None:
            self._root_dir = find_project_root(self._start)
        return self._root_dir

    @property
    def root(self) -> Path:
        if self._root is None:
            from pathlib import Path

            self._root = Path(self.root_dir)
        return self._root

    @property
    def store(self) -> JobStore:
        if self._store is None:
            from specialists.store.jobs import JobStore

            self._store = JobStore(os.path.join(self.root_dir, STATE_DIR_NAME), news=NEWS)
        return self._store

    @property
    def owner(self) -> Owner:
        """Who this process launches jobs for (see owner.py): found once, on first use."""
        if self._owner is None:
            from specialists.base.owner import launching_owner

            self._owner = launching_owner()
        return self._owner

    # --- launching -------------------------------------------------------------------------

    def plan(
        self, request: JobRequest, *, foreground: bool, warnings: list[str] | None = None
    ) -> JobRecord:
        """The launch record for `request`, addressed to this process's owner. Problems that
        do not stop the run (a bead that could not be created) are added to `warnings`."""
        from specialists.supervise.plan import plan_job

        record = plan_job(self.store, request, foreground=foreground, warnings=warnings)
        return record.replace(owner=list(self.owner.keys))

    def start(
        self,
        record: JobRecord,
        *,
        here: bool = False,
        observer: Observer | None = None,
        handle_signals: bool = False,
        warnings: list[str] | None = None,
    ) -> Started:
        """Start the job with a run start's housekeeping (supervise/start.py): detached, or
        `here` (supervised by this process through `.run()`)."""
        from specialists.supervise.start import start

        return start(
            self.store,
            record,
            here=here,
            observer=observer,
            handle_signals=handle_signals,
            housekeep=True,
            warnings=warnings,
        )
