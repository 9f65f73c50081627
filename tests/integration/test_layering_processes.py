"""The tests of tests/unit/test_layering.py that start processes (git, a runner, a
supervisor): the integration tier, as the unit tier starts none (tests/conftest.py)."""

from __future__ import annotations

import ast

from tests.unit.test_layering import CLASS_CLASHES_LEFT, _modules


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
