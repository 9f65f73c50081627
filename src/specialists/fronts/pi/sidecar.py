"""The sidecar's I/O: JSON lines on stdin/stdout with the pi extension (protocol 1).

Requests (extension -> sidecar), one JSON object per line:

    {"id": 7, "op": "hello" | "tools" | "call" | "classify" | "claimed" | "bound" | "bound_part"
                    | "ack" | "status" | "command", ...fields}

Replies: `{"id": 7, "ok": true, "result": {...}}` or `{"id": 7, "ok": false, "error": "..."}`.
Pushes (sidecar -> extension, no id):

    {"push": "events", "batch": "b-3", "events": [{"id", "kind", "tool", "call_id", "text"}]}
    {"push": "status", "jobs": 0, "timers": 1, "threads": 0}
    {"push": "settings", "settings": {...}, "problems": [...]}

Delivery is at-least-once (R-E6): one batch is in flight at a time; the inbox cursor moves
only when the extension sends `{"op": "ack", "batch": "b-3"}`, which it does once pi has
accepted the message. An unacknowledged batch is pushed again after REPUSH_S, and whatever
was never acknowledged is pushed again by the next sidecar (a restart, a resumed session).

Never blocking the extension: request lines over MAX_REQUEST_BYTES are skipped to their
newline and answered with an error; a malformed request gets an error reply and a log line;
tool calls, bounds and commands run on their own threads (at most MAX_BUSY at once), so a
slow tool never delays a bash classification or an ack; a closed stdin ends the sidecar, and
so does its parent's death.
"""

from __future__ import annotations

import json
import logging
import os
import signal
import threading
import time
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any, BinaryIO

from specialists.base.errors import SpecialistsError
from specialists.events.inbox import Batch, Inbox
from specialists.events.render import render_event
from specialists.events.wake import fire_due, wait_for_wake
from specialists.fronts.pi.ops import Front

log = logging.getLogger("specialists.pi_sidecar")

MAX_REQUEST_BYTES = 1024 * 1024
MAX_ID_CHARS = 64
MAX_BUSY = 8  # requests running on threads at once; more are refused, never queued unbounded
REPUSH_S = 30.0  # an unacknowledged batch is pushed again after this long
STATUS_EVERY_S = 1.0  # counts and config are re-checked this often (and after every call)
WAIT_SLICE_S = 0.025

FAST_OPS = frozenset({"hello", "tools", "classify", "claimed", "ack", "status", "bound_part"})
SLOW_OPS = frozenset({"call", "bound", "command"})


@dataclass(frozen=True)
class TooLong:
    """A request line over the limit: skipped to its newline, never held whole."""

    size: int


def read_lines(stream: BinaryIO, max_bytes: int = MAX_REQUEST_BYTES) -> Iterator[bytes | TooLong]:
    while True:
        line = stream.readline(max_bytes + 1)
        if not line:
            return
        if len(line) > max_bytes and not line.endswith(b"\n"):
            size = len(line)
            while True:
                more = stream.readline(1 << 16)
                size += len(more)
                if not more or more.endswith(b"\n"):
                    break
            yield TooLong(size)
            continue
        if line.strip():
            yield line


@dataclass
class _InFlight:
    batch_id: str
    batch: Batch
    pushed_at: float


class Sidecar:
    def __init__(
        self,
        front: Front,
        stdin: BinaryIO,
        stdout: BinaryIO,
        *,
        parent_alive: Callable[[], bool] | None = None,
        repush_s: float = REPUSH_S,
    ) -> None:
        self.front = front
        self.stdin = stdin
        self.stdout = stdout
        self.inbox = Inbox(front.state_root, front.owner)
        self.repush_s = repush_s
        self._parent_alive = parent_alive or parent_watch()
        self._write_lock = threading.Lock()
        self._state = threading.Condition()
        self._stop = threading.Event()
        self._busy = threading.BoundedSemaphore(MAX_BUSY)
        self._in_flight: _InFlight | None = None
        self._batch_seq = 0
        self._status_dirty = True
        self._last_status: dict[str, Any] | None = None
        self._settings_sent = front.settings_version
        self._pusher: threading.Thread | None = None

    # --- the main loop ----------------------------------------------------------------------

    def run(self) -> int:
        try:
            for raw in read_lines(self.stdin):
                if self._stop.is_set():
                    break
                if isinstance(raw, TooLong):
                    log.warning("request line of %d bytes over the limit; skipped", raw.size)
                    self._reply(None, error=f"request line over {MAX_REQUEST_BYTES} bytes; dropped")
                    continue
                try:
                    self._dispatch(raw)
                except Exception:  # a defect in dispatching must not end the session
                    log.exception("dispatching %r", raw[:200])
                    self._reply(None, error="bug: the sidecar could not dispatch a request")
        finally:
            self.stop()
            self.front.close()
        return 0

    def stop(self) -> None:
        self._stop.set()
        with self._state:
            self._state.notify_all()
        if self._pusher is not None and self._pusher is not threading.current_thread():
            self._pusher.join(timeout=2)

    def _dispatch(self, raw: bytes) -> None:
        try:
            req = json.loads(raw)
        except (ValueError, RecursionError) as exc:
            log.warning("malformed request (not JSON: %s): %r", exc, raw[:200])
            self._reply(None, error="malformed request: not JSON")
            return
        if not isinstance(req, dict):
            log.warning("malformed request (not an object): %r", raw[:200])
            self._reply(None, error="malformed request: not a JSON object")
            return
        rid = req.get("id")
        if isinstance(rid, bool) or not isinstance(rid, int | str) or len(str(rid)) > MAX_ID_CHARS:
            log.warning("request without a usable id: %r", raw[:200])
            self._reply(None, error="malformed request: id must be an integer or a short string")
            return
        op = req.get("op")
        if not isinstance(op, str) or (op not in FAST_OPS and op not in SLOW_OPS):
            log.warning("unknown op %r", str(op)[:40])
            self._reply(rid, error=f"unknown op {str(op)[:40]!r}")
            return
        if op in FAST_OPS:
            self._handle(rid, op, req)
            return
        if not self._busy.acquire(blocking=False):
            self._reply(rid, error=f"busy: {MAX_BUSY} requests already running; retry")
            return
        threading.Thread(target=self._handle_slow, args=(rid, op, req), daemon=True).start()

    def _handle_slow(self, rid: int | str, op: str, req: Mapping[str, Any]) -> None:
        try:
            self._handle(rid, op, req)
        finally:
            self._busy.release()
            if op == "call":
                self._mark_status_dirty()

    def _handle(self, rid: int | str, op: str, req: Mapping[str, Any]) -> None:
        try:
            result = self._run_op(op, req)
        except SpecialistsError as exc:
            log.warning("op %s refused: %s", op, exc.one_line())
            self._reply(rid, error=exc.one_line())
            return
        except Exception as exc:  # a defect must answer the request, not kill the session
            log.exception("op %s failed", op)
            self._reply(rid, error=f"bug: {op} failed: {exc.__class__.__name__}: {exc}")
            return
        self._reply(rid, result=result)

    def _run_op(self, op: str, req: Mapping[str, Any]) -> dict[str, Any]:
        if op == "ack":
            return self._ack(req)
        if op == "hello":
            result = self.front.hello(req)
            self._start_pusher()
            return result
        handler: Callable[[Mapping[str, Any]], dict[str, Any]] = getattr(self.front, op)
        return handler(req)

    # --- output -----------------------------------------------------------------------------

    def _reply(
        self, rid: int | str | None, *, result: Any = None, error: str | None = None
    ) -> None:
        if error is not None:
            self._send({"id": rid, "ok": False, "error": error})
        else:
            self._send({"id": rid, "ok": True, "result": result})

    def _send(self, message: Mapping[str, Any]) -> bool:
        # ASCII-only JSON: no raw U+2028 or lone surrogate can upset the extension's framing.
        data = (json.dumps(message, ensure_ascii=True, default=str) + "\n").encode()
        with self._write_lock:
            try:
                self.stdout.write(data)
                self.stdout.flush()
            except (OSError, ValueError) as exc:
                log.warning("the extension closed our stdout (%s); stopping", exc)
                self._stop.set()
                return False
        return True

    # --- events -----------------------------------------------------------------------------

    def _ack(self, req: Mapping[str, Any]) -> dict[str, Any]:
        batch_id = req.get("batch")
        with self._state:
            current = self._in_flight
            if current is None or current.batch_id != batch_id:
                # A late or repeated ack (the batch was acknowledged already): harmless.
                return {"acked": 0, "stale": True}
            self.inbox.ack(current.batch)
            self._in_flight = None
            self._status_dirty = True
            self._state.notify_all()
        return {"acked": len(current.batch.events)}

    def _mark_status_dirty(self) -> None:
        with self._state:
            self._status_dirty = True
            self._state.notify_all()

    def _start_pusher(self) -> None:
        if self._pusher is None:
            self._pusher = threading.Thread(target=self._push_loop, name="push", daemon=True)
            self._pusher.start()

    def _push_loop(self) -> None:
        last_check = 0.0
        while not self._stop.is_set():
            try:
                if not self._parent_alive():
                    log.warning("pi is gone; the sidecar ends")
                    self._stop.set()
                    os.kill(os.getpid(), signal.SIGTERM)  # stdin may still be held open
                    return
                now = time.monotonic()
                if now - last_check >= STATUS_EVERY_S or self._status_dirty:
                    last_check = now
                    self._push_status()
                if self._wait_for_events() and not self._push_pending():
                    # Bytes past the cursor but no whole line yet (a producer mid-append, or
                    # a crash that cut a line short until the next append closes it).
                    self._stop.wait(WAIT_SLICE_S * 4)
            except (OSError, SpecialistsError) as exc:
                # A damaged owner dir or a full disk: say so, keep trying (slowly).
                log.warning("event delivery for %s: %s", self.front.owner, exc)
                self._stop.wait(1.0)

    def _wait_for_events(self) -> bool:
        with self._state:
            current = self._in_flight
        if current is not None:
            # One batch at a time; timers still fire into the inbox meanwhile.
            fire_due(self.front.state_root, self.front.owner)
            if time.monotonic() - current.pushed_at >= self.repush_s:
                self._push(current)
            with self._state:
                if self._in_flight is current and not self._status_dirty:
                    self._state.wait(WAIT_SLICE_S * 4)
            return False
        return wait_for_wake(
            self.front.state_root,
            self.front.owner,
            STATUS_EVERY_S,
            until=lambda: self._stop.is_set() or self._status_dirty,
        )

    def _push_pending(self) -> bool:
        """Push what is pending; False when nothing could be read (no progress)."""
        batch = self.inbox.pending()
        for problem in batch.problems:
            log.warning("inbox %s: %s", self.front.owner, problem)
        if not batch.events:
            if batch.problems or batch.duplicates:
                self.inbox.ack(batch)  # only damage or duplicates: step over them
                return True
            return False
        with self._state:
            self._batch_seq += 1
            current = _InFlight(f"b-{os.getpid()}-{self._batch_seq}", batch, 0.0)
            self._in_flight = current
        self._push(current)
        return True

    def _push(self, current: _InFlight) -> None:
        current.pushed_at = time.monotonic()
        events = [
            {
                "id": e.id,
                "kind": e.kind,
                "tool": e.source.tool,
                "call_id": e.source.call_id,
                "text": render_event(e),
            }
            for e in current.batch.events
        ]
        self._send({"push": "events", "batch": current.batch_id, "events": events})

    def _push_status(self) -> None:
        with self._state:
            self._status_dirty = False
        self.front.refresh_settings()
        if self.front.settings_version != self._settings_sent:
            self._settings_sent = self.front.settings_version
            self._send(
                {
                    "push": "settings",
                    "settings": self.front.settings_view(),
                    "problems": list(self.front.problems),
                }
            )
        counts = self.front.counts()
        if counts != self._last_status:
            self._last_status = counts
            self._send({"push": "status", **counts})


def parent_watch(parent_pid: int | None = None) -> Callable[[], bool]:
    """Is our parent (pi) alive? An orphan is re-parented, so its ppid changes."""
    parent = os.getppid() if parent_pid is None else parent_pid
    return lambda: os.getppid() == parent
