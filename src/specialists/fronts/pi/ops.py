"""What each sidecar request does, on the core rooms (toolset, events, timers).

`Front` holds one pi session's context: the project's state root, the owner key, the
session's cwd and the settings, which are re-read whenever `.specialists/config.toml`
changes (so the cheap escape of R-B5, switching `bash.guard` to "warn", works on the next
call without restarting pi). Each request handler takes the decoded request and returns a
JSON-ready dict, or raises `UserError` (bad request) which the sidecar turns into an error
reply. Tools are read from the registry at call time: whatever the table holds is served.
"""

from __future__ import annotations

import os
import threading
import tomllib
from collections.abc import Callable, Mapping
from dataclasses import asdict
from pathlib import Path
from typing import Any

from specialists.base.errors import ConfigError, UserError
from specialists.events.files import write_all
from specialists.events.owners import owner_dir, owner_job_id
from specialists.events.spill import SpillLimits, bound_stream
from specialists.events.timers import TimerStore
from specialists.native import agent_table as registry
from specialists.native.agent_tools import AgentTool, Caller, ToolCall, call_tool
from specialists.native.bash_guard import classify_bash
from specialists.native.guards import claim_refusal, guard_result
from specialists.native.tool_settings import Settings, settings_from_config
from specialists.store.paths import project_config_files

PROTOCOL_VERSION = 1
CONFIG_FILE = "config.toml"
MAX_PART_CHARS = 256 * 1024  # one bound_part request carries at most this much text
MAX_BOUND_TOTAL_CHARS = 256 * 1024 * 1024  # a tool result larger than this is refused
MAX_OPEN_STREAMS = 4
MAX_CALL_ID = 200
MAX_PATH_CHARS = 4096


def read_project_config(state_root: Path) -> Mapping[str, Any]:
    """The project's config files (team, then local) merged table by table, or {} when there
    are none (one small function to swap)."""
    merged: dict[str, Any] = {}
    for path in project_config_files(state_root.parent):
        try:
            with path.open("rb") as fh:
                data = tomllib.load(fh)
        except FileNotFoundError:
            continue
        except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
            raise ConfigError(f"{path}: not valid TOML ({exc})") from exc
        for key, value in data.items():
            old = merged.get(key)
            both = isinstance(value, dict) and isinstance(old, dict)
            merged[key] = {**old, **value} if both else value  # type: ignore[dict-item]
    return merged


class Front:
    """One pi session's view of the project: owner, settings, tools."""

    def __init__(
        self,
        state_root: Path,
        owner: str,
        cwd: Path,
        *,
        clock: Callable[[], float] | None = None,
        read_config: Callable[[Path], Mapping[str, Any]] = read_project_config,
    ) -> None:
        self.state_root = state_root
        self.owner = owner
        self.cwd = cwd
        self.clock = clock
        self._read_config = read_config
        self._config_stamp: tuple[tuple[int, int] | None, ...] | None = None
        self._settings = Settings()
        self.problems: tuple[str, ...] = ()
        self.settings_version = 0  # counts changes, so a pusher knows what it has not sent
        self._lock = threading.RLock()  # requests run on several threads
        self._streams: dict[str, tuple[Path, int]] = {}
        self.spill_dir = owner_dir(state_root, owner) / "spill"
        self.refresh_settings()

    # --- settings and caller ----------------------------------------------------------------

    def refresh_settings(self) -> bool:
        """Re-read config.toml if it changed; True when the settings changed."""
        with self._lock:
            return self._refresh_settings()

    def _refresh_settings(self) -> bool:
        path = self.state_root / CONFIG_FILE
        stamps: list[tuple[int, int] | None] = []
        for each in project_config_files(self.state_root.parent):  # team, then local
            try:
                st = os.stat(each)
                stamps.append((st.st_mtime_ns, st.st_size))
            except FileNotFoundError:
                stamps.append(None)
            except OSError as exc:
                self.problems = (f"{each}: {exc.strerror}; using the previous settings",)
                return False
        stamp = tuple(stamps)
        if stamp == self._config_stamp and self._config_stamp is not None:
            return False
        self._config_stamp = stamp
        before = self._settings
        try:
            self._settings = settings_from_config(
                self._read_config(self.state_root), where=str(path)
            )
            self.problems = ()
        except ConfigError as exc:
            # A typo in config.toml must not break the session: defaults, and say why.
            self._settings = Settings()
            self.problems = (f"{exc.one_line()}; using the defaults",)
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
        return {name: asdict(getattr(self._settings, name)) for name in ("bash", "overflow")}

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
        raw = field(req, "path", str, max_len=MAX_PATH_CHARS)
        path = Path(raw).expanduser()
        path = path if path.is_absolute() else self.cwd / path
        return {"refused": claim_refusal(self.state_root, path, owner_job_id(self.owner))}

    def bound_part(self, req: Mapping[str, Any]) -> dict[str, Any]:
        """One piece of a tool result too large for one line; kept on disk, not in memory."""
        stream = field(req, "stream", str, max_len=64)
        text = field(req, "text", str, max_len=MAX_PART_CHARS, allow_empty=True)
        with self._lock:
            if stream not in self._streams:
                if len(self._streams) >= MAX_OPEN_STREAMS:
                    raise UserError(f"too many open result streams ({MAX_OPEN_STREAMS})")
                self.spill_dir.mkdir(parents=True, exist_ok=True, mode=0o700)
                safe = "".join(c if c.isalnum() else "_" for c in stream)
                self._streams[stream] = (self.spill_dir / f".part-{os.getpid()}-{safe}", 0)
            path, total = self._streams[stream]
            total += len(text)
            if total > MAX_BOUND_TOTAL_CHARS:
                self._drop_stream(stream)
                raise UserError(f"tool result over {MAX_BOUND_TOTAL_CHARS} characters; refused")
            flags = os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC
            fd = os.open(path, flags, 0o600)
            try:
                write_all(fd, text.encode("utf-8", "surrogatepass"))
            finally:
                os.close(fd)
            self._streams[stream] = (path, total)
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
        path, total = entry
        try:
            if tool == "read":
                raise UserError("read results are exempt from the result guard (R-O1)")
            bounded = bound_stream(_chunks(path), self.spill_dir, f"{tool}-result", limits)
            return {"text": bounded, "spilled": total > limits.max_chars}
        finally:
            path.unlink(missing_ok=True)

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


def _chunks(path: Path, size: int = 1 << 16) -> Any:
    with open(path, encoding="utf-8", errors="surrogatepass") as fh:
        while piece := fh.read(size):
            yield piece
