"""Whatever is in a definition file, load_catalog reports it; it never raises."""

from __future__ import annotations

import json
import tempfile
from pathlib import Path

import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from specialists.catalog import load_catalog
from specialists.catalog.discovery import SourceDir

KEYS = [
    "specialist", "metadata", "name", "execution", "prompt", "skills", "paths", "scripts",
    "runner", "type", "command", "args", "timeout_ms", "permission_required", "system",
    "task_template", "variables", "phase", "run", "tools", "thinking", "interactive",
]  # fmt: skip
scalars = st.one_of(
    st.none(), st.booleans(), st.integers(), st.floats(), st.text(max_size=20),
    st.sampled_from(KEYS), st.sampled_from(["pi", "command", "READ_ONLY", "pre", "x"]),
)  # fmt: skip
documents = st.recursive(
    scalars,
    lambda inner: (
        st.lists(inner, max_size=4)
        | st.dictionaries(st.sampled_from(KEYS) | st.integers(), inner, max_size=5)
    ),
    max_leaves=25,
)


def load_one(name: str, content: bytes) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        folder = root / "defs"
        folder.mkdir()
        (folder / name).write_bytes(content)
        (folder / "ok.specialist.yaml").write_text("metadata: {name: ok}\n")
        dirs = [SourceDir("project", folder, "specialist"), SourceDir("user", folder, "agent")]
        cat = load_catalog(root, dirs=dirs)
        assert "ok" in cat
        for problem in cat.problems:
            assert "\n" not in problem.one_line()
            assert not problem.problem.startswith("bug:"), problem.one_line()


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.binary(max_size=300) | st.text(max_size=300).map(str.encode))
def test_garbage_bytes_never_raise(content: bytes) -> None:
    load_one("x.specialist.yaml", content)
    load_one("x.md", b"---\n" + content + b"\n---\nbody")


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(documents)
def test_random_structures_never_raise(document: object) -> None:
    text = yaml.safe_dump(document).encode()
    load_one("x.specialist.yaml", text)
    load_one("x.specialist.json", json.dumps(document).encode())
    load_one("x.md", b"---\n" + text + b"---\nbody")
