"""What reached the person at the terminal since their last command, said after this one.

A person at a terminal is an owner too (`cli-<login name>`, owner.person_key): a timer they
set (`specialists timer set 600 --note "check CI"`) or a background command they started
fires into that inbox. Nothing runs in the background to tell them, so, as a shell prints
"[1]+ Done" before its next prompt, the next `specialists` command they run fires their due
timers and prints what waits, one line each, on stderr, and takes it (delivered here, as a
hook's output is its delivery; `specialists events --all` still shows it).

Only for a person: stderr is a terminal and no session is around the command (a Claude Code
session, an agent, a job: their own fronts deliver). A failure here never fails the command:
it is one warning line. A command that owns the terminal or shows the inbox itself is skipped
(commands.QUIET_AFTER).
"""

from __future__ import annotations

import os
import sys
import time

from specialists.base.errors import SpecialistsError, reason

TYPE_CHECKING = False  # no `typing` at run time: it runs after `status`
if TYPE_CHECKING:
    from typing import TextIO

    from specialists.events.inbox import Batch
    from specialists.project import Project

MAX_LINES = 5  # a longer backlog is a count and a pointer to `specialists events --all`
LINE_CHARS = 200


def tell_person(project: Project, stream: TextIO | None = None) -> None:
    """Print and take what waits in the person's inbox (see the module docstring)."""
    out = sys.stderr if stream is None else stream
    if not _is_terminal(out) or project.owner.keys:
        return
    try:
        batch = _take_person_events(project)
    except (SpecialistsError, OSError) as exc:
        why = reason(exc)
        print(f"warning: could not read your events: {why}", file=out)
        return
    if batch is not None:
        for line in lines(batch):
            print(line, file=out)


def lines(batch: Batch) -> list[str]:
    """One bounded line per event (`[specialists] <first line of its body>`), at most
    MAX_LINES, then how many more there were."""
    from specialists.base.display import display_line

    shown = []
    for event in batch.events[:MAX_LINES]:
        first = event.body.strip().splitlines()[0] if event.body.strip() else event.kind
        shown.append(f"[specialists] {display_line(first, LINE_CHARS)}")
    more = len(batch.events) - MAX_LINES
    if more > 0:
        shown.append(f"[specialists] … and {more} more (specialists events --all)")
    shown.extend(f"warning: {display_line(p, LINE_CHARS)}" for p in batch.problems)
    return shown


def _take_person_events(project: Project) -> Batch | None:
    from specialists.events.owners import owner_dir
    from specialists.fronts.cli.cmd_events import owner_key

    owner = owner_key(None, project)
    root = project.store.root
    if not os.path.isdir(owner_dir(root, owner)):
        return None  # nothing ever reached this person: one stat, no more imports
    from specialists.events.inbox import Inbox
    from specialists.events.wake import WakeWatch

    WakeWatch(root, owner).look(int(time.time() * 1000))  # fire what is due first
    inbox = Inbox(root, owner)
    return inbox.take() if inbox.has_pending() else None


def _is_terminal(stream: TextIO) -> bool:
    try:
        return stream.isatty()
    except (AttributeError, ValueError):  # no descriptor, or closed
        return False
