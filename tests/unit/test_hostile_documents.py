"""Hostile documents and inputs (issue 21 items 4 and 5): every YAML through one bounded
loader (aliases, merges, duplicate keys, size, depth), untrusted JSON bounded too, and depth
refused as input (exit 2, one line) wherever it arrives; a crash report stays bounded."""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Any

import pytest

from specialists.catalog.files import MAX_MERGED_PAIRS, parse_yaml
from specialists.cli.main import main, report_bug
from specialists.errors import UserError
from specialists.mcp.handlers import ServerContext
from specialists.mcp.table import call_tool as mcp_call
from specialists.native.providers.common import parse_arguments
from specialists.native.providers.replay import load_recording
from specialists.project import Project
from specialists.reader import Invalid, load_json
from specialists.workflows.results import schema_problem
from specialists.workflows.source import find_workflow, load_document, load_python
from tests.support.agent_env import AgentEnv


def bomb(levels: int = 9, width: int = 9) -> str:
    """Nine levels of nine aliases: 9^9 (387 million) values once expanded."""
    lines = ["a0: &a0 [x, x, x, x, x, x, x, x, x]"]
    lines += [f"a{i}: &a{i} [" + ", ".join([f"*a{i - 1}"] * width) + "]" for i in range(1, levels)]
    return "\n".join(lines) + "\n"


def merge_bomb(levels: int = 9) -> str:
    """Merges of merges: multiplied on PyYAML before 6.0.2 (which dedups merged keys)."""
    lines = ["m0: &m0 {" + ", ".join(f"k{j}: {j}" for j in range(9)) + "}"]
    for i in range(1, levels):
        subs = ", ".join(f"*m{i - 1}" for _ in range(9))
        lines.append(f"m{i}: &m{i} {{<<: [{subs}], own{i}: 1}}")
    return "\n".join(lines) + "\n"


def wide_merge(mappings: int = 9, keys: int = 2500) -> str:
    """One merge of 22,500 distinct keys: over the merge budget on any PyYAML."""
    lines = [
        f"m{i}: &m{i} {{" + ", ".join(f"k{i}_{j}: 0" for j in range(keys)) + "}"
        for i in range(mappings)
    ]
    lines.append("all: {<<: [" + ", ".join(f"*m{i}" for i in range(mappings)) + "]}")
    return "\n".join(lines) + "\n"


def nested(depth: int, open_: str = "[", close: str = "]") -> str:
    return open_ * depth + close * depth


def workflow_files(project: Path, **files: str) -> Path:
    folder = project / ".specialists" / "workflows"
    folder.mkdir(parents=True, exist_ok=True)
    for name, text in files.items():
        (folder / name).write_text(text)
    return folder


def one_error_line(capsys: pytest.CaptureFixture[str]) -> str:
    err = capsys.readouterr().err
    assert err.startswith("error: ") and err.count("\n") == 1, err
    assert "bug:" not in err and "Traceback" not in err
    return err


# --- item 4: the one bounded YAML loader -------------------------------------------------


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        (bomb(), "too large: more than 20,000 values"),
        (wide_merge(), f"merges (<<) copy more than {MAX_MERGED_PAIRS:,} keys"),
        ("&a [*a]\n", "nested too deeply"),  # a cycle
        ("a: 1\nb: 2\na: 3\n", "the key 'a' is given twice"),
        ("x: {k: 1, k: 2}\n", "the key 'k' is given twice"),
        (nested(50), "nested too deeply (more than 40 levels)"),
        (nested(100_000), "invalid YAML"),
        ("x: " + "y" * (1024 * 1024), "over 1,048,576 characters"),
        ("!!python/object/apply:os.system [touch /tmp/pwned]\n", "invalid YAML"),
    ],
)
def test_the_yaml_loader_refuses_in_one_line(text: str, problem: str) -> None:
    with pytest.raises(Invalid) as err:
        parse_yaml(text)
    assert problem in err.value.problem and "\n" not in err.value.problem


def test_merges_and_anchors_that_hold_still_load() -> None:
    text = "base: &b {a: 1, b: 2}\nchild: {<<: *b, b: 3}\nlist: [*b, *b]\n"
    assert parse_yaml(text)["child"] == {"a": 1, "b": 3}
    assert len(parse_yaml(merge_bomb())["m8"]) == 9 + 8  # merged keys, not 9^8 copies


def test_a_workflow_with_an_alias_bomb_in_a_childs_schema_is_refused_at_once(
    isolated_env: AgentEnv, capsys: pytest.CaptureFixture[str]
) -> None:
    """The issue's case: `workflow run` answered, exit 2, no child, no job."""
    body = "".join(f"          {line}\n" for line in bomb().splitlines())
    doc = (
        "steps:\n  - run:\n      key: k\n      agent: echo\n      task: t\n      schema:\n"
        "        type: object\n        definitions:\n" + body
    )
    workflow_files(isolated_env.project, **{"bomb.yaml": doc})
    assert main(["workflow", "run", "bomb", "--detach"]) == 2
    assert "more than 100,000 values" in one_error_line(capsys)
    ctx = ServerContext(project=Project(isolated_env.project))
    out = mcp_call(ctx, "workflow", {"action": "run", "name": "bomb"})  # the MCP call answers
    assert out.is_error and "more than 100,000 values" in out.text
    assert not (isolated_env.project / ".specialists" / "jobs").exists()


def test_a_definition_and_a_replay_recording_use_the_same_loader(tmp_path: Path) -> None:
    recording = tmp_path / "r.yaml"
    recording.write_text("turns:\n  - {text: a}\n  - {text: b, text: c}\n")
    with pytest.raises(UserError, match="given twice"):
        load_recording(recording)
    fifo = tmp_path / "fifo.jsonl"
    os.mkfifo(fifo)
    with pytest.raises(UserError, match="FIFO"):
        load_recording(fifo)  # a FIFO would hang the job: refused


# --- JSON: bounded where it is untrusted -------------------------------------------------


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        (nested(45), "nested too deeply"),
        (nested(100_000), "nested too deeply"),
        ('{"a": 1, "a": 2}', "given twice"),
        ("1" * 5000, "too many digits"),
        ("{", "invalid JSON at line 1"),
    ],
)
def test_load_json_refuses_in_one_line(text: str, problem: str) -> None:
    with pytest.raises(Invalid, match=problem):
        load_json(text, "JSON", unique_keys=True)


def test_an_agents_deep_json_is_refused_not_a_recursion() -> None:
    deep = '{"a":' * 5000 + "1" + "}" * 5000
    call = parse_arguments("c1", "bash", deep)
    assert call.arguments_error and "nested too deeply" in call.arguments_error
    data, why = schema_problem({"type": "object"}, deep)
    assert data is None and why and "nested too deeply" in why


# --- item 5: depth refused as input, exit 2 and one line ----------------------------------


DEEP_SCHEMA = "steps:\n  - run: {key: k, agent: echo, task: t, schema: " + nested(60, "{a: ", "}")
DEEP_JSON = '{"steps": [{"run": {"key": "k", "agent": "echo", "task": "t", "schema": ' + (
    '{"a": ' * 3000 + "1" + "}" * 3000
)


@pytest.mark.parametrize(
    ("name", "text", "problem"),
    [
        ("deep.yaml", DEEP_SCHEMA.replace("{a: }", "{a: 1}") + "}\n", "nested too deeply"),
        ("deep.yaml", "steps: " + nested(5000) + "\n", "invalid YAML"),
        ("deep.json", DEEP_JSON + "}}]}", "nested too deeply"),
        ("dup.json", '{"steps": [], "steps": [{"phase": "p"}]}', "'steps' is given twice"),
        ("dup.yaml", "steps: []\nsteps:\n  - phase: p\n", "'steps' is given twice"),
    ],
)
def test_a_deep_or_ambiguous_workflow_file_exits_2_in_one_line(
    isolated_env: AgentEnv,
    capsys: pytest.CaptureFixture[str],
    name: str,
    text: str,
    problem: str,
) -> None:
    workflow_files(isolated_env.project, **{name: text})
    assert main(["workflow", "run", name.split(".")[0]]) == 2
    assert problem in one_error_line(capsys)


def test_deep_workflow_args_and_mission_state_exit_2(
    isolated_env: AgentEnv, capsys: pytest.CaptureFixture[str]
) -> None:
    workflow_files(
        isolated_env.project, **{"ok.yaml": "steps:\n  - run: {key: k, agent: echo, task: t}\n"}
    )
    assert main(["workflow", "run", "ok", "--args-json", '{"a": ' + nested(5000) + "}"]) == 2
    one_error_line(capsys)
    assert main(["workflow", "run", "ok", "--args-json", '{"a": ' + nested(60) + "}"]) == 2
    assert "nested too deeply" in one_error_line(capsys)
    assert main(["mission", "new", "M", "--objective", "o"]) == 0
    mission = capsys.readouterr().out.split()[0]
    for value in (nested(5000), nested(60)):
        assert main(["mission", "state", "set", mission, "k", value]) == 2
        assert "nested too deeply" in one_error_line(capsys)


def test_the_mcp_tools_refuse_deep_values(isolated_env: AgentEnv) -> None:
    ctx = ServerContext(project=Project(isolated_env.project))
    deep: Any = 1
    for _ in range(60):
        deep = {"a": deep}
    out = mcp_call(ctx, "workflow", {"action": "run", "document": {"steps": [deep]}})
    assert out.is_error and "nested too deeply" in out.text
    doc = {"steps": [{"run": {"key": "k", "agent": "echo", "task": "t"}}]}
    out = mcp_call(ctx, "workflow", {"action": "run", "document": doc, "args": {"x": deep}})
    assert out.is_error and "nested too deeply" in out.text
    made = mcp_call(ctx, "mission", {"action": "new", "title": "M", "objective": "o"})
    assert not made.is_error, made.text
    mission = made.data["id"] if "id" in made.data else made.data["mission"]["id"]
    out = mcp_call(ctx, "mission", {"action": "state_set", "mission_id": mission, "key": "k",
                                    "value": deep})  # fmt: skip
    assert out.is_error and "nested too deeply" in out.text


RECURSES = "import sys\nsys.setrecursionlimit({limit})\n\ndef f(n=0):\n    return f(n + 1)\n\nf()\n"


def test_a_workflow_that_recurses_on_import_is_its_error_and_leaves_the_limit(
    isolated_env: AgentEnv, capsys: pytest.CaptureFixture[str]
) -> None:
    folder = workflow_files(isolated_env.project, **{"rec.py": RECURSES.format(limit=100_000)})
    before = sys.getrecursionlimit()
    with pytest.raises(UserError, match=r"raised RecursionError: maximum recursion .* \(line 5\)"):
        load_python(folder / "rec.py")
    assert sys.getrecursionlimit() == before
    assert main(["workflow", "run", "rec"]) == 2
    one_error_line(capsys)


def test_a_crash_report_of_a_huge_traceback_is_bounded(
    isolated_env: AgentEnv, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """A bug's report formats at most 1,000 frames however deep the stack was."""
    monkeypatch.setattr(sys, "tracebacklimit", 1000, raising=False)
    limit = sys.getrecursionlimit()
    sys.setrecursionlimit(60_000)

    def down(n: int) -> int:
        return down(n + 1) if n < 50_000 else 1 // 0

    try:
        down(0)
    except ZeroDivisionError as exc:
        caught: BaseException = exc
    finally:
        sys.setrecursionlimit(limit)
    assert report_bug(caught, ["x"]) == 70
    err = capsys.readouterr().err
    log = Path(err.split("traceback in ")[1].split(";")[0])
    assert log.stat().st_size < 2_000_000


def test_a_document_named_or_given_is_read_with_the_bounded_loader(tmp_path: Path) -> None:
    (tmp_path / ".specialists" / "workflows").mkdir(parents=True)
    path = tmp_path / ".specialists" / "workflows" / "b.yaml"
    path.write_text(bomb())
    with pytest.raises(UserError, match="more than 100,000 values"):
        load_document(find_workflow(tmp_path, "b"))


def test_an_agents_deeply_nested_output_line_is_malformed_not_a_crash() -> None:
    """pi, Claude Code and Codex print JSON lines that can carry a model's tool arguments:
    one nested past the parser's stack is a skipped line, never a RecursionError that would
    end the supervisor."""
    from specialists.runners.codex_events import error_message
    from specialists.runners.oneshot import parse_line
    from specialists.runners.pi_events import PiTranslator

    deep = ('{"type": "tool_execution_start", "args": ' + '{"a": ' * 100_000 + "1"
            + "}" * 100_000 + "}").encode()  # fmt: skip
    events = PiTranslator().feed(deep)
    assert all(type(e).__name__ == "Activity" for e in events)
    obj, notice = parse_line(deep)
    assert obj is None and notice is not None and "unparsed output line" in notice.fields["message"]
    assert error_message({"message": deep.decode()}) == deep.decode()
