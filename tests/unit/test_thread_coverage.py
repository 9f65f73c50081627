"""threads/coverage.py: assess_coverage (R-RLM3). Gaps are never hidden, order is input order,
malformed input is one clear error."""

from __future__ import annotations

import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from specialists.features.threads.coverage import Span, assess_coverage, render_assessment
from specialists.features.threads.reports import Coverage, Evidence, ReportError


def rng(source: str, start: int, end: int, **extra) -> dict:
    return {"source": source, "start_line": start, "end_line": end, **extra}


def read(source: str, start: int, end: int) -> dict:
    return rng(source, start, end, status="read")


def test_missing_ranges_failures_and_evidence_come_in_input_order():
    result = assess_coverage(
        [rng("b.py", 1, 50), rng("a.py", 1, 100)],
        [
            {"id": "t-1", "coverage": [read("a.py", 1, 40), rng("a.py", 41, 60, status="failed")]},
            {
                "summary": "second child",
                "coverage": [rng("b.py", 10, 20, status="partial"), read("b.py", 30, 50)],
                "evidence": [rng("a.py", 5, 5, claim="x is set"), rng("b.py", 31, 32, claim="y")],
            },
        ],
    )
    assert result.missing == (Span("b.py", 1, 29), Span("a.py", 41, 100))
    assert [(c.report, c.entry) for c in result.failures] == [
        (0, Coverage("a.py", 41, 60, "failed"))
    ]
    assert [(c.report, c.entry) for c in result.partial] == [
        (1, Coverage("b.py", 10, 20, "partial"))
    ]
    assert [(c.report, c.entry) for c in result.evidence] == [
        (1, Evidence("a.py", 5, 5, "x is set")),
        (1, Evidence("b.py", 31, 32, "y")),
    ]
    assert (result.assigned_lines, result.read_lines) == (150, 61)


def test_duplicate_and_overlapping_reads_do_not_hide_gaps():
    result = assess_coverage(
        [rng("f", 1, 100)],
        [{"coverage": [read("f", 1, 30), read("f", 1, 30), read("f", 20, 40), read("f", 60, 70)]}],
    )
    assert result.missing == (Span("f", 41, 59), Span("f", 71, 100))


def test_adjacent_reads_join_and_reads_elsewhere_cover_nothing():
    result = assess_coverage(
        [rng("f", 1, 10)],
        [{"coverage": [read("f", 1, 5), read("f", 6, 10), read("g", 1, 10), read("f", 11, 99)]}],
    )
    assert result.missing == () and result.read_lines == 10


def test_overlapping_assignments_report_each_missing_line_once():
    result = assess_coverage([rng("f", 1, 10), rng("f", 5, 20), rng("f", 1, 20)], [])
    assert result.missing == (Span("f", 1, 10), Span("f", 11, 20))
    assert result.assigned_lines == 20


def test_sources_are_exact_strings():
    result = assess_coverage([rng("./f.py", 1, 3)], [{"coverage": [read("f.py", 1, 3)]}])
    assert result.missing == (Span("./f.py", 1, 3),)


def test_only_read_covers_and_nothing_is_claimed_complete_by_default():
    result = assess_coverage(
        [rng("f", 1, 3)], [{"coverage": [rng("f", 1, 3, status="partial")]}, {"summary": "done"}]
    )
    assert result.missing == (Span("f", 1, 3),)
    text = render_assessment(result)
    assert text.splitlines()[0].startswith("0 of 3 assigned lines reported read")
    assert "says nothing about correctness" in text and "- f:1-3" in text


def test_empty_inputs_are_fine():
    result = assess_coverage([], [])
    assert result.missing == () and result.assigned_lines == 0


BAD = [
    ("assigned missing", None, [], "assigned: required"),
    ("reports missing", [], None, "reports: required"),
    ("assigned not an array", {"source": "f"}, [], "assigned: must be an array"),
    ("sparse assigned", [rng("f", 1, 2), None], [], r"assigned\[1\]: missing"),
    ("assigned backwards", [rng("f", 9, 2)], [], r"assigned\[0\]: the range ends"),
    ("assigned float", [rng("f", 1.0, 2)], [], "must be a whole number"),
    ("assigned bool", [rng("f", True, 2)], [], "must be a whole number"),
    ("assigned NaN", [rng("f", 1, math.nan)], [], "must be a whole number"),
    ("assigned huge", [rng("f", 1, 2**63)], [], "between 1 and"),
    ("assigned extra key", [rng("f", 1, 2, status="read")], [], "unknown field 'status'"),
    ("sparse reports", [], [None], r"reports\[0\]: missing"),
    ("report not an object", [], ["text report"], r"reports\[0\]: must be an object"),
    ("report unknown key", [], [{"ranges": []}], "unknown field 'ranges'"),
    ("report bad id", [], [{"id": 3}], r"reports\[0\].id: must be a string"),
    ("sparse coverage", [], [{"coverage": [read("f", 1, 2), None]}], r"coverage\[1\]: missing"),
    ("coverage backwards", [], [{"coverage": [read("f", 3, 1)]}], "ends .line 1. before"),
    ("coverage bad status", [], [{"coverage": [rng("f", 1, 2, status="ok")]}], "must be one of"),
    ("evidence no claim", [], [{"evidence": [rng("f", 1, 2)]}], "missing field 'claim'"),
    ("files mistyped", [], [{"files": [1]}], r"files\[0\]: must be a string"),
    ("too many assigned", [rng("f", 1, 1)] * 10_001, [], "at most 10000"),
]


@pytest.mark.parametrize(("what", "assigned", "reports", "message"), BAD, ids=[b[0] for b in BAD])
def test_malformed_input_is_one_clear_error(what, assigned, reports, message):
    with pytest.raises(ReportError, match=message) as err:
        assess_coverage(assigned, reports)
    assert "\n" not in err.value.one_line()


# --- properties ----------------------------------------------------------------------------

SOURCES = ["a", "b"]


@st.composite
def ranges(draw, max_line=60):
    a, b = sorted((draw(st.integers(1, max_line)), draw(st.integers(1, max_line))))
    return rng(draw(st.sampled_from(SOURCES)), a, b)


statuses = st.sampled_from(["read", "read", "partial", "failed"])


@st.composite
def reports(draw):
    return [
        {"coverage": [{**draw(ranges()), "status": draw(statuses)} for _ in range(n)]}
        for n in draw(st.lists(st.integers(0, 6), max_size=4))
    ]


def lines(entries, *, status=None):
    out = set()
    for e in entries:
        if status is None or e.get("status") == status:
            out |= {(e["source"], n) for n in range(e["start_line"], e["end_line"] + 1)}
    return out


@settings(max_examples=200, deadline=None)
@given(st.lists(ranges(), max_size=8), reports())
def test_gaps_are_never_hidden(assigned, reps):
    """Every assigned line not inside a `read` range is missing; nothing read or unassigned
    is; each missing line once; ranges disjoint, in assigned order, within one in line order."""
    result = assess_coverage(assigned, reps)
    coverage = [c for r in reps for c in r["coverage"]]
    expected = lines(assigned) - lines(coverage, status="read")
    listed = [(s.source, n) for s in result.missing for n in range(s.start_line, s.end_line + 1)]
    assert set(listed) == expected
    assert len(listed) == len(set(listed))
    assert result.assigned_lines == len(lines(assigned))
    assert result.read_lines == len(lines(assigned)) - len(expected)
    # order: the first assigned range containing each missing span never goes backwards
    firsts = [
        next(
            i
            for i, a in enumerate(assigned)
            if a["source"] == s.source and a["start_line"] <= s.start_line <= a["end_line"]
        )
        for s in result.missing
    ]
    assert firsts == sorted(firsts)
    failed = [c for c in coverage if c["status"] == "failed"]
    assert [(c.entry.source, c.entry.start_line) for c in result.failures] == [
        (c["source"], c["start_line"]) for c in failed
    ]


@settings(max_examples=200, deadline=None)
@given(st.lists(ranges(), max_size=6), reports(), st.randoms())
def test_the_order_of_read_entries_does_not_change_what_is_missing(assigned, reps, random):
    entries = [c for r in reps for c in r["coverage"]]
    shuffled = entries[:]
    random.shuffle(shuffled)
    first = assess_coverage(assigned, [{"coverage": entries}])
    second = assess_coverage(assigned, [{"coverage": shuffled}])
    assert first.missing == second.missing
