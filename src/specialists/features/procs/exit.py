"""Exactly one `job_exit` per proc job (R-J4): its rendering of the job's one end.

The proc runner writes what it knows of the command's end to the job's `proc.json` (how it
ended, exit code, duration, lines, matches held back) before it reports the exit; it also
keeps a running copy there while watch counters change, for recovery. The job's end, told
by its supervisor after the command's processes are dead and before the final status, or by
crash recovery if the supervisor died (supervise/news.py `tell`), is rendered here
(`render`, registered as HOOKS.ended). Both give the event the same id,
`bg-<job>.<nonce>:job_exit:1`, so when both tell (a supervisor killed between the two), the
inbox delivers it once.

The body (what the model reads) is one header line, counts and the log path, then the last
`jobs.tailLines` lines; the inbox bounds it like any body (R-E2: head, tail, spill path).
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from specialists.base.display import duration
from specialists.base.errors import StoreError, UserError
from specialists.events.spill import SpillLimits
from specialists.events.told import Told
from specialists.features.procs.output import read_tail
from specialists.features.procs.spec import OUTPUT_LOG, ProcOptions
from specialists.store.fields import Declared
from specialists.store.files import open_regular
from specialists.store.jobs import now_ms
from specialists.store.kinds import JOB

TYPE_CHECKING = False
if TYPE_CHECKING:
    from specialists.supervise.hooks import JobEnd

SUMMARY = "proc"  # proc.json, a document of the job's record (store/kinds.py JOB)
SUMMARY_FILE = "proc.json"
COUNT_CHUNK = 1 << 20

EXIT_KINDS: tuple[str, ...] = ("exited", "signaled", "cancelled", "timeout", "error")


class ExitSummary(Declared):
    """The runner's account of the command; `kind` is None while it still runs."""

    _what = "proc.json"
    kind: str | None = None  # one of EXIT_KINDS
    exit_code: int | None = None
    signal: str | None = None  # "SIGKILL" when a signal ended it
    duration_ms: int | None = None  # start to the shell's exit (not the drain after it)
    lines: int = 0
    bytes: int = 0
    logged: int = 0
    matched: int = 0
    suppressed: int = 0
    watch_stopped: str | None = None
    log_problem: str | None = None
    reason: str = ""  # why it was cancelled, or what failed

    @classmethod
    def _after_read(cls, record: ExitSummary, where: str) -> None:
        if record.kind is not None and record.kind not in EXIT_KINDS:
            raise StoreError(f"{where}: kind {record.kind[:20]!r} is not one of {EXIT_KINDS}")


def write_summary(job_dir: Path, summary: ExitSummary) -> None:
    JOB.record(job_dir).replace(SUMMARY, summary.to_dict())


def read_summary(job_dir: Path) -> ExitSummary | None:
    """The runner's summary; None when absent, planted (a link, a FIFO) or damaged."""
    try:
        data = JOB.record(job_dir).read(SUMMARY)
        return None if data is None else ExitSummary.from_dict(data)
    except (OSError, StoreError):
        return None


def event_limits(max_chars: int) -> SpillLimits:
    """events.maxChars as spill limits: 60 % head, 25 % tail (the inbox's own proportions)."""
    chars = max(200, max_chars)
    return SpillLimits(max_chars=chars, head_chars=chars * 3 // 5, tail_chars=chars // 4)


# --- the job's end, rendered ----------------------------------------------------------------


def render(ending: JobEnd) -> list[Told]:
    """A proc job's end as its one job_exit (HOOKS.ended), from its supervisor's end or from
    crash recovery alike."""
    record, store = ending.record, ending.store
    options = ProcOptions.from_dict(record.runner_options)
    job_dir = store.job_dir(record.id)
    summary = read_summary(job_dir)
    final, error = ending.final, ending.error
    if ending.recovered and (summary is None or summary.kind is None):
        summary = _counted(job_dir / OUTPUT_LOG, summary or ExitSummary())  # its counts died
        if final == "error":
            kind, reason = "error", f"{error or 'its supervisor died'}; the command was killed"
        else:
            kind, reason = _kind(None, final, error)
    else:  # the runner saw the end (after a crash, only its supervisor's last words were lost)
        kind, reason = _kind(summary, final, error)
    log_path = job_dir / OUTPUT_LOG
    s = summary or ExitSummary()
    duration_ms = s.duration_ms
    if duration_ms is None and ending.status.started_at_ms:
        duration_ms = max(0, now_ms() - ending.status.started_at_ms)
    details: dict[str, Any] = {
        "job_id": record.id,
        "name": options.name,
        "status": kind,
        "exit_code": s.exit_code,
        "signal": s.signal,
        "duration_ms": duration_ms,
        "lines": s.lines,
        "bytes": s.bytes,
        "log": str(log_path),
        "matched": s.matched,
        "suppressed": s.suppressed,
    }
    body = exit_body(record.id, options, kind, reason, s, duration_ms, log_path)
    limits = event_limits(options.settings.event_max_chars)
    source_id = options.source_id(record.id)
    return [Told(options.owner, "job_exit", options.source, body, source_id, 1, details, limits)]


def _kind(summary: ExitSummary | None, final: str, error: str | None) -> tuple[str, str]:
    if summary is not None and summary.kind is not None:
        if summary.kind == "cancelled" and final == "error":
            return "error", error or summary.reason  # the supervisor ended it for a fault
        return summary.kind, summary.reason
    if final == "cancelled":
        return "cancelled", "before the command started"
    return "error", error or "the command did not run"


# --- the text the model reads --------------------------------------------------------------


def exit_body(
    job_id: str,
    options: ProcOptions,
    kind: str,
    reason: str,
    s: ExitSummary,
    duration_ms: int | None,
    log_path: Path,
) -> str:
    took = f" after {seconds_text(duration_ms)}" if duration_ms is not None else ""
    if kind == "exited":
        what = f"exited with code {s.exit_code}{took}"
    elif kind == "signaled":
        what = f"was killed by {s.signal or 'a signal'}{took}"
    elif kind == "cancelled":
        what = f"was cancelled{took}" + (f" ({reason})" if reason else "")
    elif kind == "timeout":
        what = f"timed out{took} ({reason})" if reason else f"timed out{took}"
    else:
        what = f"failed{took}: {reason}"
    lines = [
        f"job {job_id} ({options.label}) {what}",
        f"{_count(s.lines, 'line')}, {_count(s.bytes, 'byte')} of output; log: {log_path}",
    ]
    if s.suppressed:
        lines.append(
            f"{s.suppressed:,} {'match' if s.suppressed == 1 else 'matches'} suppressed "
            f"(at most {options.settings.per_min} match events a minute)"
        )
    if s.watch_stopped:
        lines.append(s.watch_stopped)
    if s.log_problem:
        lines.append(f"only the first {s.logged:,} bytes are in the log: {s.log_problem}")
    tail_n = options.settings.tail_lines
    tail = ""
    if tail_n > 0 and s.logged:
        try:
            tail = read_tail(log_path, tail_n).text
        except UserError as exc:  # something else in the log's place: the end is still told
            lines.append(exc.one_line())
        except OSError as exc:
            lines.append(f"{log_path} cannot be read: {exc.strerror or exc}")
    if tail:
        lines += [f"--- last {tail_n} lines ---", tail]
    elif not s.bytes:
        lines.append("(no output)")
    return "\n".join(lines)


def _count(n: int, word: str) -> str:
    return f"{n:,} {word}" + ("" if n == 1 else "s")


def seconds_text(ms: int) -> str:
    """12.4 s under a minute, then 1m47s (display.duration)."""
    return f"{ms / 1000:.1f} s" if ms < 60_000 else duration(ms / 1000)


def _counted(log_path: Path, base: ExitSummary) -> ExitSummary:
    """Lines and bytes of a log, counted (recovery: the runner's counts died with it)."""
    lines = size = 0
    last = b"\n"
    try:
        fd = open_regular(log_path)
    except (OSError, StoreError):
        return base
    try:
        while chunk := os.read(fd, COUNT_CHUNK):
            lines += chunk.count(b"\n")
            size += len(chunk)
            last = chunk[-1:]
    finally:
        os.close(fd)
    if last != b"\n":
        lines += 1
    return ExitSummary(
        kind=None,
        lines=lines,
        bytes=size,
        logged=size,
        matched=base.matched,
        suppressed=base.suppressed,
        watch_stopped=base.watch_stopped,
        log_problem=base.log_problem,
    )
