"""What sandboxes add to a job's life: its file claims end with it, and a merge queue's
resolver job hands its result back to its queue when it ends."""

from __future__ import annotations

import os

from specialists.base.ops import register_noun
from specialists.native.agent_table import register_tools
from specialists.supervise.hooks import HOOKS

TYPE_CHECKING = False
if TYPE_CHECKING:
    from specialists.supervise.hooks import JobEnd


def register() -> None:
    register_noun("claims", "specialists.features.sandbox.verbs:CLAIMS")
    register_noun("sandboxes", "specialists.features.sandbox.verbs:SANDBOXES")
    register_noun("worktree", "specialists.features.sandbox.verbs:WORKTREE")
    register_tools("specialists.features.sandbox.verbs:CLAIMS")
    register_noun("merge", "specialists.features.sandbox.merge_verbs:MERGE")
    register_tools("specialists.features.sandbox.merge_verbs:MERGE")
    HOOKS.before_end.append(_release_claims)
    # The resolver is a `--sandbox` job: its work was committed by `finalize` already.
    HOOKS.before_end.append(_resolver_ended)


def _resolver_ended(ending: JobEnd) -> None:
    sandbox = ending.record.sandbox
    if not sandbox or not sandbox.startswith("q-"):
        return
    from specialists.base.errors import SpecialistsError
    from specialists.features.sandbox.merge_ops import resolver_ended

    try:
        resolver_ended(ending.store.root, ending.record.id, sandbox, ending.final)
    except (SpecialistsError, OSError) as exc:
        ending.report(f"merge queue: {exc}")


def _release_claims(ending: JobEnd) -> None:
    from specialists.store.paths import CLAIMS_DIR

    if not os.path.lexists(ending.store.root / CLAIMS_DIR):
        return  # no job ever claimed a file: the claims room is not loaded
    from specialists.store.claims import Claims

    gone = Claims(ending.store.root).release(ending.record.id)
    if gone:
        ending.event("claims_released", paths=[c.shown() for c in gone[:50]], count=len(gone))
