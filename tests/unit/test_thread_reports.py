"""threads/reports.py: R-H6a and R-RLM2, every malformed shape refused with the field named,
legacy text untouched, the size cap checked before anything is written."""

from __future__ import annotations

import json
import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from specialists.features.threads.reports import (
    MAX_ITEMS,
    MAX_LINE,
    MAX_REPORT_CHARS,
    Coverage,
    Evidence,
    ReportError,
    StructuredReport,
    TextReport,
    decode_report,
    encode_report,
    parse_report_args,
    prepare_report,
    render_report,
    validate_structured,
)

FULL = {
    "summary": "Parsed the config loader; two bugs found.",
    "files": ["src/config.py", "tests/test_config.py"],
    "tests": ["pytest tests/test_config.py: 12 passed"],
    "blockers": ["needs a decision on default paths"],
    "evidence": [
        {"source": "src/config.py", "start_line": 40, "end_line": 52, "claim": "env wins over file"}
    ],
    "coverage": [
        {"source": "src/config.py", "start_line": 1, "end_line": 120, "status": "read"},
        {"source": "src/legacy.py", "start_line": 1, "end_line": 9, "status": "failed"},
    ],
}


def test_a_full_structured_report_validates_encodes_and_comes_back_equal():
    prepared = prepare_report({"structured": FULL}, required=True)
    assert prepared is not None and isinstance(prepared.report, StructuredReport)
    assert prepared.report.evidence == (Evidence("src/config.py", 40, 52, "env wins over file"),)
    assert prepared.report.coverage[1] == Coverage("src/legacy.py", 1, 9, "failed")
    assert json.loads(prepared.text) == FULL
    assert decode_report(prepared.text) == prepared.report


def test_a_plain_report_stays_text_both_ways():
    prepared = prepare_report({"report": "done: fixed the bug"}, required=True)
    assert prepared is not None and prepared.report == TextReport("done: fixed the bug")
    assert prepared.text == "done: fixed the bug"
    assert decode_report(prepared.text) == TextReport("done: fixed the bug")


def test_close_may_carry_no_report_but_report_to_parent_needs_one():
    assert prepare_report({}, required=False) is None
    assert prepare_report({"report": None, "structured": None}, required=False) is None
    with pytest.raises(ReportError, match="needs `report` or `structured`"):
        prepare_report({}, required=True)


def test_a_null_field_counts_as_absent():
    """Strict tool schemas (OpenAI's) send every optional field, null when unused."""
    report = parse_report_args(
        {"report": None, "structured": {"summary": "s", "files": None, "evidence": None}},
        required=True,
    )
    assert report == StructuredReport("s")


def test_both_report_and_structured_are_refused():
    with pytest.raises(ReportError, match="both `report` and `structured`"):
        parse_report_args({"report": "x", "structured": {"summary": "y"}}, required=True)


class SneakyList(list):
    """Shows validation one thing and the JSON encoder another."""

    def __iter__(self):
        return iter(["looks fine"])


class SneakyDict(dict):
    pass


class SneakyStr(str):
    def strip(self, *_):
        return "nonempty"


def _ev(**over):
    entry = {"source": "a.py", "start_line": 1, "end_line": 2, "claim": "c"}
    entry.update(over)
    return {"summary": "s", "evidence": [entry]}


def _cov(**over):
    entry = {"source": "a.py", "start_line": 1, "end_line": 2, "status": "read"}
    entry.update(over)
    return {"summary": "s", "coverage": [entry]}


MALFORMED = [
    ("structured is a string", "{}", "structured: must be an object"),
    ("structured is a list", [], "structured: must be an object"),
    ("dict subclass", SneakyDict(summary="s"), "must be an object"),
    ("no summary", {"files": []}, "missing field 'summary'"),
    ("empty summary", {"summary": ""}, "summary: must not be empty"),
    ("blank summary", {"summary": " \n\t"}, "summary: must not be empty"),
    ("summary not a string", {"summary": 5}, "summary: must be a string"),
    ("str subclass summary", {"summary": SneakyStr("")}, "summary: must be a string"),
    ("lone surrogate", {"summary": "bad \ud800"}, "lone surrogate"),
    ("unknown key", {"summary": "s", "Summary": "s"}, "unknown field 'Summary'"),
    ("files not an array", {"summary": "s", "files": "a.py"}, "files: must be an array"),
    ("files as an object", {"summary": "s", "files": {"0": "a"}}, "files: must be an array"),
    ("sparse files", {"summary": "s", "files": ["a", None, "b"]}, r"files\[1\]: missing"),
    ("number in files", {"summary": "s", "tests": [1]}, r"tests\[0\]: must be a string"),
    ("blank entry", {"summary": "s", "blockers": [""]}, r"blockers\[0\]: must not be empty"),
    ("list subclass", {"summary": "s", "files": SneakyList([3])}, "files: must be an array"),
    ("too many", {"summary": "s", "files": ["f"] * (MAX_ITEMS + 1)}, "at most 1000"),
    ("sparse evidence", {"summary": "s", "evidence": [None]}, r"evidence\[0\]: missing"),
    ("evidence not objects", {"summary": "s", "evidence": ["a.py:1"]}, "must be an object"),
    ("evidence unknown key", _ev(line=3), "unknown field 'line'"),
    ("evidence without claim", _ev(claim=None), "missing field 'claim'"),
    ("evidence empty claim", _ev(claim=""), "claim: must not be empty"),
    ("float line", _ev(start_line=3.0), "start_line: must be a whole number .got float 3.0"),
    ("bool line", _ev(end_line=True), "end_line: must be a whole number .got bool True"),
    ("string line", _ev(start_line="1"), "start_line: must be a whole number"),
    ("NaN line", _ev(start_line=math.nan), "must be a whole number .got float nan"),
    ("infinite line", _ev(end_line=math.inf), "must be a whole number .got float inf"),
    ("huge line", _ev(end_line=10**40), "between 1 and 2147483647 .got a 41-digit number"),
    ("just past the cap", _ev(end_line=MAX_LINE + 1), "between 1 and"),
    ("zero line", _ev(start_line=0), "between 1 and"),
    ("negative line", _ev(start_line=-3), "between 1 and"),
    ("ends before it starts", _ev(start_line=9, end_line=3), "ends .line 3. before it starts"),
    ("source with a newline", _ev(source="a.py\nb.py"), "source: must be one line"),
    ("empty source", _ev(source=""), "source: must not be empty"),
    ("huge source", _ev(source="x" * 5000), "source: 5,000 characters"),
    ("coverage bad status", _cov(status="done"), "status: must be one of read, partial, failed"),
    ("coverage status not a string", _cov(status=1), "must be one of"),
    ("coverage no status", _cov(status=None), "missing field 'status'"),
    ("coverage backwards", _cov(start_line=5, end_line=4), "ends .line 4. before it starts"),
    ("coverage not an array", {"summary": "s", "coverage": {"source": "a"}}, "must be an array"),
]


@pytest.mark.parametrize(("what", "value", "message"), MALFORMED, ids=[m[0] for m in MALFORMED])
def test_malformed_structured_reports_are_refused_naming_the_field(what, value, message):
    with pytest.raises(ReportError, match=message) as err:
        prepare_report({"structured": value}, required=True)
    assert "\n" not in err.value.one_line()


@pytest.mark.parametrize("bad", ["", "   ", 5, ["text"], {"text": "x"}, "\udfff"])
def test_malformed_plain_reports_are_refused(bad):
    with pytest.raises(ReportError, match="report:"):
        prepare_report({"report": bad}, required=True)


def test_an_oversized_report_is_refused_before_anything_is_written(tmp_path):
    """The child's check: prepare_report raises, so the tool writes nothing and a close that
    carried the report does not terminate the child."""
    inbox = tmp_path / "reports.jsonl"
    for args in (
        {"report": "x" * (MAX_REPORT_CHARS + 1)},
        {"structured": {"summary": "s", "files": ["f" * 90] * 999 + ["g" * 20_000]}},
    ):
        with pytest.raises(ReportError, match="the limit is 100,000"):
            prepared = prepare_report(args, required=True)
            inbox.write_text(prepared.text)  # never reached
    assert not inbox.exists()
    assert prepare_report({"report": "x" * 100}, required=True, max_chars=100) is not None
    with pytest.raises(ReportError, match="101 characters; the limit is 100"):
        prepare_report({"report": "x" * 101}, required=True, max_chars=100)


def test_input_mutated_after_validation_does_not_change_the_report():
    value = {"summary": "s", "files": ["a.py"]}
    prepared = prepare_report({"structured": value}, required=True)
    value["files"].append(None)
    assert prepared is not None and prepared.report.files == ("a.py",)


@pytest.mark.parametrize(
    "text",
    [
        "plain legacy report",
        "",
        "[1, 2, 3]",
        '"just a string"',
        "{not json",
        '{"summary": ""}',
        '{"summary": "s", "extra": 1}',
        '{"Summary": "s"}',
        '{"summary": "s", "evidence": [{"source": "a", "start_line": 1.0, "end_line": 2, '
        '"claim": "c"}]}',
        '{"summary": "s", "coverage": [{"source": "a", "start_line": NaN, "end_line": 2, '
        '"status": "read"}]}',
        '{"summary": "a", "summary": "b"}',
        "Here is my report:\n" + json.dumps(FULL),
        "```python\n" + json.dumps(FULL) + "\n```",
    ],
)
def test_unrecognised_or_invalid_json_stays_ordinary_text(text):
    assert decode_report(text) == TextReport(text)


def test_a_fenced_structured_final_message_is_recognised():
    """A blocking-transport child may return the JSON object as its final message (R-H6a)."""
    text = "```json\n" + json.dumps(FULL, indent=2) + "\n```\n"
    assert decode_report(text) == validate_structured(FULL)


def test_rendering_is_concise_and_marks_claims_as_unverified():
    rendered = render_report(validate_structured(FULL))
    assert rendered.splitlines() == [
        "Parsed the config loader; two bugs found.",
        "files: src/config.py, tests/test_config.py",
        "tests: pytest tests/test_config.py: 12 passed",
        "blockers:",
        "- needs a decision on default paths",
        "evidence (the child's claims, not verified):",
        "- src/config.py:40-52: env wins over file",
        "coverage (claimed, not verified):",
        "- read: src/config.py:1-120",
        "- failed: src/legacy.py:1-9",
    ]
    assert render_report(StructuredReport("only a summary")) == "only a summary"
    assert render_report(TextReport("legacy\ntext")) == "legacy\ntext"


def test_encoding_keeps_non_ascii_text_readable():
    report = validate_structured({"summary": "fixé ✓ 日本"})
    assert encode_report(report) == '{"summary":"fixé ✓ 日本"}'


# --- properties ------------------------------------------------------------------------------

text_st = st.text(min_size=1, max_size=30).filter(lambda s: s.strip())
source_st = text_st.filter(lambda s: not any(c in s for c in "\n\r\0"))
line_st = st.integers(min_value=1, max_value=MAX_LINE)


@st.composite
def spans(draw):
    a, b = sorted((draw(line_st), draw(line_st)))
    return {"source": draw(source_st), "start_line": a, "end_line": b}


@st.composite
def structured(draw):
    value = {"summary": draw(text_st)}
    for name in ("files", "tests", "blockers"):
        if draw(st.booleans()):
            value[name] = draw(st.lists(text_st, max_size=4))
    if draw(st.booleans()):
        value["evidence"] = [
            {**draw(spans()), "claim": draw(text_st)} for _ in range(draw(st.integers(0, 3)))
        ]
    if draw(st.booleans()):
        value["coverage"] = [
            {**draw(spans()), "status": draw(st.sampled_from(["read", "partial", "failed"]))}
            for _ in range(draw(st.integers(0, 3)))
        ]
    return value


@settings(max_examples=200, deadline=None)
@given(structured())
def test_any_valid_report_round_trips_through_its_text(value):
    prepared = prepare_report({"structured": value}, required=True)
    assert prepared is not None
    assert decode_report(prepared.text) == prepared.report
    assert decode_report(prepared.text) == validate_structured(json.loads(prepared.text))


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=8),
    lambda inner: (
        st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=10), inner, max_size=4)
    ),
    max_leaves=20,
)


@settings(max_examples=300, deadline=None)
@given(
    st.dictionaries(st.sampled_from(["summary", "files", "evidence", "coverage", "x"]), json_values)
)
def test_arbitrary_shapes_are_either_valid_or_one_clear_error(value):
    try:
        report = validate_structured(value)
    except ReportError as err:
        assert err.one_line() and "\n" not in err.one_line()
    else:
        assert decode_report(encode_report(report, max_chars=10**9)) == report
