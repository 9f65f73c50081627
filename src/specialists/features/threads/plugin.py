"""What threads add to a job's life: a thread or sandboxed job's close (R-S9), before its
final status, so a parent that sees its child ended finds the child_closed in its inbox."""

from __future__ import annotations

from specialists.base.lazy import Lazy
from specialists.native.agent_table import register_tools
from specialists.store.news import NEWS
from specialists.supervise.hooks import HOOKS

TYPE_CHECKING = False
if TYPE_CHECKING:
    from specialists.supervise.hooks import JobEnd


def register() -> None:
    register_tools("specialists.features.threads.tools:THREAD_TOOLS")
    # A crashed child's supervisor will never close it: whoever recovers it does.
    NEWS.recovered.append(Lazy("specialists.features.threads.closing:settle_quietly"))

    HOOKS.before_end.append(_close)


def _close(ending: JobEnd) -> None:
    if not (ending.record.thread or ending.record.sandbox):
        return
    from specialists.features.threads.closing import settle_quietly

    settle_quietly(ending.store.root, ending.record.id, ended=(ending.final, ending.error))
