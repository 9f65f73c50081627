"""Planted files among the definitions, in every scope: one clear line each, never a hang,
a traceback, a MemoryError or a `bug:`; every other definition still loads.

The cases are what another tool, a careless script or a hostile user can leave in a
directory we read: a FIFO (opening it blocks forever), a socket, a symlink to /dev/zero
(reading never ends), a directory named like a definition, a symlink loop, binary data, a
file of megabytes, numbers of thousands of digits, 100,000 nested brackets, YAML alias
bombs, and values (NUL, control characters) that would crash an agent's spawn later.
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from specialists.catalog import load_catalog
from specialists.catalog.model import LoadProblem
from specialists.errors import ConfigError

OK = "metadata: {name: ok}\n"

LAUGHS = "a: &a [lol, lol, lol, lol, lol, lol, lol, lol, lol]\n" + "".join(
    f"{n}: &{n} [{', '.join([f'*{p}'] * 9)}]\n" for p, n in zip("abcdefgh", "bcdefghi", strict=True)
)


def fifo(path: Path) -> None:
    os.mkfifo(path)


def unix_socket(path: Path) -> None:
    with socket.socket(socket.AF_UNIX) as sock:
        sock.bind(str(path))  # the socket file stays after close


def dev_zero(path: Path) -> None:
    path.symlink_to("/dev/zero")


def directory(path: Path) -> None:
    (path / "inner").mkdir(parents=True)


def symlink_loop(path: Path) -> None:
    path.symlink_to(path.name)


def write(data: bytes) -> Callable[[Path], None]:
    def make(path: Path) -> None:
        path.write_bytes(data)

    return make


def sparse_file(path: Path) -> None:
    with path.open("wb") as fh:
        fh.write(OK.encode())
        fh.truncate(3 * 1024 * 1024)


def content(yaml_text: str) -> Callable[[Path], None]:
    """The same document as a YAML definition or as a Markdown agent's frontmatter."""

    def make(path: Path) -> None:
        text = f"---\n{yaml_text}\n---\nbody\n" if path.suffix == ".md" else yaml_text
        path.write_text(text, encoding="utf-8")

    return make


# (maker, what the one problem line says; "a|b": either, by format)
CASES: dict[str, tuple[Callable[[Path], None], str]] = {
    "fifo": (fifo, "is a FIFO (named pipe), not a regular file"),
    "socket": (unix_socket, "is a socket, not a regular file"),
    "dev-zero": (dev_zero, "is a character device, not a regular file"),
    "directory": (directory, "is a directory, not a regular file"),
    "symlink-loop": (symlink_loop, "symlink loop"),
    "not-utf8": (write(b"metadata: {name: \xff\xfe}\n"), "not UTF-8 text (bad byte at offset"),
    "nul-bytes": (write(OK.encode() + b"\x00\x00\x00"), "contains a NUL byte (line 2)"),
    "huge": (sparse_file, "is too large (3,145,728 bytes; at most 1,024 KiB is read)"),
    "huge-number": (
        content("name: x\nmaxTurns: " + "9" * 5000 + "\nmetadata: {name: x}"),
        # Markdown frontmatter that is not YAML is read as plain lines: the digits are text
        "a number with too many digits|maxTurns: expected a positive whole number",
    ),
    "deep": (content("[" * 100_000 + "]" * 100_000), "nesting depth|nested too deeply"),
    "alias-bomb": (content(LAUGHS), "is too large: more than 20,000 values"),
}

# (scope, directory under the isolated HOME or project, file suffix)
SCOPES = {
    "project-yaml": ("project", "{project}/specialists", ".specialist.yaml"),
    "project-agent": ("project", "{project}/.claude/agents", ".md"),
    "user-yaml": ("user", "{xdg}/specialists/specialists", ".specialist.yaml"),
    "user-agent": ("user", "{pi}/agents", ".md"),
}


def scope_dir(template: str) -> Path:
    path = Path(
        template.format(
            project=os.environ["SPECIALISTS_PROJECT_ROOT"],
            xdg=os.environ["XDG_CONFIG_HOME"],
            pi=os.environ["PI_CODING_AGENT_DIR"],
        )
    )
    path.mkdir(parents=True, exist_ok=True)
    return path


def project() -> Path:
    return Path(os.environ["SPECIALISTS_PROJECT_ROOT"])


def says(message: str, line: str) -> bool:
    return any(m in line for m in message.split("|"))


def only_problem(problems: list[LoadProblem], path: Path) -> LoadProblem:
    mine = [p for p in problems if p.path == path]
    assert len(mine) == 1, [p.one_line() for p in problems]
    line = mine[0].one_line()
    assert "\n" not in line and not mine[0].problem.startswith("bug:"), line
    return mine[0]


@pytest.mark.parametrize("scope", SCOPES, ids=str)
@pytest.mark.parametrize("case", CASES, ids=str)
def test_a_planted_file_is_one_problem_and_the_rest_loads(scope: str, case: str) -> None:
    scope_name, template, suffix = SCOPES[scope]
    folder = scope_dir(template)
    maker, message = CASES[case]
    bad = folder / f"planted{suffix}"
    maker(bad)
    (folder / f"ok{suffix}").write_text(content_of_ok(suffix))
    cat = load_catalog(project())
    assert says(message, only_problem(cat.problems, bad).one_line())
    assert cat.get("ok").scope == scope_name
    assert "reviewer" in cat and "planner" in cat  # builtins unaffected
    assert len(cat.problems) == 1


def content_of_ok(suffix: str) -> str:
    return "---\nname: ok\n---\nYou are ok.\n" if suffix == ".md" else OK


@pytest.mark.parametrize("case", CASES, ids=str)
def test_a_broken_override_of_a_builtin_is_not_replaced_by_the_builtin(case: str) -> None:
    """A project file meant to override `reviewer` that fails to load stops `get`: running
    the builtin instead would silently ignore what the override restricted."""
    maker, message = CASES[case]
    bad = scope_dir(SCOPES["project-yaml"][1]) / "reviewer.specialist.yaml"
    maker(bad)
    cat = load_catalog(project())
    assert says(message, only_problem(cat.problems, bad).one_line())
    with pytest.raises(ConfigError) as info:
        cat.get("reviewer")
    assert "project definition of 'reviewer' failed to load" in info.value.one_line()
    assert says(message, info.value.one_line())
    assert cat.get("planner").scope == "builtin"


@pytest.mark.parametrize(
    ("yaml_text", "message"),
    [
        ('execution: {model: "a\\0b"}', "execution.model: contains a NUL character"),
        ('execution: {model: "a\\nb"}', "execution.model: contains a control character (U+000A"),
        ("execution: {model: " + "m" * 300 + "}", "execution.model: is too long (300 > 256"),
        ("execution: {model: two words}", "execution.model: expected one word"),
        ('execution: {fallback_model: "x\\e[31m"}', "fallback_model: contains a control"),
        (
            'execution: {runner: {type: command, command: "ec\\0ho"}}',
            "execution.runner.command: contains a NUL character",
        ),
        (
            'execution: {runner: {type: command, command: "echo\\nrm"}}',
            "execution.runner.command: contains a control character",
        ),
        (
            'execution: {runner: {type: pi, args: ["--x", "a\\0"]}}',
            "execution.runner.args[1]: contains a NUL character",
        ),
        (
            'execution: {runner: {type: pi, args: ["\\e]0;pwned\\a"]}}',
            "execution.runner.args[0]: contains a control character (U+001B",
        ),
        ("execution: {runner: {type: pi, grace: .inf}}", "execution.runner.grace: expected a"),
        ('prompt: {system: "You\\0are"}', "prompt.system: contains a NUL character"),
        ('prompt: {task_template: "$prompt\\0"}', "prompt.task_template: contains a NUL"),
        ('prompt: {variables: {team: "a\\0"}}', "prompt.variables.team: contains a NUL"),
        ('skills: {paths: ["./a\\0b"]}', "skills.paths[0]: contains a NUL character"),
        ("skills: {paths: [" + "a" * 5000 + "]}", "skills.paths[0]: is too long (5,000 > 4,096"),
        ('skills: {scripts: [{run: "ls\\0"}]}', "skills.scripts[0].run: contains a NUL"),
        ('metadata: {name: "x\\n"}', "metadata.name: expected letters, digits"),
        ("execution: {timeout_ms: 99999999999999999999}", "execution.timeout_ms: expected at most"),
        ("execution: {max_turns: 1.0e+400}", "execution.max_turns: expected a positive whole"),
        ("execution: {max_tokens: 9999999999999}", "execution.max_tokens: expected at most"),
    ],
)
def test_values_that_would_break_a_spawn_are_refused_with_the_field(
    yaml_text: str, message: str
) -> None:
    folder = scope_dir(SCOPES["project-yaml"][1])
    path = folder / "x.specialist.yaml"
    text = yaml_text if yaml_text.startswith("metadata") else f"metadata: {{name: x}}\n{yaml_text}"
    path.write_text(text + "\n")
    cat = load_catalog(project())
    assert message in only_problem(cat.problems, path).one_line()


def test_json_escapes_cannot_smuggle_nul_or_lone_surrogates() -> None:
    folder = scope_dir(SCOPES["project-yaml"][1])
    nul = folder / "nul.specialist.json"
    nul.write_text('{"metadata": {"name": "nul"}, "execution": {"model": "a\\u0000"}}')
    surrogate = folder / "sur.specialist.json"
    surrogate.write_text('{"metadata": {"name": "sur", "description": "\\ud800"}}')
    big = folder / "big.specialist.json"
    big.write_text('{"metadata": {"name": "big"}, "execution": {"max_turns": ' + "9" * 5000 + "}}")
    deep = folder / "deep.specialist.json"
    deep.write_text("[" * 100_000 + "]" * 100_000)
    cat = load_catalog(project())
    assert "contains a NUL character" in only_problem(cat.problems, nul).problem
    assert "lone surrogate" in only_problem(cat.problems, surrogate).problem
    assert "too many digits" in only_problem(cat.problems, big).problem
    assert "nested too deeply" in only_problem(cat.problems, deep).problem


def test_a_file_name_with_control_characters_is_refused_and_quoted() -> None:
    """Its path would reach every terminal that prints a specialist's source."""
    folder = scope_dir(SCOPES["project-yaml"][1])
    evil = folder / "e\x1b[2Jvil.specialist.yaml"
    evil.write_text("metadata: {name: evil}\n")
    cat = load_catalog(project())
    line = only_problem(cat.problems, evil).one_line()
    assert "\x1b" not in line and "\\x1b[2J" in line and "rename the file" in line
    assert "evil" not in cat


def test_a_symlinked_directory_loop_is_not_walked() -> None:
    """`up -> ..` and `self -> .` would make a walk that follows links endless."""
    folder = scope_dir(SCOPES["project-agent"][1])
    (folder / "up").symlink_to("..")
    (folder / "self").symlink_to(".")
    (folder / "ok.md").write_text(content_of_ok(".md"))
    cat = load_catalog(project())
    assert cat.get("ok").scope == "project" and cat.problems == []


def test_an_unreadable_subdirectory_is_reported() -> None:
    if os.geteuid() == 0:
        pytest.skip("root reads every directory; permission bits cannot make one unreadable")
    folder = scope_dir(SCOPES["project-yaml"][1])
    locked = folder / "locked"
    locked.mkdir()
    locked.chmod(0)
    try:
        cat = load_catalog(project())
    finally:
        locked.chmod(0o700)
    assert any("cannot list" in p.problem for p in cat.problems)


def test_missing_skill_paths_are_data_on_the_specialist_not_output(
    capsys: pytest.CaptureFixture[str],
) -> None:
    folder = scope_dir(SCOPES["project-yaml"][1])
    (project() / "skills" / "here").mkdir(parents=True)
    (folder / "s.specialist.yaml").write_text(
        "metadata: {name: s}\nskills: {paths: [./skills/here, ./skills/gone, ~/nope]}\n"
    )
    spec = load_catalog(project()).get("s")
    assert [(m.field, m.written, m.reason) for m in spec.missing_skills] == [
        ("skills.paths[1]", "./skills/gone", "not found"),
        ("skills.paths[2]", "~/nope", "not found"),
    ]
    assert spec.missing_skills[1].path == Path.home() / "nope"
    assert [m.one_line() for m in spec.missing_skills] == list(spec.warnings)
    assert capsys.readouterr() == ("", "")


# --- through the commands, in real processes: a hang fails the test by its timeout ----------


def cli(*argv: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "specialists", *argv],
        capture_output=True,
        text=True,
        timeout=60,
        stdin=subprocess.DEVNULL,
        cwd=project(),
    )


def plant_everything() -> Path:
    folder = scope_dir(SCOPES["project-yaml"][1])
    fifo(folder / "fifo.specialist.yaml")
    dev_zero(folder / "zero.specialist.yaml")
    directory(folder / "dir.specialist.yaml")
    fifo(scope_dir(SCOPES["user-agent"][1]) / "fifo.md")
    (folder / "echo.specialist.yaml").write_text(
        "metadata: {name: echo}\nexecution: {runner: {type: command, command: cat}}\n"
    )
    return folder


CONFIG_CASES: dict[str, tuple[Callable[[Path], None], str]] = {
    "fifo": (fifo, "is a FIFO (named pipe), not a regular file"),
    "dev-zero": (dev_zero, "is a character device, not a regular file"),
    "directory": (directory, "is a directory, not a regular file"),
    "not-utf8": (write(b'default_model = "\xff"\n'), "not UTF-8 text (bad byte at offset 17)"),
    "nul": (write(b'default_model = "x"\n\x00'), "contains a NUL byte (line 2)"),
    "huge": (sparse_file, "is too large"),
    "huge-number": (write(b"x = " + b"9" * 5000), "a number with too many digits"),
    "deep": (write(b"x = " + b"[" * 50_000 + b"]" * 50_000), "nested too deeply"),
    "nul-value": (write(b'default_model = "a\\u0000"\n'), "default_model: contains a NUL"),
}


@pytest.mark.parametrize("case", CONFIG_CASES, ids=str)
def test_a_planted_config_toml_is_one_error_line(
    case: str, capsys: pytest.CaptureFixture[str]
) -> None:
    from specialists.cli.main import main
    from specialists.config import load_config

    maker, message = CONFIG_CASES[case]
    config = project() / ".specialists" / "config.toml"
    config.parent.mkdir(exist_ok=True)
    maker(config)
    plant_everything()
    with pytest.raises(ConfigError) as info:
        load_config(project())
    assert info.value.message.startswith(f"{config}: ") and message in info.value.message
    assert main(["run", "echo", "--prompt", "hello"]) == 2
    err = capsys.readouterr().err
    assert err.strip().splitlines()[-1].startswith(f"error: {config}: "), err
    assert message in err and "Traceback" not in err


def test_mcp_tools_do_not_hang_on_planted_files() -> None:
    from specialists.mcp.handlers import ServerContext
    from specialists.mcp.table import call_tool

    plant_everything()
    ctx = ServerContext()
    listing = call_tool(ctx, "list_specialists", {})
    assert not listing.is_error, listing.text
    assert "echo" in listing.text
    (project() / ".specialists").mkdir(exist_ok=True)
    fifo(project() / ".specialists" / "config.toml")
    outcome = call_tool(ctx, "run", {"specialist": "echo", "prompt": "x"})
    assert outcome.is_error and "is a FIFO (named pipe)" in outcome.text
    assert "bug:" not in outcome.text and "\n" not in outcome.text


def test_a_definition_rewritten_while_it_is_read_never_breaks_a_load() -> None:
    """A writer keeps truncating, rewriting and swapping the file (for a FIFO, for a
    directory, for nothing) while the catalog is loaded again and again: every load
    returns, `ok` always loads, and the changing file is a specialist or one problem."""
    import threading

    folder = scope_dir(SCOPES["project-yaml"][1])
    (folder / "ok.specialist.yaml").write_text(OK)
    target = folder / "moving.specialist.yaml"
    target.write_text("metadata: {name: moving}\n")
    body = ("metadata: {name: moving, description: '" + "d" * 5000 + "'}\n").encode()
    stop = threading.Event()
    errors: list[BaseException] = []

    def writer() -> None:
        spare = folder / ".spare"
        try:
            while not stop.is_set():
                with target.open("wb") as fh:  # truncate, then write in pieces
                    for i in range(0, len(body), 512):
                        fh.write(body[i : i + 512])
                        fh.flush()
                os.mkfifo(spare)
                os.replace(spare, target)  # a FIFO where the file was
                target.unlink()
                spare.mkdir()
                spare.rename(target)  # a directory where the file was
                target.rmdir()
        except BaseException as exc:  # reported by the test below
            errors.append(exc)

    thread = threading.Thread(target=writer, daemon=True)
    thread.start()
    seen: set[str] = set()
    try:
        for _ in range(150):
            cat = load_catalog(project())
            assert cat.get("ok").scope == "project"
            mine = [p for p in cat.problems if p.path == target]
            assert len(mine) <= 1, [p.one_line() for p in mine]
            for problem in mine:
                assert not problem.problem.startswith("bug:"), problem.one_line()
                seen.add(problem.problem.split(" (")[0][:40])
            if "moving" in cat:
                seen.add("loaded")
    finally:
        stop.set()
        thread.join(timeout=30)
    assert not errors, errors
    assert len(seen) > 1, seen  # the race was met: more than one outcome was seen
    # Whether a load fell between the writer's steps is up to the scheduler (under load it
    # may never); once the writer is done, the same file loads.
    if target.is_dir():
        target.rmdir()
    else:
        target.unlink(missing_ok=True)
    target.write_bytes(body)
    assert "moving" in load_catalog(project())
