"""The import rules of docs/architecture.md, checked on the source (issue 8 item 6).

The graph is read with `ast`, so it holds every import a module can make at run time,
including those inside functions (kept there to spare the fast paths a heavy module, never
to hide a cycle). Imports under `if TYPE_CHECKING:` are left out: they never run.
"""

from __future__ import annotations

import ast
import sys
from functools import cache
from pathlib import Path

import pytest

SRC = Path(__file__).resolve().parents[2] / "src" / "specialists"

# The rooms at the floor import the standard library, their own room and these leaves only
# (and the catalog PyYAML: definitions are YAML).
FLOOR = ("jobs", "catalog")
LEAVES = {"errors", "vocab", "reader", "display"}
FLOOR_PACKAGES = {"jobs": set(), "catalog": {"yaml"}}

# What people and agents talk to. Interfaces may use each other (the CLI starts the MCP
# server); no other room imports one.
INTERFACES = {"cli", "mcp", "hooks", "tui", "web", "pi_extension", "__main__"}
# The pi extension's package holds its files and how a pi job loads them (`for_pi_job`):
# that is data the pi runner needs, not the sidecar interface beside it.
ENTRANCES = {"specialists.pi_extension"}


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(SRC.parent).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


@cache
def _modules() -> dict[str, Path]:
    return {_module_name(p): p for p in SRC.rglob("*.py")}


def _runtime_imports(tree: ast.AST) -> list[ast.Import | ast.ImportFrom]:
    found: list[ast.Import | ast.ImportFrom] = []

    def visit(node: ast.AST) -> None:
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            for child in node.orelse:
                visit(child)
            return
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            found.append(node)
        for child in ast.iter_child_nodes(node):
            visit(child)

    visit(tree)
    return found


def _targets(module: str, node: ast.Import | ast.ImportFrom) -> list[str]:
    """Every dotted name `node` imports (the package and, for `from x import y`, `x.y`)."""
    if isinstance(node, ast.Import):
        return [alias.name for alias in node.names]
    if node.level:
        package = module.split(".")
        if _modules()[module].name != "__init__.py":
            package = package[:-1]
        package = package[: len(package) - node.level + 1]
        base = ".".join([*package, node.module] if node.module else package)
    else:
        base = node.module or ""
    return [base, *(f"{base}.{alias.name}" for alias in node.names)]


@cache
def _graph() -> dict[str, frozenset[str]]:
    """Our modules -> the modules of ours they import, and the top-level names of the others
    (kept under the key "<external>:<name>")."""
    modules = _modules()
    graph: dict[str, frozenset[str]] = {}
    for module, path in modules.items():
        deps: set[str] = set()
        for node in _runtime_imports(ast.parse(path.read_text(encoding="utf-8"))):
            for name in _targets(module, node):
                if not name.startswith("specialists"):
                    deps.add(f"<external>:{name.split('.')[0]}")
                    continue
                while name not in modules and "." in name:
                    name = name.rsplit(".", 1)[0]
                if name in modules and name != module:
                    deps.add(name)
        graph[module] = frozenset(deps)
    return graph


def _room(module: str) -> str:
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else ""


def _cycles(graph: dict[str, frozenset[str]]) -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    counter = 0
    for root in graph:
        if root in index:
            continue
        work = [(root, iter(sorted(graph[root])))]
        index[root] = low[root] = counter
        counter += 1
        stack.append(root)
        on_stack.add(root)
        while work:
            node, children = work[-1]
            child = next((c for c in children if c in graph), None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = counter
                    counter += 1
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph[child]))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1:
                    found.append(sorted(component))
    return found


def test_the_graph_sees_imports_inside_functions():
    """The rules below would prove nothing if lazy imports were invisible to them."""
    assert "specialists.process.short" in _graph()["specialists.cli.cmd_doctor"]


def test_no_import_cycles():
    cycles = _cycles(_graph())
    assert not cycles, "import cycles (break them; a lazy import does not): " + "; ".join(
        " <-> ".join(c) for c in cycles
    )


def test_cycle_finder_finds_a_planted_cycle():
    planted = {
        "a": frozenset({"b"}),
        "b": frozenset({"c"}),
        "c": frozenset({"a"}),
        "d": frozenset(),
    }
    assert _cycles(planted) == [["a", "b", "c"]]


@pytest.mark.parametrize("floor", FLOOR)
def test_floor_rooms_import_only_the_stdlib_and_the_leaves(floor):
    strays = set()
    for module, deps in _graph().items():
        if _room(module) != floor:
            continue
        for dep in deps:
            if dep.startswith("<external>:"):
                package = dep.split(":", 1)[1]
                if package not in sys.stdlib_module_names | FLOOR_PACKAGES[floor]:
                    strays.add(f"{module} -> {dep}")
            elif _room(dep) not in {floor, *LEAVES} and dep != "specialists":
                strays.add(f"{module} -> {dep}")
    assert not strays, f"{floor} must stay at the floor: {sorted(strays)}"


def test_no_room_imports_an_interface():
    strays = sorted(
        f"{module} -> {dep}"
        for module, deps in _graph().items()
        if _room(module) not in INTERFACES
        for dep in deps
        if _room(dep) in INTERFACES and dep not in ENTRANCES
    )
    assert not strays, f"requests flow down; an interface is never imported: {strays}"


def test_the_leaves_import_nothing_of_ours_but_leaves():
    strays = sorted(
        f"{module} -> {dep}"
        for module, deps in _graph().items()
        if _room(module) in LEAVES
        for dep in deps
        if not dep.startswith("<external>:") and _room(dep) not in LEAVES | {""}
    )
    assert not strays, f"a leaf depends on a room: {strays}"


# Classes whose second meaning is being folded away by wave 2's open work (shrink only).
CLASS_CLASHES_LEFT = {"Reply", "ToolCall"}


def test_no_class_name_means_two_things():
    """Two public classes with one name in two rooms read as one thing and are not."""
    homes: dict[str, list[str]] = {}
    for module, path in _modules().items():
        for node in ast.parse(path.read_text(encoding="utf-8")).body:
            if isinstance(node, ast.ClassDef) and not node.name.startswith("_"):
                homes.setdefault(node.name, []).append(module)
    clashes = {name: where for name, where in homes.items() if len(where) > 1}
    new = {name: where for name, where in clashes.items() if name not in CLASS_CLASHES_LEFT}
    assert not new, f"one class name, two meanings: {new}; name each for its room"
    gone = CLASS_CLASHES_LEFT - set(clashes)
    assert not gone, f"remove {sorted(gone)} from CLASS_CLASHES_LEFT: they are unique now"
