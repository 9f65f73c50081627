"""A mission's `state`: one JSON object that workflows (and people) on the mission share.

Plain functions a workflow runtime can call: `state_get(state_root, mission_id, key)` and
`state_set(state_root, mission_id, key, value)`. Each set merges one key under the mission's
lock (read, change, write atomically), so two processes setting different keys at once both
land. The whole file is at most MAX_STATE bytes: a set that would pass it is refused and
nothing is written. Put large content in an artifact file and store its path here. In a
goal mission, `nextReadyAction` names the next ready step for the goal's notices.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from specialists.base.errors import StoreError, UserError
from specialists.base.reader import Invalid, check_tree
from specialists.features.missions.store import MissionStore
from specialists.store.files import size_text
from specialists.store.record import encode_doc

MAX_STATE = 256 << 10
STATE = "state"  # state.json in the mission's record
STATE_FILE = "state.json"
_KEY = re.compile(r"[A-Za-z_][A-Za-z0-9_.-]{0,127}")
KEY_HINT = "1-128 of A-Z a-z 0-9 _ . -, starting with a letter or '_'"


def check_key(key: object) -> str:
    if not isinstance(key, str) or not _KEY.fullmatch(key):
        raise UserError(f"invalid state key {str(key)[:60]!r}", hint=KEY_HINT)
    return key


def read_state(store: MissionStore, mission_id: str) -> dict[str, Any]:
    return store.record(mission_id).read(STATE) or {}


def state_get(
    state_root: Path, mission_id: str, key: str | None = None, *, store: MissionStore | None = None
) -> Any:
    """The whole state (key None) or one key's value (None when unset). A missing mission is
    NotFound; an unreadable state file is StoreError."""
    store = store or MissionStore(state_root)
    store.load(mission_id)  # a missing or damaged mission is an error, not an empty state
    state = read_state(store, mission_id)
    return state if key is None else state.get(check_key(key))


def state_set(
    state_root: Path,
    mission_id: str,
    key: str,
    value: Any,
    *,
    store: MissionStore | None = None,
) -> int:
    """Set one key (merged under the lock); returns the state file's new size in bytes.
    Refused (UserError, nothing written) past MAX_STATE, for a value that is not JSON, or on
    a closed mission."""
    check_key(key)
    try:  # any front's value (a model's tool call included): depth refused as input
        check_tree(value, f"the value of {key!r}", max_nodes=None)
        json.dumps(value, allow_nan=False, ensure_ascii=False).encode("utf-8")
    except Invalid as exc:
        raise UserError(exc.problem) from None
    except UnicodeEncodeError:  # a lone surrogate ("\ud800", or bytes not UTF-8)
        raise UserError(
            f"the value of {key!r} holds text that is not valid Unicode (a lone surrogate)"
        ) from None
    except (TypeError, ValueError, RecursionError) as exc:
        raise UserError(f"the value of {key!r} is not JSON: {str(exc)[:100]}") from None
    store = store or MissionStore(state_root)
    with store.locked(mission_id) as rec:
        mission = store.load(mission_id)
        if mission.terminal:
            raise UserError(f"mission {mission_id} is {mission.status}; its state is final")
        try:
            state = read_state(store, mission_id)
        except StoreError as exc:
            raise StoreError(
                f"mission {mission_id}'s state is unreadable: {exc.message}",
                hint=f"move {store.dir(mission_id) / STATE_FILE} aside to start an empty state",
            ) from None
        state[key] = value
        data = encode_doc(state)
        if len(data) > MAX_STATE:
            raise UserError(
                f"mission {mission_id}'s state would be {size_text(len(data))}, over the "
                f"{size_text(MAX_STATE)} it may hold; nothing was written",
                hint="put large content in a file, record it as an artifact, store its path",
            )
        rec.replace(STATE, state)
    return len(data)
