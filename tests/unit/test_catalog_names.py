"""Seed 004's runtime names: `package` makes an agent `{package}.{name}`, `aliases` are other
names for it. Both resolve wherever a specialist is named (they all go through Catalog.get);
a canonical name wins over an alias, so resolution is one step and cannot loop."""

from __future__ import annotations

from pathlib import Path

import pytest

from specialists.base.errors import ConfigError, NotFound, UserError
from specialists.catalog import load_catalog, load_specialist_file


def _agent(root: Path, file: str, front: str) -> Path:
    path = root / ".pi" / "agents" / f"{file}.md"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(f"---\n{front}\n---\nYou help.\n")
    return path


def test_package_makes_the_dotted_runtime_name_and_aliases_select_it(tmp_path: Path) -> None:
    _agent(tmp_path, "my-agent", "name: my-agent\npackage: code-analysis\naliases: dev, coder")
    catalog = load_catalog(tmp_path)
    spec = catalog.get("code-analysis.my-agent")
    assert (spec.name, spec.package, spec.aliases) == (
        "code-analysis.my-agent",
        "code-analysis",
        ("dev", "coder"),
    )
    assert catalog.get("dev") is spec and catalog.get("coder") is spec
    with pytest.raises(NotFound) as info:  # the local name alone is not its name
        catalog.get("my-agent")
    assert "code-analysis.my-agent" in (info.value.hint or "")


def test_yaml_metadata_takes_package_and_aliases(tmp_path: Path) -> None:
    path = tmp_path / "specialists" / "lint.specialist.yaml"
    path.parent.mkdir()
    path.write_text("metadata: {name: lint, package: qa, aliases: [linter, checker]}\n")
    spec = load_specialist_file(path)
    assert spec.name == "qa.lint" and spec.aliases == ("linter", "checker")
    assert not spec.warnings  # the file name matches the local name


def test_a_canonical_name_wins_over_an_alias_so_nothing_loops(tmp_path: Path) -> None:
    _agent(tmp_path, "a", "name: a\naliases: b")
    _agent(tmp_path, "b", "name: b\naliases: a")
    _agent(tmp_path, "c", "name: c\naliases: reviewer")  # shadows nothing: builtin wins
    catalog = load_catalog(tmp_path)
    assert catalog.get("a").name == "a" and catalog.get("b").name == "b"
    assert catalog.get("reviewer").scope == "builtin"


def test_an_alias_two_agents_claim_is_ambiguous(tmp_path: Path) -> None:
    _agent(tmp_path, "x", "name: x\naliases: helper")
    _agent(tmp_path, "y", "name: y\naliases: [helper]")
    with pytest.raises(UserError) as info:
        load_catalog(tmp_path).get("helper")
    assert info.value.message == "'helper' is an alias of 2 specialists: x, y"


def test_an_alias_that_names_itself_or_repeats_is_dropped_with_a_warning(tmp_path: Path) -> None:
    spec = load_specialist_file(_agent(tmp_path, "me", "name: me\naliases: me, m, m"))
    assert spec.aliases == ("m",)
    assert spec.warnings == (
        "aliases[0]: 'me' is the agent's own name; ignored",
        "aliases[2]: 'm' is listed twice; ignored",
    )
    assert load_specialist_file(_agent(tmp_path, "n", "name: n\naliases: false")).aliases == ()


@pytest.mark.parametrize(
    ("front", "said"),
    [
        ("name: a\npackage: ../etc", "package: expected a package name"),
        ("name: a\npackage: x/y", "package: expected a package name"),
        ("name: a\npackage: a.b", "package: expected a package name"),
        ("name: a\npackage: [x]", "package: expected a package name"),
        ("name: a\npackage: '-x'", "package: expected a package name"),
        (f"name: {'n' * 40}\npackage: {'p' * 40}", "at most 64 characters"),
        ("name: a\naliases: ok, ../up", "aliases[1]: expected letters, digits"),
        ("name: a\naliases: 'x y'", "aliases[0]: expected letters, digits"),
        ("name: a\naliases: {k: v}", "aliases: expected names"),
        ("name: a\naliases: [" + ", ".join(f"a{i}" for i in range(40)) + "]", "at most 32"),
    ],
)
def test_bad_packages_and_aliases_fail_the_file(tmp_path: Path, front: str, said: str) -> None:
    with pytest.raises(ConfigError) as info:
        load_specialist_file(_agent(tmp_path, "a", front))
    assert said in info.value.one_line()


def test_an_alias_of_a_disabled_agent_says_so(tmp_path: Path) -> None:
    from specialists.catalog.discovery import Catalog

    spec = load_specialist_file(_agent(tmp_path, "z", "name: z\naliases: zed"))
    catalog = Catalog(disabled={"z": ("project", spec)})
    with pytest.raises(NotFound, match="'z' \\(alias 'zed'\\) is disabled in project scope"):
        catalog.get("zed")
