"""What a proc job runs and whom it tells: the options bg_run writes into job.json.

`ProcOptions` is everything the proc runner and the job_exit writer need, decided when the
command is dispatched: the command and where it runs, its watch patterns, the owner whose
inbox hears of it, the tool call it answers, the settings in force at that moment (so a
config change later does not change a running job), and what it is tethered to. It goes to
job.json's `runner_options` as plain data and comes back checked: a damaged job.json is a
clear error, never a command run with half its options.
"""

from __future__ import annotations

from typing import Any

from specialists.base.errors import StoreError
from specialists.events.model import EventSource
from specialists.events.owners import is_owner
from specialists.store.fields import EMPTY, Declared

OUTPUT_LOG = "output.log"  # the job's merged stdout and stderr
SPEC_VERSION = 1
# Bounds on what a caller may ask (the tools' schemas show them too).
MAX_COMMAND_CHARS = 100_000
MAX_NAME_CHARS = 100
MAX_TIMEOUT_S = 30 * 86400
MAX_TAIL_LINES = 10_000
MAX_SINCE = 2**53 - 1  # larger offsets are not exact in JSON
OUTPUT_BYTES = 32 * 1024  # one bg_output read: under the 40,000-character result guard


class Tether(Declared):
    """What a job lives no longer than (cancel on exit): a process, or one of our jobs."""

    _what = "job.json: runner_options.tether"
    _choices = {"kind": frozenset({"process", "job"})}
    kind: str  # process or job
    pid: int = 0  # process: pid and kernel start time (a reused pid is not the same process)
    start: int = 0
    job_id: str = ""  # job: while it is active

    def describe(self) -> str:
        return f"job {self.job_id}" if self.kind == "job" else f"process {self.pid}"

    def to_dict(self) -> dict[str, Any]:
        if self.kind == "job":
            return {"kind": "job", "job_id": self.job_id}
        return {"kind": "process", "pid": self.pid, "start": self.start}

    @classmethod
    def _before_read(cls, data: dict[str, Any], where: str) -> None:
        # Each kind writes only its own fields, and needs them.
        kind = data.get("kind")
        needs = ("job_id",) if kind == "job" else ("pid", "start") if kind == "process" else ()
        for name in needs:
            if name not in data:
                raise StoreError(f"{where}: field {name!r} is missing")


class WatchSettings(Declared):
    """jobs.* and events.maxChars as they were when the command was dispatched."""

    _what = "job.json: runner_options.settings"
    tail_lines: int = 40
    debounce_ms: int = 1000
    batch_lines: int = 20
    per_min: int = 6
    event_max_chars: int = 4000


class ProcOptions(Declared):
    _what = "job.json: runner_options"
    command: str
    cwd: str  # absolute, resolved
    owner: str  # the inbox that hears of this job
    nonce: str  # fresh per job: its event ids never meet an earlier job's (R-E7)
    name: str = ""
    watch: list[str] = EMPTY
    associative: bool = False
    timeout_ms: int | None = None
    isolate: bool = False
    tether: Tether | None = None
    # An EventSource (events/model.py, a NamedTuple shared by every event): an object here.
    source: Any
    settings: WatchSettings = WatchSettings()

    def source_id(self, job_id: str) -> str:
        """`bg-<job>.<nonce>`: the source of every event of this job (R-E1, R-E7)."""
        return f"bg-{job_id}.{self.nonce}"

    @property
    def label(self) -> str:
        """The name, else the command's first line, for lists and messages."""
        first = self.command.strip().splitlines()[0] if self.command.strip() else ""
        return self.name or (first if len(first) <= 60 else first[:59] + "…")

    def to_dict(self) -> dict[str, Any]:
        out = super().to_dict()
        out["source"] = self.source.to_dict()
        return {"v": SPEC_VERSION, **out}

    @classmethod
    def _before_read(cls, data: dict[str, Any], where: str) -> None:
        if data.get("v") != SPEC_VERSION:
            raise StoreError(
                f"job.json: proc options version {data.get('v')!r} is not {SPEC_VERSION}"
            )

    @classmethod
    def _after_read(cls, record: ProcOptions, where: str) -> None:
        if not is_owner(record.owner):
            raise StoreError(f"{where}: owner {record.owner[:60]!r} is not an owner key")
        raw = record.source
        if type(raw) is not dict or type(raw.get("tool")) is not str:
            raise StoreError(f"{where}: field 'source' should be an object with a tool")
        args = raw.get("args")
        call_id = str(raw.get("call_id", ""))
        record.source = EventSource(raw["tool"], call_id, dict(args) if type(args) is dict else {})
