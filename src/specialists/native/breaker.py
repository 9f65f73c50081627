"""A circuit breaker per provider/model that outlives the process.

Each key has a small JSON document under `user_state_dir()/breakers/` (a Record of kind
`breakers`, store/kinds.py). Reads need no lock (documents are replaced atomically); every
read-modify-write holds the key's own lock, so two CLI runs against the same failing model
share what they learned.

    closed --N consecutive transient/throttled failures--> open
    open --cooldown elapsed, one trial call allowed--> half_open
    half_open --success--> closed;  half_open --failure--> open (cooldown restarts)

Only retryable failures count: a bad API key is not a sick provider.
"""

from __future__ import annotations

import hashlib
import logging
import re
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from specialists.base.errors import StoreError
from specialists.store.kinds import BREAKERS
from specialists.store.paths import user_state_dir

log = logging.getLogger(__name__)

SCHEMA_VERSION = 1
_UNSAFE = re.compile(r"[^A-Za-z0-9._-]+")


@dataclass(frozen=True)
class BreakerConfig:
    failure_threshold: int = 3
    cooldown_s: float = 60.0


def breakers_dir() -> Path:
    return Path(user_state_dir()) / "breakers"


def _file_stem(key: str) -> str:
    digest = hashlib.sha256(key.encode()).hexdigest()[:8]
    return f"{_UNSAFE.sub('_', key)[:80]}-{digest}"


class CircuitBreaker:
    def __init__(
        self,
        key: str,
        *,
        directory: Path | None = None,
        config: BreakerConfig | None = None,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.key = key
        self.config = config or BreakerConfig()
        self._clock = clock
        self._dir = directory or breakers_dir()
        self._record = BREAKERS.record(self._dir)
        self._stem = _file_stem(key)
        self.path = self._dir / f"{self._stem}.json"

    # --- the three operations the loop uses ---------------------------------------------

    def allow(self) -> str | None:
        """None when a call may go ahead, else the one-line reason it may not."""
        state = self._read()
        if state["state"] == "closed":
            return None
        with self._record.locked(self._stem):
            state = self._read()
            now = self._clock()
            if state["state"] == "closed":
                return None
            since = now - float(state.get("opened_at") or 0)
            if state["state"] == "open" and since < self.config.cooldown_s:
                wait = self.config.cooldown_s - since
                return (
                    f"circuit open for {self.key} after {state['failures']} failures "
                    f"(last: {state.get('last_error') or 'unknown'}); retry in {wait:.0f} s"
                )
            probe_at = state.get("probe_at")
            if (
                state["state"] == "half_open"
                and probe_at
                and now - probe_at < self.config.cooldown_s
            ):
                return f"circuit half-open for {self.key}: a trial call is already in flight"
            state.update(state="half_open", probe_at=now)
            self._write(state)
            return None

    def record_success(self) -> None:
        state = self._read()
        if state["state"] == "closed" and state["failures"] == 0:
            return  # the common case writes nothing
        with self._record.locked(self._stem):
            state = self._read()
            state.update(state="closed", failures=0, probe_at=None, opened_at=None)
            self._write(state)

    def record_failure(self, error: str) -> None:
        with self._record.locked(self._stem):
            state = self._read()
            now = self._clock()
            failures = int(state["failures"]) + 1
            state.update(failures=failures, last_error=error[:300])
            if state["state"] == "half_open" or (
                state["state"] == "closed" and failures >= self.config.failure_threshold
            ):
                state.update(state="open", opened_at=now, probe_at=None)
            self._write(state)

    def snapshot(self) -> dict[str, Any]:
        return self._read()

    def _fresh(self) -> dict[str, Any]:
        return {
            "version": SCHEMA_VERSION,
            "key": self.key,
            "state": "closed",
            "failures": 0,
            "opened_at": None,
            "probe_at": None,
            "last_error": None,
            "updated_at": None,
        }

    def _read(self) -> dict[str, Any]:
        try:
            data = self._record.read(self._stem)
        except (OSError, StoreError) as exc:
            # A damaged breaker file must not stop work: start closed and say so.
            log.warning("breaker file %s unreadable (%s); treating as closed", self.path, exc)
            return self._fresh()
        if data is None:
            return self._fresh()
        if data.get("state") not in ("closed", "open", "half_open"):
            log.warning("breaker file %s malformed; treating as closed", self.path)
            return self._fresh()
        return {**self._fresh(), **data}

    def _write(self, state: dict[str, Any]) -> None:
        state["updated_at"] = self._clock()
        state["version"] = SCHEMA_VERSION
        self._record.replace(self._stem, state)


def breaker_health(directory: Path | None = None) -> list[dict[str, Any]]:
    """Every known breaker as a dict (key, state, failures, last_error, ...), sorted by key.

    For `specialist_status`: cheap, no lock, skips documents it cannot read.
    """
    record = BREAKERS.record(directory or breakers_dir())
    out: list[dict[str, Any]] = []
    try:
        names = record.docs()
    except (OSError, StoreError) as exc:
        log.warning("cannot list breakers in %s: %s", record.path, exc)
        return out
    for name in names:
        try:
            data = record.read(name)
        except (OSError, StoreError) as exc:
            log.warning("skipping unreadable breaker %s: %s", name, exc)
            continue
        if data is not None and "key" in data:
            out.append(data)
    return sorted(out, key=lambda d: str(d["key"]))
