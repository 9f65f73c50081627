"""Where definitions live (project, user, builtin scopes) and how one catalog is built.

Precedence is project > user > builtin, by specialist name. Two files in the same scope
that define one name are a problem for the second file, never a silent pick. Whatever sits
in a definition directory (a FIFO, a socket, a device, a directory named like a definition,
a symlink loop, a file that vanishes or changes while it is read) becomes one `LoadProblem`
and every other file still loads. See docs/specialists.md for the directory list.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, Literal

from specialists.base.errors import ConfigError, NotFound, UserError
from specialists.base.reader import Invalid
from specialists.base.tuples import NamedTuple
from specialists.base.vocab import SPEC_SUFFIXES
from specialists.catalog.files import (
    ParsedCache,
    definition_stem,
    parse_definition,
    read_definition,
)
from specialists.catalog.model import LoadProblem, Scope, Specialist
from specialists.catalog.schema import specialist_from_data
from specialists.store.paths import state_dir

Kind = Literal["specialist", "agent"]  # *.specialist.{yaml,yml,json} | *.md agent files
SCOPE_ORDER: tuple[Scope, ...] = ("project", "user", "builtin")
MAX_DEPTH = 4  # subdirectories are allowed for grouping, not for whole trees
BUILTIN_DIR = Path(__file__).parent / "builtin"


class SourceDir(NamedTuple):
    scope: Scope
    path: Path
    kind: Kind


def project_dirs(project_root: Path) -> list[SourceDir]:
    # Not .specialists/: that directory holds job state and is gitignored.
    return [
        SourceDir("project", project_root / "specialists", "specialist"),
        SourceDir("project", project_root / ".agents" / "specialists", "specialist"),
        SourceDir("project", project_root / ".claude" / "agents", "agent"),
        SourceDir("project", project_root / ".pi" / "agents", "agent"),
    ]


def user_dirs() -> list[SourceDir]:
    home = Path.home()
    config = Path(os.environ.get("XDG_CONFIG_HOME") or home / ".config")
    claude = Path(os.environ.get("CLAUDE_CONFIG_DIR") or home / ".claude")
    pi = Path(os.environ.get("PI_CODING_AGENT_DIR") or home / ".pi" / "agent")
    return [
        SourceDir("user", config / "specialists" / "specialists", "specialist"),
        SourceDir("user", home / ".agents" / "specialists", "specialist"),
        SourceDir("user", claude / "agents", "agent"),
        SourceDir("user", pi / "agents", "agent"),
    ]


def builtin_dirs() -> list[SourceDir]:
    return [SourceDir("builtin", BUILTIN_DIR, "specialist")]


def source_dirs(project_root: Path) -> list[SourceDir]:
    """Every directory searched, highest precedence first. A user directory that is also a
    project directory (working in $HOME) is searched once, as project."""
    project = project_dirs(project_root)
    seen = {_same_path_key(d.path) for d in project}
    user = [d for d in user_dirs() if _same_path_key(d.path) not in seen]
    return [*project, *user, *builtin_dirs()]


def _same_path_key(path: Path) -> str:
    try:
        return str(path.resolve())
    except OSError:
        return str(path.absolute())


def _matches(name: str, kind: Kind) -> bool:
    if kind == "agent":
        return name.endswith(".md") and not name.startswith(".")
    return name.endswith(SPEC_SUFFIXES) and not name.startswith(".")


def definition_files(source: SourceDir, problems: list[LoadProblem] | None = None) -> list[Path]:
    """Definition files under one directory, sorted; hidden entries and deep trees skipped.

    Entries are returned by name, whatever their type: a FIFO or a directory named like a
    definition is refused when it is read, as one problem. A subdirectory that cannot be
    listed, and a name holding control characters, are added to `problems` instead.
    """
    if not source.path.is_dir():
        return []
    found: list[Path] = []

    def unreadable(exc: OSError) -> None:
        if problems is not None and exc.filename:
            problems.append(
                LoadProblem(Path(exc.filename), None, f"cannot list: {exc.strerror or exc}")
            )

    # followlinks=False: a symlinked directory (maybe a loop back up) is not walked into.
    for dirpath, dirnames, filenames in os.walk(source.path, onerror=unreadable):
        here = Path(dirpath)
        depth = len(here.relative_to(source.path).parts)
        # A directory named like a definition is one problem when it is read; it is not also
        # walked into (else a racing rename reports it twice).
        named = {d for d in dirnames if _matches(d, source.kind)}
        found.extend(here / d for d in named)
        dirnames[:] = sorted(
            d for d in dirnames if not d.startswith(".") and depth < MAX_DEPTH and d not in named
        )
        found.extend(here / name for name in filenames if _matches(name, source.kind))
    fit = []
    for path in sorted(found):
        # A name with an escape sequence would reach every terminal that prints its source.
        if str(path.relative_to(source.path)).isprintable():
            fit.append(path)
        elif problems is not None:
            problems.append(
                LoadProblem(path, None, "the name holds control characters; rename the file")
            )
    return fit


def load_specialist_file(
    path: Path, scope: Scope = "project", project_root: Path | None = None
) -> Specialist:
    """Load one definition (YAML, JSON or Markdown). Raises ConfigError with one line."""
    try:
        return _load(path, scope, project_root, parse_definition)
    except Invalid as exc:
        raise ConfigError(LoadProblem(path, exc.field, exc.problem).one_line()) from None


def _load(
    path: Path, scope: Scope, project_root: Path | None, parse: Callable[[Path, str], Any]
) -> Specialist:
    if path.name.endswith(".md"):  # an agent file (Claude Code's, pi's): loaded when there is one
        from specialists.catalog.markdown import load_markdown_file

        return load_markdown_file(path, scope, project_root)
    if not path.name.endswith(SPEC_SUFFIXES):
        raise Invalid(None, f"expected a file named *{', *'.join(SPEC_SUFFIXES)} or *.md")
    data = parse(path, read_definition(path))
    return specialist_from_data(data, source=path, scope=scope, project_root=project_root)


def _load_or_problem(
    path: Path, scope: Scope, project_root: Path, parse: Callable[[Path, str], Any]
) -> Specialist | LoadProblem:
    try:
        return _load(path, scope, project_root, parse)
    except Invalid as exc:
        return LoadProblem(path, exc.field, exc.problem, scope=scope)
    except Exception as exc:  # noqa: BLE001 - one odd file must not hide the others; reported
        problem = f"bug: loader failed: {type(exc).__name__}: {exc}"
        return LoadProblem(path, None, problem, scope=scope)


class Catalog:
    """The resolved set of specialists, plus what failed to load and what was shadowed."""

    __slots__ = ("by_name", "disabled", "problems", "shadowed")

    def __init__(
        self,
        by_name: dict[str, Specialist] | None = None,
        problems: list[LoadProblem] | None = None,
        shadowed: list[tuple[Specialist, Specialist]] | None = None,
        disabled: dict[str, tuple[Scope, Specialist]] | None = None,
    ) -> None:
        self.by_name = {} if by_name is None else by_name
        self.problems = [] if problems is None else problems
        self.shadowed = [] if shadowed is None else shadowed
        # Hidden by `specialists agents disable` (catalog/managed.py): name -> (the scope whose
        # setting disables it, the definition that would otherwise win).
        self.disabled = {} if disabled is None else disabled

    def all(self) -> list[Specialist]:
        return [self.by_name[n] for n in sorted(self.by_name)]

    def names(self) -> list[str]:
        return sorted(self.by_name)

    def __contains__(self, name: object) -> bool:
        return name in self.by_name

    def get(self, name: str) -> Specialist:
        """The winning definition of `name` (a runtime name, `package.name` for a packaged
        agent, or else one of a definition's aliases: seed 004). A file in a higher scope that
        looks like it defines `name` (by its file name) but failed to load stops the lookup:
        running the builtin in place of a broken project override could grant more than the
        override meant to (a READ_ONLY reviewer becoming the MEDIUM builtin)."""
        spec = self.by_name.get(name)
        if spec is None and name in self.disabled:
            scope = self.disabled[name][0]
            raise NotFound(
                f"specialist {name!r} is disabled in {scope} scope",
                hint=f"specialists agents enable {name} --scope {scope}",
            )
        if spec is None:
            alias = self._by_alias(name)
            if alias is not None:
                return alias
            raise NotFound(f"unknown specialist {name!r}", hint=self._hint(name))
        rank = SCOPE_ORDER.index(spec.scope)
        for problem in self._failed_files(name):
            if problem.scope is not None and SCOPE_ORDER.index(problem.scope) < rank:
                raise ConfigError(
                    f"the {problem.scope} definition of {name!r} failed to load;"
                    f" not falling back to the {spec.scope} one",
                    hint=problem.one_line(),
                )
        return spec

    def _by_alias(self, alias: str) -> Specialist | None:
        """The one winning definition that lists `alias` (a canonical name always wins, so
        resolution is one step and cannot loop); two that list it are ambiguous."""
        found = [s for s in self.by_name.values() if alias in s.aliases]
        hidden = [s for _scope, s in self.disabled.values() if alias in s.aliases]
        if len(found) > 1:
            names = ", ".join(sorted(s.name for s in found))
            raise UserError(
                f"{alias!r} is an alias of {len(found)} specialists: {names}",
                hint="name the one you mean; an alias must belong to one specialist",
            )
        if not found and hidden:
            scope = self.disabled[hidden[0].name][0]
            raise NotFound(
                f"specialist {hidden[0].name!r} (alias {alias!r}) is disabled in {scope} scope",
                hint=f"specialists agents enable {hidden[0].name} --scope {scope}",
            )
        return found[0] if found else None

    def _failed_files(self, name: str) -> list[LoadProblem]:
        return [p for p in self.problems if p.path.stem == name or definition_stem(p.path) == name]

    def shadowed_by(self, name: str) -> list[Specialist]:
        return [loser for winner, loser in self.shadowed if winner.name == name]

    def _hint(self, name: str) -> str:
        failed = self._failed_files(name)
        if failed:
            return f"a file for it failed to load: {failed[0].one_line()}"
        packaged = sorted(
            n for n, s in self.by_name.items() if s.package and n.endswith(f".{name}")
        )
        if packaged:
            return f"a packaged agent goes by package.name: {', '.join(packaged)}"
        import difflib  # only for an unknown name

        close = difflib.get_close_matches(name, self.names(), n=3, cutoff=0.6)
        if close:
            return f"did you mean: {', '.join(close)}?"
        return "run 'specialists list' to see the available specialists"


def load_catalog(
    project_root: Path, *, dirs: Sequence[SourceDir] | None = None, keep_parsed: bool = False
) -> Catalog:
    """Load every definition in every scope. Never raises for a bad file: see `.problems`.
    `keep_parsed` (a run's load): keep what the YAML files parsed to (files.ParsedCache);
    every load uses what was kept, only a run writes (a refused command writes nothing)."""
    catalog = Catalog()
    cache = ParsedCache(state_dir(project_root))
    by_scope: dict[Scope, dict[str, Specialist]] = {s: {} for s in SCOPE_ORDER}
    for source in source_dirs(project_root) if dirs is None else dirs:
        for path in definition_files(source, catalog.problems):
            loaded = _load_or_problem(path, source.scope, project_root, cache.parse)
            if isinstance(loaded, LoadProblem):
                catalog.problems.append(loaded)
                continue
            same_scope = by_scope[source.scope]
            first = same_scope.get(loaded.name)
            if first is not None:
                catalog.problems.append(
                    LoadProblem(
                        path,
                        "name",
                        f"duplicate specialist {loaded.name!r} in {source.scope} scope;"
                        f" {first.source} already defines it (this file is ignored)",
                    )
                )
                continue
            same_scope[loaded.name] = loaded
    if keep_parsed:
        cache.save()
    for scope in SCOPE_ORDER:
        for name, spec in by_scope[scope].items():
            winner = catalog.by_name.get(name)
            if winner is None:
                catalog.by_name[name] = spec
            else:
                catalog.shadowed.append((winner, spec))
    _hide_disabled(catalog, project_root)
    return catalog


def _hide_disabled(catalog: Catalog, project_root: Path) -> None:
    from specialists.catalog.managed import disabled_names

    names, problems = disabled_names(project_root)
    for path, problem in problems:
        catalog.problems.append(LoadProblem(path, None, f"{problem}; nothing is disabled by it"))
    for name, scope in names.items():
        spec = catalog.by_name.pop(name, None)
        if spec is not None:
            catalog.disabled[name] = (scope, spec)
