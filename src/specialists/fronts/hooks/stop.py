"""Stop: wake the session with its next event, waiting a bounded time while its work is pending.

When Claude Code is about to end a turn (in `claude -p`, to exit):

1. Events are already pending for this session (a job it started ended, its timer fired):
   they are handed to the model as the Stop hook's `additionalContext` (non-error feedback
   since Claude Code 2.1.332: the person sees no "Stop hook error") and the session goes on.
   That is called a "block" below.
2. Otherwise, if the session has pending work (a job or proc job it owns still running, a
   timer it set still pending), the hook waits for the next event, firing timers as they
   fall due, and blocks the stop with it. A headless orchestrator can so dispatch, end its
   turn, and be woken.
3. Otherwise, or when the wait or a cap runs out, it prints nothing and the turn ends; what
   arrives later waits in the inbox for the session's next prompt.

Caps, counted per prompt (Claude Code's `prompt_id`; `stop_hook_active: false` means no hook
blocked this prompt yet and starts the count afresh):

- one wait: at most STOP_WAIT_S (540 s), under the 600 s timeout `install` registers;
- all waits of a prompt: SPECIALISTS_STOP_MAX_WAIT_S (default 3600 s; 0: never wait, only
  hand over what is already pending);
- blocks in a row without a tool call between them: MAX_RUN (6). Claude Code itself ends
  the turn after 8 such blocks (CLAUDE_CODE_STOP_HOOK_BLOCK_CAP); ours stays below it;
- blocks in a prompt: MAX_BLOCKS (100).

stop_hook_active is honoured in that the hook never blocks without handing over a new event:
it never asks the model to "keep waiting", so every block is progress, and the caps end even
a stream of events. The hook never fails its host: exit 0, problems to hooks.log.
"""

from __future__ import annotations

import json
import os
import time

from specialists.events.owners import OWNERS_DIR
from specialists.fronts.hooks.common import (
    HOOKS_DIR_NAME,
    log,
    reader_keys,
    write_reply,
    write_small,
)
from specialists.fronts.hooks.delivery import deliver
from specialists.store.files import object_or_none

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any, TextIO

STOP_WAIT_S = 540.0
MAX_WAIT_ENV = "SPECIALISTS_STOP_MAX_WAIT_S"
DEFAULT_MAX_WAIT_S = 3600.0
MAX_RUN = 6
MAX_BLOCKS = 100
CLAUDE_CAP_ENV = "CLAUDE_CODE_STOP_HOOK_BLOCK_CAP"
WORK_CHECK_S = 2.0  # how often the wait looks whether the work it waits for is still pending
ACTIVE = frozenset({"starting", "running"})  # a job that waits for a follow-up is not work


class StopState:
    """This session's counts for the current prompt, in .specialists/hooks/stop-<key>.json."""

    def __init__(self, path: str, prompt: str, blocks: int, run: int, waited_s: float) -> None:
        self.path, self.prompt = path, prompt
        self.blocks, self.run, self.waited_s = blocks, run, waited_s

    @classmethod
    def load(cls, state_dir: str, key: str, prompt: str, fresh: bool) -> StopState:
        path = stop_state_path(state_dir, key)
        data = {} if fresh else object_or_none(path, 4096) or {}
        if data.get("prompt") != prompt:
            data = {}
        return cls(
            path,
            prompt,
            _int(data.get("blocks")),
            _int(data.get("run")),
            _num(data.get("waited_s")),
        )

    def save(self) -> None:
        doc = {
            "prompt": self.prompt,
            "blocks": self.blocks,
            "run": self.run,
            "waited_s": self.waited_s,
        }
        write_small(self.path, json.dumps(doc).encode(), "stop")


def stop_state_path(state_dir: str, key: str) -> str:
    return os.path.join(state_dir, HOOKS_DIR_NAME, f"stop-{key}.json")


def note_tool_use(state_dir: str, keys: tuple[str, ...]) -> None:
    """A tool ran: the next wake-up starts a new run of blocks (one stat when none is counted)."""
    if not keys or not os.path.lexists(path := stop_state_path(state_dir, keys[0])):
        return
    data = object_or_none(path, 4096)
    if data is not None and _int(data.get("run")):
        data["run"] = 0
        write_small(path, json.dumps(data).encode(), "post-tool-use")


def run(data: dict[str, Any], state_dir: str, out: TextIO) -> None:
    keys = reader_keys(data)
    if not keys or not os.path.isdir(state_dir):
        return  # no .specialists/ (hooks installed with --user): nothing to hand over or count
    raw_prompt = data.get("prompt_id")
    prompt = raw_prompt if isinstance(raw_prompt, str) else ""
    state = StopState.load(
        state_dir, keys[0], prompt, fresh=data.get("stop_hook_active") is not True
    )
    if state.run >= max_run() or state.blocks >= MAX_BLOCKS:
        log("stop", f"not blocking: {state.run} blocks in a row, {state.blocks} this prompt")
        return

    def block(text: str) -> None:
        write_reply(
            out, {"hookSpecificOutput": {"hookEventName": "Stop", "additionalContext": text}}
        )
        state.blocks += 1
        state.run += 1

    try:
        if deliver(state_dir, keys, block, event="stop"):
            return
        budget = max_wait_s() - state.waited_s
        if budget <= 0 or not pending_work(state_dir, keys):
            return
        started = time.monotonic()
        try:
            woke = _wait(state_dir, keys, min(STOP_WAIT_S, budget))
        finally:
            state.waited_s = round(state.waited_s + time.monotonic() - started, 3)
        if woke:
            deliver(state_dir, keys, block, event="stop")
        else:
            log("stop", f"no event within the wait; the turn ends ({state.waited_s:g} s waited)")
    finally:
        state.save()


def pending_work(state_dir: str, keys: tuple[str, ...]) -> str:
    """What this session still waits for ("2 job(s), 1 timer(s)"), or '' for nothing."""
    from specialists.events.notices import job_owner
    from specialists.fronts.hooks.session_start import active_jobs

    owned = set(keys)
    jobs = sum(
        1
        for st in active_jobs(state_dir)
        if st.get("status") in ACTIVE
        and owned & set(job_owner(os.path.join(state_dir, "jobs", st["id"])))
    )
    timers = 0
    for key in keys:
        if os.path.lexists(os.path.join(state_dir, OWNERS_DIR, key, "timers.jsonl")):
            from pathlib import Path

            from specialists.base.errors import SpecialistsError
            from specialists.events.timers import TimerStore

            try:
                timers += len(TimerStore(Path(state_dir), key).pending())
            except (OSError, SpecialistsError) as exc:
                log("stop", f"timers of {key} unreadable: {exc}")
    parts = [f"{jobs} job(s)" if jobs else "", f"{timers} timer(s)" if timers else ""]
    return ", ".join(p for p in parts if p)


def _wait(state_dir: str, keys: tuple[str, ...], timeout_s: float) -> bool:
    """Until an event arrives (True), the work is gone, or `timeout_s` passed (False)."""
    from pathlib import Path

    from specialists.events.multi import OwnerSet
    from specialists.events.wake import wait_for_any

    next_check = time.monotonic() + WORK_CHECK_S
    idle_checks = 0

    def work_gone() -> bool:
        nonlocal next_check, idle_checks
        if time.monotonic() < next_check:
            return False
        next_check = time.monotonic() + WORK_CHECK_S
        # Twice in a row: a job writes its final status just before its notice.
        idle_checks = 0 if pending_work(state_dir, keys) else idle_checks + 1
        return idle_checks >= 2

    return wait_for_any(OwnerSet(Path(state_dir), keys), timeout_s, until=work_gone)


def max_run() -> int:
    try:
        claude_cap = int(os.environ.get(CLAUDE_CAP_ENV, ""))
    except ValueError:
        return MAX_RUN
    return min(MAX_RUN, claude_cap - 1) if claude_cap > 0 else MAX_RUN


def max_wait_s() -> float:
    """SPECIALISTS_STOP_MAX_WAIT_S. A hook never fails its host: a bad value is one line in
    hooks.log and the default is used."""
    from specialists.base.errors import ConfigError
    from specialists.base.reader.env import env_number

    try:
        return env_number(
            MAX_WAIT_ENV, DEFAULT_MAX_WAIT_S, low=0, high=86400, unit="seconds", zero_ok=True
        )
    except ConfigError as exc:
        log("stop", f"{exc.one_line()}; waiting at most {DEFAULT_MAX_WAIT_S:g} s")
        return DEFAULT_MAX_WAIT_S


def _int(value: object) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else 0


def _num(value: object) -> float:
    ok = isinstance(value, int | float) and not isinstance(value, bool) and value >= 0
    return float(value) if ok else 0.0  # type: ignore[arg-type]
