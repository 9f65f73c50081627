"""Where a workflow comes from, and who may run which kind.

A Python workflow is code run on the host with the user's rights, so it is taken only from a
file inside the project: `.specialists/workflows/<name>.py` (yours), `specialists/workflows/
<name>.py` (the team's, committed beside the definitions), a path inside the project, or a
recipe shipped in this package (`specialists.features.workflows.recipes`). A name is looked up in
that order, so a local file overrides the team's and both override a recipe. A declarative workflow
(YAML or JSON: sequence, all, pipeline) needs no interpreter; it may come from the same
places, any path, or inline, and it is the only kind the MCP `workflow` tool accepts, because
a model must never get more power through a workflow than it was granted (docs/workflows.md).
"""

from __future__ import annotations

import importlib.util
import inspect
import os
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from specialists.base.errors import UserError, exception_text
from specialists.store.fields import Declared
from specialists.store.paths import TEAM_DIR

WORKFLOWS_DIR = "workflows"  # under .specialists/ (local) and specialists/ (the team's)
MAX_SOURCE_BYTES = 1024 * 1024
WORKFLOW_MAX_NODES = 100_000  # declarative.MAX_DOCUMENT_NODES, which checks it again
SUFFIXES = (".py", ".yaml", ".yml", ".json")
RECIPES = Path(__file__).resolve().parent / "recipes"


class Source(Declared):
    _what = "job.json: runner_options.source"
    _choices = {"kind": frozenset({"python", "declarative"})}
    kind: str  # python or declarative
    name: str = ""
    path: str | None = None  # None: an inline declarative document
    document: dict[str, Any] | None = None


def find_workflow(
    project_root: Path, ref: str, *, cwd: Path | None = None, any_path: bool = True
) -> Source:
    """A name (.specialists/workflows/<name>.*, then the recipes) or a path: one inside the
    project (or a recipe) for a Python file; any path for a declarative one, unless
    `any_path` is False (a model over MCP names files of the project only)."""
    if not isinstance(ref, str) or not ref.strip() or "\x00" in ref:
        raise UserError("the workflow name is empty")
    looks_like_path = "/" in ref or ref.endswith(SUFFIXES)
    if looks_like_path:
        path = ((cwd or Path.cwd()) / ref).resolve()
        if path.suffix == ".py" or not any_path:
            _inside(project_root, path, ref)
        elif not path.is_file():
            raise UserError(f"workflow file {ref!r} does not exist")
        return _source(path, path.stem)
    for base in workflow_dirs(project_root)[::-1]:
        for suffix in SUFFIXES:
            candidate = base / f"{ref}{suffix}"
            if candidate.is_file():
                return _source(candidate.resolve(), ref)
    raise UserError(
        f"unknown workflow {ref!r}",
        hint="put it in specialists/workflows/<name>.py (or .yaml) to share it, or in "
        ".specialists/workflows/ for yourself; or give a path inside the project; see "
        "`specialists workflow list`",
    )


def list_workflows(project_root: Path) -> list[tuple[str, str]]:
    """(name, path) of every workflow file in the project and every shipped recipe."""
    found: dict[str, str] = {}
    for base in workflow_dirs(project_root):  # a later directory's file wins a name
        if not base.is_dir():
            continue
        for entry in sorted(base.iterdir()):
            if entry.suffix in SUFFIXES and entry.is_file() and not entry.name.startswith("_"):
                found[entry.stem] = str(entry)
    return sorted(found.items())


def workflow_dirs(project_root: Path) -> tuple[Path, Path, Path]:
    """Where named workflows live, lowest precedence first: the recipes, the team's
    (committed), the local ones."""
    return (
        RECIPES,
        project_root / TEAM_DIR / WORKFLOWS_DIR,
        project_root / ".specialists" / WORKFLOWS_DIR,
    )


def _inside(project_root: Path, path: Path, ref: str) -> None:
    root = os.path.realpath(project_root)
    real = os.path.realpath(path)
    if not any(os.path.commonpath([base, real]) == base for base in (root, str(RECIPES))):
        raise UserError(
            f"workflow {ref!r} is outside the project ({root})",
            hint="Python workflows run only from files inside the project; a declarative "
            "(YAML or JSON) one may come from anywhere",
        )
    if not os.path.isfile(real):
        raise UserError(f"workflow file {ref!r} does not exist")


def _source(path: Path, name: str) -> Source:
    if path.suffix == ".py":
        return Source("python", name, str(path))
    return Source("declarative", name, str(path))


def read_text(path: Path) -> str:
    """A workflow file as text: a regular file (never a FIFO or a device) of at most 1 MiB."""
    from specialists.base.reader import Invalid
    from specialists.base.reader.textfile import read_file_bytes

    try:
        data = read_file_bytes(path, limit=MAX_SOURCE_BYTES)
    except FileNotFoundError:
        raise UserError(f"workflow {path} does not exist") from None
    except Invalid as exc:
        raise UserError(f"workflow {path} {exc.problem}") from None
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        raise UserError(f"workflow {path} is not UTF-8 text") from None


def load_python(path: Path) -> Callable[..., Any]:
    """The file's `async def main(runs, args)`."""
    read_text(path)  # the same refusals as any workflow file (FIFO, size, encoding)
    spec = importlib.util.spec_from_file_location(f"specialists_workflow_{path.stem}", path)
    if spec is None or spec.loader is None:
        raise UserError(f"workflow {path} cannot be loaded as Python")
    module = importlib.util.module_from_spec(spec)
    limit = sys.getrecursionlimit()
    try:
        spec.loader.exec_module(module)
    except SyntaxError as exc:
        raise UserError(f"workflow {path}: syntax error at line {exc.lineno}: {exc.msg}") from None
    except (Exception, SystemExit) as exc:  # noqa: BLE001 - the workflow code failed, not us
        raise UserError(
            f"workflow {path} raised {exception_text(exc, 300)} on import{_line_in(exc, path)}",
            hint="fix the workflow file; a workflow's module should only define main",
        ) from None
    finally:
        sys.setrecursionlimit(limit)  # a module that raised it must not leave it raised
    main = getattr(module, "main", None)
    if not inspect.iscoroutinefunction(main):
        raise UserError(
            f"workflow {path} has no `async def main(runs, args)`",
            hint="a Python workflow's entry is async def main(runs, args)",
        )
    return main


def _line_in(exc: BaseException, path: Path) -> str:
    """Where in the file it failed: the traceback walked by its links, nothing formatted
    (a recursion a million calls deep is a moment this way)."""
    line = None
    tb = exc.__traceback__
    while tb is not None:
        if tb.tb_frame.f_code.co_filename == str(path):
            line = tb.tb_lineno
        tb = tb.tb_next
    return f" (line {line})" if line else ""


def load_document(source: Source) -> dict[str, Any]:
    if source.document is not None:
        return source.document
    if source.path is None:
        raise UserError("a declarative workflow needs a file or a document")
    path = Path(source.path)
    text = read_text(path)
    from specialists.base.reader import Invalid
    from specialists.catalog.files import parse_json, parse_yaml

    try:  # bounded: an alias bomb, deep nesting or a key given twice is one line
        if path.suffix == ".json":
            data = parse_json(text)
        else:
            data = parse_yaml(text, max_nodes=WORKFLOW_MAX_NODES)
    except Invalid as exc:
        raise UserError(f"workflow {path}: {exc.problem}") from None
    if not isinstance(data, dict):
        raise UserError(f"workflow {path}: the document must be a mapping with steps")
    return data
