"""Whatever is in a definition file, load_catalog reports it; it never raises. Whatever
reaches the typed reader (definitions, config.toml, MCP arguments), it answers with a value
that fits or one `Invalid` line, never another exception."""

from __future__ import annotations

import json
import tempfile
from pathlib import Path

import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from specialists.base.errors import ConfigError, UserError
from specialists.base.reader import Fields, Invalid, check_tree, plain_data, text_value
from specialists.base.reader.arguments import check_arguments
from specialists.catalog import load_catalog
from specialists.catalog.config import merge_layers
from specialists.catalog.discovery import SourceDir
from specialists.fronts.mcp.table import TOOLS

ARG_NAMES = sorted({name for tool in TOOLS for name in tool.input_schema.get("properties", {})})

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


# --- the typed reader, config.toml and MCP arguments ----------------------------------------

json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=12),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner),
    max_leaves=20,
)
forms = st.sampled_from(["line", "arg", "prose"])


@settings(max_examples=300, deadline=None)
@given(st.text(max_size=60), forms, st.none() | st.integers(0, 80))
def test_text_value_returns_the_text_only_when_it_fits(text: str, form: str, limit: int | None):
    """Accepted text is exactly what came in, holds no NUL, encodes as UTF-8, fits the
    limit, and in one-line form holds no control character; refused text is one line."""
    try:
        out = text_value(text, "f", form=form, max_chars=limit)  # type: ignore[arg-type]
    except Invalid as exc:
        assert "\n" not in str(exc) and str(exc).startswith("f: ")
        return
    assert out == text and "\x00" not in out
    out.encode("utf-8")
    assert limit is None or len(out) <= limit
    if form == "line":
        assert not any(ord(c) < 0x20 or 0x7F <= ord(c) < 0xA0 for c in out)


@settings(max_examples=300, deadline=None)
@given(json_values, st.lists(st.sampled_from(KEYS), max_size=6))
def test_fields_raise_only_invalid(data: object, keys: list[str]) -> None:
    try:
        fields = Fields(data, "top")
        for key in keys:
            for read in (
                fields.text,
                fields.flag,
                fields.integer,
                fields.number,
                fields.text_list,
                fields.section,
            ):
                try:
                    read(key)
                except Invalid as exc:
                    assert "\n" not in str(exc)
        fields.finish()
        check_tree(data)
        plain_data(data, "top")
    except Invalid as exc:
        assert "\n" not in str(exc)


config_values = st.recursive(
    st.booleans() | st.integers() | st.floats() | st.text(max_size=12),
    lambda inner: (
        st.lists(inner, max_size=3)
        | st.dictionaries(
            st.sampled_from(["default_runner", "default_model", "providers", "x", "models", "api"])
            | st.sampled_from(["base_url", "context_window", "input_price_per_mtok", "lab"]),
            inner,
            max_size=4,
        )
    ),
    max_leaves=15,
)


@settings(max_examples=150, deadline=None)
@given(
    st.dictionaries(
        st.sampled_from(["default_runner", "default_model", "providers", "z"]), config_values
    )
)
def test_config_layers_raise_only_config_error(data: dict[str, object]) -> None:
    try:
        config = merge_layers([(Path("/c.toml"), data)])
    except ConfigError as exc:
        assert "\n" not in exc.one_line() and exc.message.startswith("/c.toml: ")
        return
    for provider in config.providers.values():
        for price in (provider.input_price_per_mtok, provider.output_price_per_mtok):
            assert price is None or (price >= 0 and price == price and price != float("inf"))


@settings(max_examples=150, deadline=None)
@given(st.sampled_from(TOOLS), st.dictionaries(st.sampled_from(ARG_NAMES), json_values, max_size=5))
def test_mcp_arguments_raise_only_one_line_user_errors(tool: object, arguments: dict) -> None:
    try:
        checked = check_arguments(tool.name, tool.input_schema, arguments)  # type: ignore[attr-defined]
    except UserError as exc:
        line = exc.one_line()
        assert "\n" not in line and not line.startswith(f"{tool.name}: bug")  # type: ignore[attr-defined]
        return
    for value in checked.values():
        if isinstance(value, str):
            assert "\x00" not in value
