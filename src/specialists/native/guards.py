"""Guards every front applies to an agent's tool calls (seed 001 sections 5.2 and 5.4).

- The bash guard (R-B1..R-B5, native/bash_guard.py) spots commands that would block the
  turn (long sleeps, followers, watch loops, dev servers, attached `docker compose up`,
  endless loops), looking through wrappers (`bash -c`, `env`, `timeout`, `nohup`, `xargs`,
  ...) and into interpreters' code (`python -c`), and says to use `bg_run` or `sleep`.
- The oversized-result guard (R-O1..R-O3) spills any tool result over the limit, except
  `read`'s own output, and hands back head, tail and the path.
- The claims guard (issue 23 item 4) refuses a write to a file another live job claimed
  (store/claims.py), naming the holder: native write and edit, the pi extension's write and
  edit, Claude Code's Write, Edit, MultiEdit and NotebookEdit (PreToolUse) all ask it.
"""

from __future__ import annotations

from specialists.events.spill import SpillLimits, bound_body

TYPE_CHECKING = False  # no `typing` or `pathlib` at run time: the PreToolUse hook reads this
if TYPE_CHECKING:
    from pathlib import Path
    from typing import Literal

    GuardMode = Literal["block", "warn", "off"]

GUARD_MODES: tuple[str, ...] = ("block", "warn", "off")
RESULT_LIMITS = SpillLimits(max_chars=40_000, head_chars=6_000, tail_chars=2_000)


def claim_refusal(state_root: Path | None, path: str | Path, writer: str | None) -> str | None:
    """The one line refusing a write to `path` when another live job claimed it, else None.
    `writer` is the writing job's id (None: a session that is not one of our jobs)."""
    if state_root is None:
        return None
    from specialists.store.claims import Claims, claim_key

    claim = Claims(state_root).holder(path, writer=writer)
    if claim is None:
        return None
    key = claim_key(path, state_root.parent)
    why = [claim.note] if claim.note else []
    if claim.path != key:
        why.append(f"its claim of {claim.shown()}")
    because = f" ({'; '.join(why)})" if why else ""
    return (
        f"{key} is claimed by {claim.holder()}{because}; not written. Work on other files, "
        "or wait for that job to end (its claims end with it)"
    )


def guard_result(
    tool: str, text: str, spill_dir: Path, *, limits: SpillLimits = RESULT_LIMITS
) -> str:
    """R-O1..R-O3: a tool result over the limit becomes head + path + tail (`read` exempt)."""
    if tool == "read":
        return text
    return bound_body(text, spill_dir, f"{tool}-result", limits)
