"""What each sidecar request does, on the core rooms (toolset, events, timers).

`Front` holds one pi session's context: the project's state root, the owner key, the
session's cwd and the settings, which are re-read whenever one of the config files
(config.config_paths) changes (so the cheap escape of R-B5, switching `bash.guard` to "warn", works
on the next call without restarting pi). Each request handler takes the decoded request
and returns a JSON-ready dict, or raises `UserError` (bad request) which the sidecar turns
into an error reply. Tools are read from the registry at call time: whatever the table
holds is served.
"""

from __future__ import annotations

import os
import re
import threading
import time
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlsplit

from specialists.base.errors import UserError
from specialists.catalog.config import config_paths
from specialists.events.owners import owner_dir, owner_job_id
from specialists.events.spill import SpillLimits, add_part, bound_stream
from specialists.events.timers import TimerStore
from specialists.native import agent_table as registry
from specialists.native.agent_tools import AgentTool, Caller, ToolCall, call_tool
from specialists.native.bash_guard import classify_bash
from specialists.native.guards import claim_refusal, guard_result
from specialists.native.tool_settings import Settings, load_settings

PROTOCOL_VERSION = 1
MAX_PART_CHARS = 256 * 1024  # one bound_part request carries at most this much text
MAX_BOUND_TOTAL_CHARS = 256 * 1024 * 1024  # a tool result larger than this is refused
MAX_OPEN_STREAMS = 4
# A stream without a part for this long was given up by the extension (its bound_part
# waits 30 s, its bound 60 s); its slot and its file go to the next stream that needs them.
STREAM_IDLE_S = 120.0
MAX_CALL_ID = 200
MAX_PATH_CHARS = 4096


def _stamp(path: Path) -> tuple[int, int] | str | None:
    """What tells a changed file from the same one: (mtime, size); None when absent."""
    try:
        st = os.stat(path)
    except FileNotFoundError:
        return None
    except OSError as exc:
        return exc.strerror or str(exc)  # unreadable: read it (and say why) once
    return st.st_mtime_ns, st.st_size


class Front:
    """One pi session's view of the project: owner, settings, tools."""

    def __init__(
        self,
        state_root: Path,
        owner: str,
        cwd: Path,
        *,
        clock: Callable[[], float] | None = None,
    ) -> None:
        self.state_root = state_root
        self.owner = owner
        self.cwd = cwd
        self.clock = clock
        self._config_stamp: object = ()
        self._settings = Settings()
        self.problems: tuple[str, ...] = ()
        self.settings_version = 0  # counts changes, so a pusher knows what it has not sent
        self._lock = threading.RLock()  # requests run on several threads
        self._streams: dict[str, tuple[Path, int, float]] = {}  # path, chars, last part at
        self._stream_seq = 0  # names the part files: a stream's own name may be any text
        self.spill_dir = owner_dir(state_root, owner) / "spill"
        self.refresh_settings()

    # --- settings and caller ----------------------------------------------------------------

    def refresh_settings(self) -> bool:
        """Re-read config.toml if it changed; True when the settings changed."""
        with self._lock:
            return self._refresh_settings()

    def _refresh_settings(self) -> bool:
        # Every layer config.py reads: the user's, the team's and the local files.
        stamp = tuple(_stamp(p) for p in config_paths(self.state_root.parent))
        if stamp == self._config_stamp:
            return False
        self._config_stamp = stamp
        before = self._settings
        # config.py is the one reader: unknown keys are named (once, by the extension's
        # problem log) and ignored; a wrong value gives the defaults and says why, since a
        # typo must not break the session.
        self._settings, warnings, problem = load_settings(self.state_root.parent)
        self.problems = (*warnings, *([problem] if problem else []))
        if self._settings == before:
            return False
        self.settings_version += 1
        return True

    @property
    def settings(self) -> Settings:
        return self._settings

    def caller(self) -> Caller:
        extra: dict[str, Any] = {} if self.clock is None else {"clock": self.clock}
        return Caller(
            state_root=self.state_root,
            owner=self.owner,
            cwd=self.cwd,
            job_id=owner_job_id(self.owner),
            settings=self._settings,
            **extra,
        )

    def offered_tools(self) -> tuple[AgentTool, ...]:
        """The registry's tools this caller may use ("child" ones only inside a thread job,
        and only what a job's permission tier grants: toolset/tiers.py)."""
        return registry.offered_to(self.state_root, self.owner)

    # --- requests ---------------------------------------------------------------------------

    def hello(self, req: Mapping[str, Any]) -> dict[str, Any]:
        from specialists import __version__

        return {
            "protocol": PROTOCOL_VERSION,
            "version": __version__,
            "owner": self.owner,
            "state_root": str(self.state_root),
            "cwd": str(self.cwd),
            "settings": self.settings_view(),
            "problems": list(self.problems),
        }

    def settings_view(self) -> dict[str, Any]:
        return {name: getattr(self._settings, name)._asdict() for name in ("bash", "overflow")}

    def tools(self, req: Mapping[str, Any]) -> dict[str, Any]:
        return {
            "tools": [
                {
                    "name": t.name,
                    "description": t.description,
                    "schema": dict(t.schema),
                    "guidance": t.guidance,
                }
                for t in self.offered_tools()
            ],
            "guidance_core": registry.GUIDANCE_CORE,
        }

    def call(self, req: Mapping[str, Any]) -> dict[str, Any]:
        name = field(req, "tool", str, max_len=64)
        args = req.get("args", {})
        if not isinstance(args, dict):
            raise UserError("call: args must be a JSON object")
        call_id = field(req, "call_id", str, required=False, max_len=MAX_CALL_ID)
        tool = next((t for t in self.offered_tools() if t.name == name), None)
        if tool is None:
            refused = registry.tier_refusal(name, self.state_root, self.owner)
            raise UserError(refused or f"unknown tool {name!r}", hint="see the tools request")
        self.refresh_settings()
        reply = call_tool(tool, ToolCall(args, self.caller(), call_id=call_id))
        return {
            "text": reply.text,
            "data": dict(reply.data),
            "is_error": reply.is_error,
            "yields": reply.yields,
        }

    def classify(self, req: Mapping[str, Any]) -> dict[str, Any]:
        command = field(req, "command", str, max_len=1_000_000, allow_empty=True)
        self.refresh_settings()
        bash = self._settings.bash
        verdict = (
            classify_bash(command, sleep_limit_s=bash.sleep_limit_sec)
            if bash.guard != "off"
            else None
        )
        return {
            "mode": bash.guard,
            "flagged": bool(verdict and verdict.flagged),
            "pattern": verdict.pattern if verdict else None,
            "reason": verdict.reason if verdict else "",
            "default_timeout_s": bash.default_timeout_sec if bash.guard != "off" else None,
        }

    def claimed(self, req: Mapping[str, Any]) -> dict[str, Any]:
        """The claims guard for pi's write and edit: the refusal line when another live job
        claimed the file (native/guards.py), else none. `path` is pi's, from its cwd."""
        path = pi_path(field(req, "path", str, max_len=MAX_PATH_CHARS), self.cwd)
        return {"refused": claim_refusal(self.state_root, path, owner_job_id(self.owner))}

    def bound_part(self, req: Mapping[str, Any]) -> dict[str, Any]:
        """One piece of a tool result too large for one line; kept on disk, not in memory."""
        stream = field(req, "stream", str, max_len=64)
        text = field(req, "text", str, max_len=MAX_PART_CHARS, allow_empty=True)
        with self._lock:
            now = (self.clock or time.monotonic)()
            if stream not in self._streams:
                if len(self._streams) >= MAX_OPEN_STREAMS:
                    for idle in [k for k, v in self._streams.items() if now - v[2] > STREAM_IDLE_S]:
                        self._drop_stream(idle)
                if len(self._streams) >= MAX_OPEN_STREAMS:
                    raise UserError(f"too many open result streams ({MAX_OPEN_STREAMS})")
                self._stream_seq += 1
                part = self.spill_dir / f".part-{os.getpid()}-{self._stream_seq}"
                self._streams[stream] = (part, 0, now)
            path, total, _ = self._streams[stream]
            total += len(text)
            if total > MAX_BOUND_TOTAL_CHARS:
                self._drop_stream(stream)
                raise UserError(f"tool result over {MAX_BOUND_TOTAL_CHARS} characters; refused")
            try:
                add_part(path, text)
            except OSError as exc:  # a full disk: this result cannot be kept
                self._drop_stream(stream)
                raise UserError(f"cannot keep a part of the tool result: {exc}") from exc
            self._streams[stream] = (path, total, now)
        return {"chars": total}

    def bound(self, req: Mapping[str, Any]) -> dict[str, Any]:
        """R-O1..R-O3: the text (or a finished stream of parts) bounded, spilled if long."""
        tool = field(req, "tool", str, max_len=64)
        self.refresh_settings()
        o = self._settings.overflow
        limits = SpillLimits(o.max_chars, o.head_chars, o.tail_chars)
        stream = req.get("stream")
        if stream is None:
            text = field(req, "text", str, max_len=MAX_PART_CHARS, allow_empty=True)
            bounded = guard_result(tool, text, self.spill_dir, limits=limits)
            return {"text": bounded, "spilled": bounded != text}
        with self._lock:
            entry = self._streams.pop(stream, None) if isinstance(stream, str) else None
        if entry is None:
            raise UserError(f"bound: no stream {str(stream)[:64]!r}")
        path, total, _ = entry
        try:
            if tool == "read":
                raise UserError("read results are exempt from the result guard (R-O1)")
            bounded = bound_stream(_chunks(path), self.spill_dir, f"{tool}-result", limits)
            return {"text": bounded, "spilled": total > limits.max_chars}
        finally:
            path.unlink(missing_ok=True)

    def close(self) -> None:
        """The session is over: the parts of streams never bound are removed."""
        with self._lock:
            for stream in list(self._streams):
                self._drop_stream(stream)

    def _drop_stream(self, stream: str) -> None:
        entry = self._streams.pop(stream, None)
        if entry is not None:
            entry[0].unlink(missing_ok=True)

    def status(self, req: Mapping[str, Any] | None = None) -> dict[str, Any]:
        from specialists.events.inbox import Inbox

        pending = Inbox(self.state_root, self.owner).has_pending()
        return {**self.counts(), "pending_events": pending}

    def counts(self) -> dict[str, Any]:
        """R-U1's numbers. Threads read 0 until their room exists (see docs/pi.md). Counting
        jobs also records a background job whose supervisor died (its job_exit goes out)."""
        from specialists.features.procs.jobs import running_count

        timers = len(TimerStore(self.state_root, self.owner).pending())
        jobs = running_count(self.state_root, self.owner)
        return {"jobs": jobs, "timers": timers, "threads": 0}

    def command(self, req: Mapping[str, Any]) -> dict[str, Any]:
        from specialists.fronts.pi.commands import run_command

        args = field(req, "args", str, required=False, max_len=1000, allow_empty=True)
        self.refresh_settings()
        return {"text": run_command(self, args)}


def field(
    req: Mapping[str, Any],
    key: str,
    kind: type,
    *,
    required: bool = True,
    max_len: int = 10_000,
    allow_empty: bool = False,
) -> Any:
    """One request field, checked: the extension is trusted code, but never blindly."""
    value = req.get(key)
    if value is None:
        if required:
            raise UserError(f"missing field {key!r}")
        return "" if kind is str else None
    if not isinstance(value, kind) or isinstance(value, bool) != (kind is bool):
        raise UserError(f"field {key!r} must be a {kind.__name__}")
    if isinstance(value, str):
        if not allow_empty and not value:
            raise UserError(f"field {key!r} must not be empty")
        if len(value) > max_len:
            raise UserError(f"field {key!r} is too long ({len(value)} > {max_len})")
    return value


_UNICODE_SPACES = re.compile("[\u00a0\u2000-\u200a\u202f\u205f\u3000]")


def pi_path(raw: str, cwd: Path) -> Path:
    """The file pi's write and edit act on for the model's `raw` path, resolved as pi 1.6.0
    does (utils/paths.js resolveToCwd): Unicode spaces as spaces, one leading '@' dropped,
    '~' and '~/' from the home directory ('~user' is a name), a file:// URL as its path,
    else from `cwd`. The claims guard must look at that file, not at another one."""
    if "\0" in raw:
        raise UserError("field 'path' holds a NUL character")  # pi cannot write there either
    text = _UNICODE_SPACES.sub(" ", raw)
    text = text[1:] if text.startswith("@") else text
    if text == "~" or text.startswith("~/"):
        text = os.path.expanduser("~") + text[1:]
    elif text.startswith("file://"):
        text = unquote(urlsplit(text).path)
    return cwd / text  # an absolute `text` stands alone


def _chunks(path: Path, size: int = 1 << 16) -> Any:
    with open(path, encoding="utf-8", errors="surrogatepass") as fh:
        while piece := fh.read(size):
            yield piece
