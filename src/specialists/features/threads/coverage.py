"""`assess_coverage`: compare assigned line ranges with the ranges children say they read (R-RLM3).

Deterministic and pure: it reads no source and verifies no report. Only `read` coverage
covers a line; `partial` and `failed` entries cover nothing and are listed. Read ranges are
merged per source before they are subtracted, so duplicates and overlaps can never hide a
gap, and a read range outside every assigned range covers nothing assigned. Missing ranges
come in the order of the assigned ranges (within one, in line order), each line reported
once even when assigned ranges overlap; failures, partial reads and evidence come in report
order, then entry order. Sources are compared as exact strings.

Coverage says nothing about correctness: a range a child reports as read may still be
misread, and the report itself is a claim.
"""

from __future__ import annotations

import bisect
from collections.abc import Iterable
from dataclasses import dataclass

from specialists.features.threads.reports import (
    MAX_ITEMS,
    SPAN_FIELDS,
    Coverage,
    Evidence,
    ReportError,
    Span,
    StructuredReport,
    check_array,
    check_object,
    span_of,
    span_text,
    validate_structured,
)

MAX_ASSIGNED = 10_000
MAX_REPORTS = MAX_ITEMS

Interval = tuple[int, int]  # inclusive


@dataclass(frozen=True)
class Claimed:
    """A coverage or evidence entry, with the index of the report it came from."""

    report: int
    entry: Coverage | Evidence


@dataclass(frozen=True)
class CoverageAssessment:
    missing: tuple[Span, ...]  # assigned lines no `read` range covers
    failures: tuple[Claimed, ...]  # `failed` coverage entries
    partial: tuple[Claimed, ...]  # `partial` coverage entries (they cover nothing)
    evidence: tuple[Claimed, ...]
    assigned_lines: int  # distinct assigned lines
    read_lines: int  # distinct assigned lines inside a `read` range


def assess_coverage(assigned: object, reports: object) -> CoverageAssessment:
    """Raises ReportError (one line naming the field) on malformed input; else the result."""
    spans = _assigned(assigned)
    parsed = _reports(reports)
    reads: dict[str, list[Interval]] = {}
    failures: list[Claimed] = []
    partial: list[Claimed] = []
    evidence: list[Claimed] = []
    for index, report in enumerate(parsed):
        for entry in report.coverage:
            if entry.status == "read":
                reads.setdefault(entry.source, []).append((entry.start_line, entry.end_line))
            else:
                (failures if entry.status == "failed" else partial).append(Claimed(index, entry))
        evidence += [Claimed(index, e) for e in report.evidence]
    covered = {source: _union(ranges) for source, ranges in reads.items()}

    missing: list[Span] = []
    listed: dict[str, list[Interval]] = {}  # per source: gaps already listed, disjoint
    for span in spans:
        gaps = _subtract([(span.start_line, span.end_line)], covered.get(span.source, []))
        done = listed.setdefault(span.source, [])
        for start, end in _subtract(gaps, done):
            missing.append(Span(span.source, start, end))
            bisect.insort(done, (start, end))  # disjoint from `done`: no merging needed
    by_source: dict[str, list[Interval]] = {}
    for span in spans:
        by_source.setdefault(span.source, []).append((span.start_line, span.end_line))
    assigned_lines = sum(_size(_union(ranges)) for ranges in by_source.values())
    return CoverageAssessment(
        missing=tuple(missing),
        failures=tuple(failures),
        partial=tuple(partial),
        evidence=tuple(evidence),
        assigned_lines=assigned_lines,
        read_lines=assigned_lines - sum(s.lines for s in missing),
    )


def render_assessment(result: CoverageAssessment) -> str:
    lines = [
        f"{result.read_lines} of {result.assigned_lines} assigned lines reported read "
        "(reports are claims; coverage says nothing about correctness)"
    ]
    if result.missing:
        lines.append("missing:")
        lines += [f"- {span_text(s)}" for s in result.missing]
    for title, items in (("failed", result.failures), ("partial", result.partial)):
        if items:
            lines.append(f"{title}:")
            lines += [f"- {span_text(c.entry)} (report {c.report})" for c in items]
    if result.evidence:
        lines.append("evidence (claimed):")
        for c in result.evidence:
            claim = c.entry.claim if isinstance(c.entry, Evidence) else ""
            lines.append(f"- {span_text(c.entry)}: {claim} (report {c.report})")
    return "\n".join(lines)


# --- input -------------------------------------------------------------------------------


def _assigned(value: object) -> list[Span]:
    if value is None:
        raise ReportError("assigned: required (an array of {source, start_line, end_line})")
    out = []
    for i, item in enumerate(check_array(value, "assigned", cap=MAX_ASSIGNED)):
        data = check_object(item, f"assigned[{i}]", allowed=SPAN_FIELDS, required=SPAN_FIELDS)
        out.append(Span(*span_of(data, f"assigned[{i}]")))
    return out


def _reports(value: object) -> list[StructuredReport]:
    """Each report: a structured report's fields (summary optional here) plus an `id` label."""
    if value is None:
        raise ReportError("reports: required (an array of structured reports)")
    out = []
    for i, item in enumerate(check_array(value, "reports", cap=MAX_REPORTS)):
        at = f"reports[{i}]"
        label = item.get("id") if type(item) is dict else None
        if label is not None and type(label) is not str:
            raise ReportError(f"{at}.id: must be a string")
        out.append(validate_structured(item, at, extra=("id",)))
    return out


# --- interval arithmetic on sorted, disjoint, inclusive intervals --------------------------


def _union(ranges: Iterable[Interval]) -> list[Interval]:
    out: list[Interval] = []
    for start, end in sorted(ranges):
        if out and start <= out[-1][1] + 1:
            out[-1] = (out[-1][0], max(out[-1][1], end))
        else:
            out.append((start, end))
    return out


def _subtract(intervals: list[Interval], covered: list[Interval]) -> list[Interval]:
    """`intervals` (sorted, disjoint) minus `covered` (sorted, disjoint), in order."""
    out: list[Interval] = []
    starts = [s for s, _ in covered]
    for start, end in intervals:
        i = max(bisect.bisect_right(starts, start) - 1, 0)
        cursor = start
        while i < len(covered) and cursor <= end:
            c_start, c_end = covered[i]
            i += 1
            if c_end < cursor:
                continue
            if c_start > end:
                break
            if c_start > cursor:
                out.append((cursor, c_start - 1))
            cursor = c_end + 1
        if cursor <= end:
            out.append((cursor, end))
    return out


def _size(disjoint: list[Interval]) -> int:
    return sum(e - s + 1 for s, e in disjoint)
