"""The parsed-definitions cache (catalog/files.py `ParsedCache`): a second load parses no YAML
and finds the same catalog; a changed text is parsed again; what JSON cannot hold exactly is
never kept; a damaged, planted or unwritable cache costs a parse and nothing else."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from specialists.catalog import files, load_catalog
from specialists.catalog.discovery import SourceDir
from specialists.catalog.files import ParsedCache

TESTER = "metadata: {name: tester}\nexecution: {runner: pi, model: a/b}\nprompt: {system: hi}\n"


@pytest.fixture
def project(tmp_path: Path) -> Path:
    (tmp_path / "specialists").mkdir()
    (tmp_path / "specialists" / "tester.specialist.yaml").write_text(TESTER)
    (tmp_path / ".specialists").mkdir()
    return tmp_path


def _dirs(project: Path) -> list[SourceDir]:
    return [SourceDir("project", project / "specialists", "specialist")]


def _cache_file(project: Path) -> Path:
    return project / ".specialists" / "cache" / "definitions.json"


def _no_yaml(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    parsed: list[str] = []

    def parse(text: str, **_kw: object) -> object:
        parsed.append(text)
        raise AssertionError("parsed again")

    monkeypatch.setattr(files, "parse_yaml", parse)
    return parsed


def test_a_second_load_parses_nothing_and_finds_the_same(
    project: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    first = load_catalog(project, dirs=_dirs(project), keep_parsed=True).get("tester")
    kept = json.loads(_cache_file(project).read_text())
    assert kept["schema"] == 1 and list(kept["files"]) == [
        str(project / "specialists" / "tester.specialist.yaml")
    ]
    parsed = _no_yaml(monkeypatch)
    again = load_catalog(project, dirs=_dirs(project), keep_parsed=True).get("tester")
    assert parsed == [] and again == first


def test_a_changed_text_is_parsed_again_and_a_removed_file_leaves(project: Path) -> None:
    load_catalog(project, dirs=_dirs(project), keep_parsed=True)
    path = project / "specialists" / "tester.specialist.yaml"
    path.write_text(TESTER.replace("a/b", "c/d"))  # the same size, maybe the same mtime
    assert load_catalog(project, dirs=_dirs(project), keep_parsed=True).get("tester").model == "c/d"
    path.unlink()
    (project / "specialists" / "other.specialist.yaml").write_text("metadata: {name: other}\n")
    load_catalog(project, dirs=_dirs(project), keep_parsed=True)
    kept = json.loads(_cache_file(project).read_text())["files"]
    assert [Path(p).name for p in kept] == ["other.specialist.yaml"]


def test_what_json_cannot_hold_exactly_is_not_kept(tmp_path: Path) -> None:
    (tmp_path / ".specialists").mkdir()
    cache = ParsedCache(tmp_path / ".specialists")
    texts = {"date.yaml": "a: 2024-01-02\n", "key.yaml": "1: x\n", "ok.yaml": "a: [1, 2.5, true]\n"}
    for name, text in texts.items():
        cache.parse(tmp_path / name, text)
    cache.save()
    kept = json.loads(_cache_file(tmp_path).read_text())["files"]
    assert [Path(p).name for p in kept] == ["ok.yaml"]
    assert kept[str(tmp_path / "ok.yaml")]["data"] == {"a": [1, 2.5, True]}


def test_each_use_gets_its_own_copy(tmp_path: Path) -> None:
    (tmp_path / ".specialists").mkdir()
    path, text = tmp_path / "a.yaml", "a: {b: 1}\n"
    first = ParsedCache(tmp_path / ".specialists")
    first.parse(path, text)["a"]["b"] = 2  # a caller that changes what it got
    first.save()
    second = ParsedCache(tmp_path / ".specialists")
    got = second.parse(path, text)
    got["a"]["b"] = 3
    assert second.parse(path, text) == {"a": {"b": 1}}


def test_no_state_directory_no_cache(tmp_path: Path) -> None:
    (tmp_path / "specialists").mkdir()
    (tmp_path / "specialists" / "tester.specialist.yaml").write_text(TESTER)
    assert (
        load_catalog(tmp_path, dirs=_dirs(tmp_path), keep_parsed=True).get("tester").name
        == "tester"
    )
    assert not (tmp_path / ".specialists").exists()


@pytest.mark.parametrize(
    "damage",
    ["garbage", "newer schema", "a planted link", "a FIFO", "a directory", "a deep document"],
)
def test_a_damaged_or_planted_cache_costs_a_parse(project: Path, damage: str) -> None:
    load_catalog(project, dirs=_dirs(project), keep_parsed=True)
    cache = _cache_file(project)
    cache.unlink()
    outside = project / "outside.json"
    if damage == "garbage":
        cache.write_text("{not json")
    elif damage == "newer schema":
        cache.write_text(json.dumps({"schema": 99, "files": {}}))
    elif damage == "a planted link":
        outside.write_text(json.dumps({"schema": 1, "files": {}}))
        cache.symlink_to(outside)
    elif damage == "a FIFO":
        os.mkfifo(cache)
    elif damage == "a directory":
        cache.mkdir()
    else:  # a document nested past what a parse allows, planted for this very text
        path = str(project / "specialists" / "tester.specialist.yaml")
        deep: object = 1
        for _ in range(200):
            deep = [deep]
        cache.write_text(json.dumps({"schema": 1, "files": {path: {"text": TESTER, "data": deep}}}))
    spec = load_catalog(project, dirs=_dirs(project), keep_parsed=True).get("tester")
    assert spec.model == "a/b"
    if damage == "a planted link":
        assert json.loads(outside.read_text()) == {"schema": 1, "files": {}}  # not written through


def test_only_a_runs_load_writes_it(project: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """`list`, `agents` and the others read the cache; a refused command writes nothing."""
    load_catalog(project, dirs=_dirs(project))
    assert not _cache_file(project).exists()
    load_catalog(project, dirs=_dirs(project), keep_parsed=True)
    parsed = _no_yaml(monkeypatch)
    assert load_catalog(project, dirs=_dirs(project)).get("tester").name == "tester"
    assert parsed == []


def test_a_full_disk_costs_the_next_load_a_parse(
    project: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The run goes on with what it parsed; nothing half-written is left to read."""
    import errno

    from specialists.store.file_record import FileRecord

    def full(*_args: object, **_kw: object) -> None:
        raise OSError(errno.ENOSPC, "No space left on device")

    with monkeypatch.context() as patched:
        patched.setattr(FileRecord, "replace", full)
        catalog = load_catalog(project, dirs=_dirs(project), keep_parsed=True)
    assert catalog.get("tester").name == "tester"
    assert not _cache_file(project).exists()
    load_catalog(project, dirs=_dirs(project), keep_parsed=True)  # parsed, and kept this time
    assert _cache_file(project).exists()
