"""Task template rendering."""

from __future__ import annotations

from pathlib import Path

from specialists.catalog.model import Specialist
from specialists.catalog.render import placeholders, render_task


def spec(template: str, **variables: str) -> Specialist:
    return Specialist(name="t", task_template=template, variables=variables)


def test_builtin_placeholders() -> None:
    text = render_task(
        spec("Task: $prompt\nIn: ${cwd}\nCtx: $pre_script_output"),
        "fix it",
        Path("/w"),
        "ctx",
    )
    assert text == "Task: fix it\nIn: /w\nCtx: ctx"


def test_unknown_placeholders_and_dollars_stay() -> None:
    text = render_task(spec("$prompt costs $$5, see $missing and ${also} and $"), "p", Path("/"))
    assert text == "p costs $5, see $missing and ${also} and $"


def test_variables_precedence() -> None:
    template = spec("$a $b $prompt", a="default-a", b="default-b")
    text = render_task(template, "real", Path("/"), variables={"b": "caller-b", "prompt": "no"})
    assert text == "default-a caller-b real"


def test_values_are_not_expanded_again() -> None:
    assert render_task(spec("$prompt"), "$cwd and $HOME", Path("/x")) == "$cwd and $HOME"


def test_script_output_is_appended_when_not_referenced() -> None:
    assert render_task(spec("$prompt"), "p", Path("/"), "out\n") == "p\n\nout\n"
    assert render_task(spec("$prompt"), "p", Path("/"), "  ") == "p"
    # `$$pre_script_output` is a literal, not a reference, so output is still appended.
    assert render_task(spec("$$pre_script_output"), "p", Path("/"), "o").endswith("\n\no\n")


def test_placeholders() -> None:
    assert placeholders("$a ${b} $a $$c") == ["a", "b"]
