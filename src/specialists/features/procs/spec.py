"""What a proc job runs and whom it tells: the options bg_run writes into job.json.

`ProcOptions` is everything the proc runner and the job_exit writer need, decided when the
command is dispatched: the command and where it runs, its watch patterns, the owner whose
inbox hears of it, the tool call it answers, the settings in force at that moment (so a
config change later does not change a running job), and what it is tethered to. It goes to
job.json's `runner_options` as plain data and comes back checked: a damaged job.json is a
clear error, never a command run with half its options.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import asdict, dataclass, field
from typing import Any, Literal

from specialists.base.errors import StoreError
from specialists.events.model import EventSource
from specialists.events.owners import is_owner

OUTPUT_LOG = "output.log"  # the job's merged stdout and stderr
SPEC_VERSION = 1
# Bounds on what a caller may ask (the tools' schemas show them too).
MAX_COMMAND_CHARS = 100_000
MAX_NAME_CHARS = 100
MAX_TIMEOUT_S = 30 * 86400
MAX_TAIL_LINES = 10_000
MAX_SINCE = 2**53 - 1  # larger offsets are not exact in JSON
OUTPUT_BYTES = 32 * 1024  # one bg_output read: under the 40,000-character result guard


@dataclass(frozen=True)
class Tether:
    """What a job lives no longer than (cancel on exit): a process, or one of our jobs."""

    kind: Literal["process", "job"]
    pid: int = 0  # process: pid and kernel start time (a reused pid is not the same process)
    start: int = 0
    job_id: str = ""  # job: while it is active

    def describe(self) -> str:
        return f"job {self.job_id}" if self.kind == "job" else f"process {self.pid}"

    def to_dict(self) -> dict[str, Any]:
        if self.kind == "job":
            return {"kind": "job", "job_id": self.job_id}
        return {"kind": "process", "pid": self.pid, "start": self.start}


@dataclass(frozen=True)
class WatchSettings:
    """jobs.* and events.maxChars as they were when the command was dispatched."""

    tail_lines: int = 40
    debounce_ms: int = 1000
    batch_lines: int = 20
    per_min: int = 6
    event_max_chars: int = 4000


@dataclass(frozen=True)
class ProcOptions:
    command: str
    cwd: str  # absolute, resolved
    owner: str  # the inbox that hears of this job
    nonce: str  # fresh per job: its event ids never meet an earlier job's (R-E7)
    name: str = ""
    watch: tuple[str, ...] = ()
    associative: bool = False
    timeout_ms: int | None = None
    isolate: bool = False
    tether: Tether | None = None
    source: EventSource = field(default_factory=lambda: EventSource("bg_run"))
    settings: WatchSettings = field(default_factory=WatchSettings)

    def source_id(self, job_id: str) -> str:
        """`bg-<job>.<nonce>`: the source of every event of this job (R-E1, R-E7)."""
        return f"bg-{job_id}.{self.nonce}"

    @property
    def label(self) -> str:
        """The name, else the command's first line, for lists and messages."""
        first = self.command.strip().splitlines()[0] if self.command.strip() else ""
        return self.name or (first if len(first) <= 60 else first[:59] + "…")

    def to_dict(self) -> dict[str, Any]:
        return {
            "v": SPEC_VERSION,
            "command": self.command,
            "cwd": self.cwd,
            "owner": self.owner,
            "nonce": self.nonce,
            "name": self.name,
            "watch": list(self.watch),
            "associative": self.associative,
            "timeout_ms": self.timeout_ms,
            "isolate": self.isolate,
            "tether": self.tether.to_dict() if self.tether else None,
            "source": self.source.to_dict(),
            "settings": asdict(self.settings),
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> ProcOptions:
        """Back from job.json; StoreError naming the first field that is not as written."""
        r = _Reader(data)
        if r.get("v", int) != SPEC_VERSION:
            raise StoreError(
                f"job.json: proc options version {data.get('v')!r} is not {SPEC_VERSION}"
            )
        owner = r.get("owner", str)
        if not is_owner(owner):
            raise StoreError(f"job.json: runner_options.owner {owner[:60]!r} is not an owner key")
        raw_settings = r.get("settings", dict)
        s = _Reader(raw_settings, "settings.")
        source = r.get("source", dict)
        src = _Reader(source, "source.")
        return cls(
            command=r.get("command", str),
            cwd=r.get("cwd", str),
            owner=owner,
            nonce=r.get("nonce", str),
            name=r.get("name", str),
            watch=tuple(r.strings("watch")),
            associative=r.get("associative", bool),
            timeout_ms=r.get("timeout_ms", int, optional=True),
            isolate=r.get("isolate", bool),
            tether=_tether(r.get("tether", dict, optional=True)),
            source=EventSource(
                src.get("tool", str),
                str(source.get("call_id", "")),
                dict(source["args"]) if isinstance(source.get("args"), dict) else {},
            ),
            settings=WatchSettings(
                tail_lines=s.get("tail_lines", int),
                debounce_ms=s.get("debounce_ms", int),
                batch_lines=s.get("batch_lines", int),
                per_min=s.get("per_min", int),
                event_max_chars=s.get("event_max_chars", int),
            ),
        )


def _tether(raw: Mapping[str, Any] | None) -> Tether | None:
    if raw is None:
        return None
    r = _Reader(raw, "tether.")
    kind = r.get("kind", str)
    if kind == "job":
        return Tether("job", job_id=r.get("job_id", str))
    if kind == "process":
        return Tether("process", pid=r.get("pid", int), start=r.get("start", int))
    raise StoreError(f"job.json: runner_options.tether.kind {kind[:20]!r} is not process or job")


class _Reader:
    def __init__(self, data: Mapping[str, Any], prefix: str = "") -> None:
        if not isinstance(data, Mapping):
            raise StoreError(f"job.json: runner_options.{prefix.rstrip('.')} is not an object")
        self.data, self.prefix = data, prefix

    def get(self, key: str, kind: type, *, optional: bool = False) -> Any:
        value = self.data.get(key)
        if value is None and optional:
            return None
        if not isinstance(value, kind) or (kind is int and isinstance(value, bool)):
            raise StoreError(
                f"job.json: runner_options.{self.prefix}{key} must be a {kind.__name__}"
            )
        return value

    def strings(self, key: str) -> list[str]:
        value = self.get(key, list)
        if not all(isinstance(v, str) for v in value):
            raise StoreError(f"job.json: runner_options.{self.prefix}{key} must hold strings")
        return value
