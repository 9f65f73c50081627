"""Child reports: plain text or structured, validated before anything is written (R-H6a, R-RLM2).

A report is `report: "<text>"` or `structured: {summary, files?, tests?, blockers?,
evidence?, coverage?}`, never both; `report_to_parent` needs one, `close_thread` may carry
none. A structured report travels as compact JSON in the same text field as a plain one, so
the parent side (`decode_report`) recognises it; any text that is not exactly such an
object (legacy reports, prose, unrelated or invalid JSON) stays ordinary text.

Input is programmatic and untrusted, so the shape is checked exactly: `type(x) is ...`
rather than isinstance (a subclass of list, dict or str can show validation one thing and
the JSON encoder another), no JSON null holes in arrays (how a sparse array arrives), no
floats, booleans or out-of-range numbers as line numbers, no unknown keys, no lone
surrogates (they cannot be written as UTF-8). The encoded report is capped
(`MAX_REPORT_CHARS`) and the child checks the cap before writing, so an oversized report is
an error the child can fix, never a half-written record or a close that did not happen.

Evidence and coverage entries are the child's claims, not verified citations or proof of
coverage; rendering says so.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import asdict, dataclass
from typing import Any, Literal, assert_never

from specialists.base.errors import UserError

MAX_REPORT_CHARS = 100_000  # the encoded text; events spill bodies past 4 KB anyway
MAX_ITEMS = 1_000  # entries in any one array
MAX_SOURCE_CHARS = 4_096
MAX_LINE = 2**31 - 1  # every transport (JSON in JS included) carries it exactly

CoverageStatus = Literal["read", "partial", "failed"]
COVERAGE_STATUSES: tuple[CoverageStatus, ...] = ("read", "partial", "failed")
LIST_FIELDS = ("files", "tests", "blockers")
STRUCTURED_FIELDS = ("summary", *LIST_FIELDS, "evidence", "coverage")
SPAN_FIELDS = ("source", "start_line", "end_line")


class ReportError(UserError):
    """A report (or coverage input) with the wrong shape; the message names the field."""


@dataclass(frozen=True)
class Span:
    """An inclusive, 1-based line range of a source."""

    source: str
    start_line: int
    end_line: int

    @property
    def lines(self) -> int:
        return self.end_line - self.start_line + 1


@dataclass(frozen=True)
class Evidence(Span):
    claim: str


@dataclass(frozen=True)
class Coverage(Span):
    status: CoverageStatus


@dataclass(frozen=True)
class StructuredReport:
    summary: str
    files: tuple[str, ...] = ()
    tests: tuple[str, ...] = ()
    blockers: tuple[str, ...] = ()
    evidence: tuple[Evidence, ...] = ()
    coverage: tuple[Coverage, ...] = ()
    kind: Literal["structured"] = "structured"


@dataclass(frozen=True)
class TextReport:
    text: str
    kind: Literal["text"] = "text"


Report = StructuredReport | TextReport


@dataclass(frozen=True)
class PreparedReport:
    """A checked report and the exact text to write: what a child tool does before writing."""

    report: Report
    text: str


# --- the child side ------------------------------------------------------------------------


def prepare_report(
    args: Mapping[str, Any], *, required: bool, max_chars: int = MAX_REPORT_CHARS
) -> PreparedReport | None:
    """Validate `report`/`structured` from a tool call and encode it, refusing oversize.

    A JSON null counts as absent (strict tool schemas send every optional field as null).
    Returns None only when neither is given and `required` is false (a close without one).
    """
    report = parse_report_args(args, required=required)
    if report is None:
        return None
    return PreparedReport(report, encode_report(report, max_chars=max_chars))


def parse_report_args(args: Mapping[str, Any], *, required: bool) -> Report | None:
    text, structured = args.get("report"), args.get("structured")
    if text is not None and structured is not None:
        raise ReportError(
            "a report cannot have both `report` and `structured`",
            hint="send one: text in `report`, or fields in `structured`",
        )
    if structured is not None:
        return validate_structured(structured)
    if text is not None:
        return TextReport(_text(text, "report", max_chars=MAX_REPORT_CHARS))
    if required:
        raise ReportError(
            "report_to_parent needs `report` or `structured`",
            hint='e.g. {"structured": {"summary": "what I found"}}',
        )
    return None


def encode_report(report: Report, *, max_chars: int = MAX_REPORT_CHARS) -> str:
    if report.kind == "text":
        text = report.text
    elif report.kind == "structured":
        text = json.dumps(to_dict(report), ensure_ascii=False, separators=(",", ":"))
    else:
        assert_never(report)
    if len(text) > max_chars:
        raise ReportError(
            f"report is {len(text):,} characters; the limit is {max_chars:,}",
            hint="shorten it: summarise, and put long material in a file and name the file",
        )
    return text


def to_dict(report: StructuredReport) -> dict[str, Any]:
    out: dict[str, Any] = {"summary": report.summary}
    for name in LIST_FIELDS:
        if getattr(report, name):
            out[name] = list(getattr(report, name))
    for name in ("evidence", "coverage"):
        if getattr(report, name):
            out[name] = [asdict(e) for e in getattr(report, name)]
    return out


# --- validation ----------------------------------------------------------------------------


def validate_structured(
    value: object, where: str = "structured", *, extra: tuple[str, ...] = ()
) -> StructuredReport:
    """A structured report. `extra` names fields another caller allows and checks itself
    (assess_coverage's `id`); with `extra`, the summary is optional (empty when absent)."""
    required = () if extra else ("summary",)
    data = check_object(value, where, allowed=(*STRUCTURED_FIELDS, *extra), required=required)
    summary = data.get("summary")
    return StructuredReport(
        summary="" if summary is None else _text(summary, f"{where}.summary"),
        files=_strings(data.get("files"), f"{where}.files"),
        tests=_strings(data.get("tests"), f"{where}.tests"),
        blockers=_strings(data.get("blockers"), f"{where}.blockers"),
        evidence=validate_evidence(data.get("evidence"), f"{where}.evidence"),
        coverage=validate_coverage(data.get("coverage"), f"{where}.coverage"),
    )


def validate_evidence(value: object, where: str) -> tuple[Evidence, ...]:
    return tuple(
        Evidence(source, start, end, _text(data["claim"], f"{at}.claim"))
        for at, data, source, start, end in _span_entries(value, where, "claim")
    )


def validate_coverage(value: object, where: str) -> tuple[Coverage, ...]:
    out = []
    for at, data, source, start, end in _span_entries(value, where, "status"):
        status = data["status"]
        if type(status) is not str or status not in COVERAGE_STATUSES:
            raise ReportError(
                f"{at}.status: must be one of read, partial, failed (got {_shown(status)})"
            )
        out.append(Coverage(source, start, end, status))
    return tuple(out)


def _span_entries(
    value: object, where: str, field: str
) -> list[tuple[str, dict[str, Any], str, int, int]]:
    """An array of `{source, start_line, end_line, <field>}` objects, each span checked."""
    out = []
    for i, item in enumerate(check_array(value, where)):
        at = f"{where}[{i}]"
        keys = (*SPAN_FIELDS, field)
        data = check_object(item, at, allowed=keys, required=keys)
        out.append((at, data, *span_of(data, at)))
    return out


def span_of(data: Mapping[str, Any], where: str) -> tuple[str, int, int]:
    """`source`, `start_line`, `end_line` of an entry: an inclusive, 1-based line range."""
    source = _text(data["source"], f"{where}.source", max_chars=MAX_SOURCE_CHARS)
    if any(c in source for c in "\n\r\0"):
        raise ReportError(f"{where}.source: must be one line (a path or a name)")
    start = _line(data["start_line"], f"{where}.start_line")
    end = _line(data["end_line"], f"{where}.end_line")
    if end < start:
        raise ReportError(
            f"{where}: the range ends (line {end}) before it starts (line {start})",
            hint="ranges are inclusive: start_line <= end_line",
        )
    return source, start, end


def check_object(
    value: object, where: str, *, allowed: tuple[str, ...], required: tuple[str, ...]
) -> dict[str, Any]:
    if type(value) is not dict:
        raise ReportError(f"{where}: must be an object (got {_shown(value)})")
    unknown = [k for k in value if k not in allowed]
    if unknown:
        raise ReportError(
            f"{where}: unknown field {_shown(unknown[0])}", hint=f"fields: {', '.join(allowed)}"
        )
    missing = [k for k in required if value.get(k) is None]
    if missing:
        raise ReportError(f"{where}: missing field {missing[0]!r}")
    return value


def check_array(value: object, where: str, *, cap: int = MAX_ITEMS) -> tuple[Any, ...]:
    """A JSON array (absent or null: empty) of at most `cap` entries, none of them null."""
    if value is None:
        return ()
    if type(value) is not list and type(value) is not tuple:
        raise ReportError(f"{where}: must be an array (got {_shown(value)})")
    if len(value) > cap:
        raise ReportError(f"{where}: {len(value)} entries; at most {cap}")
    for i, item in enumerate(value):
        if item is None:
            raise ReportError(f"{where}[{i}]: missing (a sparse array or a null entry)")
    return tuple(value)


def _strings(value: object, where: str) -> tuple[str, ...]:
    return tuple(_text(item, f"{where}[{i}]") for i, item in enumerate(check_array(value, where)))


def _text(value: object, where: str, *, max_chars: int = MAX_REPORT_CHARS) -> str:
    if type(value) is not str:
        raise ReportError(f"{where}: must be a string (got {_shown(value)})")
    if not value.strip():
        raise ReportError(f"{where}: must not be empty")
    if len(value) > max_chars:
        raise ReportError(f"{where}: {len(value):,} characters; the limit is {max_chars:,}")
    try:
        value.encode("utf-8")
    except UnicodeEncodeError as exc:
        raise ReportError(f"{where}: not valid text (a lone surrogate at {exc.start})") from None
    return value


def _line(value: object, where: str) -> int:
    if type(value) is not int:
        raise ReportError(f"{where}: must be a whole number (got {_shown(value)})")
    if not 1 <= value <= MAX_LINE:
        shown = str(value) if len(str(value)) < 30 else f"a {len(str(value))}-digit number"
        raise ReportError(f"{where}: must be between 1 and {MAX_LINE} (got {shown})")
    return value


def _shown(value: object) -> str:
    if type(value) is str:
        return repr(value[:40])
    if type(value) in (int, float, bool) and len(repr(value)) < 30:
        return f"{type(value).__name__} {value!r}"
    return type(value).__name__


# --- the parent side -----------------------------------------------------------------------


def decode_report(text: str) -> Report:
    """What a child sent: a structured report if the text is exactly one valid structured
    object (optionally in one ```json fence, as a blocking child's final message may be);
    anything else, as it was."""
    body = _unfenced(text.strip())
    if not body.startswith("{") or len(body) > MAX_REPORT_CHARS:
        return TextReport(text)
    try:
        value = json.loads(body, parse_constant=_no_constants, object_pairs_hook=_unique_keys)
        return validate_structured(value)
    except (ValueError, ReportError):
        return TextReport(text)


def render_report(report: Report) -> str:
    """Concise text for the parent model."""
    if report.kind == "text":
        return report.text
    if report.kind != "structured":
        assert_never(report)
    lines = [report.summary.strip()]
    if report.files:
        lines.append("files: " + ", ".join(report.files))
    if report.tests:
        lines.append("tests: " + "; ".join(report.tests))
    if report.blockers:
        lines.append("blockers:")
        lines += [f"- {b}" for b in report.blockers]
    if report.evidence:
        lines.append("evidence (the child's claims, not verified):")
        lines += [f"- {span_text(e)}: {e.claim}" for e in report.evidence]
    if report.coverage:
        lines.append("coverage (claimed, not verified):")
        for status in COVERAGE_STATUSES:
            spans = [span_text(c) for c in report.coverage if c.status == status]
            if spans:
                lines.append(f"- {status}: {', '.join(spans)}")
    return "\n".join(lines)


def span_text(entry: Span) -> str:
    if entry.start_line == entry.end_line:
        return f"{entry.source}:{entry.start_line}"
    return f"{entry.source}:{entry.start_line}-{entry.end_line}"


def _unfenced(body: str) -> str:
    if body.startswith("```") and body.endswith("```") and body.count("```") == 2:
        first, _, rest = body[3:-3].partition("\n")
        if first.strip() in ("", "json"):
            return rest.strip()
    return body


def _no_constants(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")


def _unique_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, value in pairs:
        if key in out:
            raise ValueError(f"duplicate key {key!r}")
        out[key] = value
    return out
