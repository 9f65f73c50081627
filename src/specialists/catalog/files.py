"""Definition files -> parsed documents: bounded reading, then YAML or JSON with limits.

Every failure is one `Invalid` line: the file is not a regular file, too large, not UTF-8,
holds a NUL byte, does not parse (with line and column; 100,000 nested brackets stop the
parser), gives a key twice, or parses into something too large or too deep to walk (YAML
alias and merge bombs, cycles). `parse_yaml` is the project's one YAML loader; YAML is
imported only when a YAML file is read, never at CLI import time.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from specialists.base.reader import Invalid, check_tree, load_json, value_error_text
from specialists.base.reader.textfile import read_text_file
from specialists.base.reader.trees import MAX_DEPTH, MAX_NODES
from specialists.base.vocab import SPEC_SUFFIXES


def read_definition(path: Path) -> str:
    """A definition's text. Raises `Invalid` (also when the file vanished after listing)."""
    try:
        return read_text_file(path)
    except FileNotFoundError:
        raise Invalid(None, "cannot read file: no such file (removed while loading?)") from None


def definition_stem(path: Path) -> str:
    """`reviewer.specialist.yaml` -> `reviewer`; other names -> ''."""
    name = path.name
    for suffix in SPEC_SUFFIXES:
        if name.endswith(suffix):
            return name[: -len(suffix)]
    return ""


MAX_YAML_CHARS = 1024 * 1024  # the most any YAML file of ours may hold (read_text_file's cap)
MAX_MERGED_PAIRS = 20_000  # `<<: *a` merges copied, in all: a merge "bomb" stops here


def parse_yaml(
    text: str,
    *,
    what: str = "YAML",
    first_line: int = 1,
    bounded: bool = True,
    max_nodes: int = MAX_NODES,
    max_depth: int = MAX_DEPTH,
) -> Any:
    """The one YAML loader: every YAML the project reads comes through here (a grep test in
    tests/unit/test_primitives.py holds that). A safe loader (no Python objects), bounded:
    at most MAX_YAML_CHARS of text, a mapping key given twice is refused (YAML would keep
    the last one silently), merges (`<<`) copy at most MAX_MERGED_PAIRS pairs, and the
    document's values, each use of an alias counted, at most `max_nodes` (an alias makes a
    small text a huge document, so there is always a budget), nested at most `max_depth`.
    Any failure is one `Invalid` line with the file's line number (`first_line` is where
    `text` starts in the file); `bounded=False` leaves the tree check to the caller."""
    import yaml  # only these loaders read YAML; keep it off the CLI's import path

    if len(text) > MAX_YAML_CHARS:
        raise Invalid(None, f"invalid {what}: over {MAX_YAML_CHARS:,} characters")
    try:
        data = yaml.load(text, Loader=_bounded_loader())  # a CSafeLoader/SafeLoader only
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        where = f" at line {mark.line + first_line}, column {mark.column + 1}" if mark else ""
        reason = " ".join((exc.problem or exc.context or "syntax error").split())
        raise Invalid(None, f"invalid {what}{where}: {reason}") from None
    except yaml.YAMLError as exc:
        raise Invalid(None, f"invalid {what}: {' '.join(str(exc).split())}") from None
    except (ValueError, OverflowError) as exc:  # a timestamp like 2024-13-45, a huge integer
        raise Invalid(None, f"invalid {what}: {value_error_text(exc)}") from None
    except RecursionError:
        raise Invalid(None, f"invalid {what}: nested too deeply") from None
    if bounded:
        check_tree(data, f"the {what} document", max_nodes=max_nodes, max_depth=max_depth)
    return data


_LOADER: Any = None


def _bounded_loader() -> Any:
    """The safe loader (libyaml's when present) with duplicate keys refused and merges
    bounded; made once, on first use."""
    global _LOADER
    if _LOADER is not None:
        return _LOADER
    import yaml

    base = getattr(yaml, "CSafeLoader", yaml.SafeLoader)

    class BoundedLoader(base):  # type: ignore[misc, valid-type]
        merged = 0

        def construct_mapping(self, node: Any, deep: bool = False) -> Any:
            if isinstance(node, yaml.MappingNode):
                seen: set[tuple[str, str]] = set()
                for key, _value in node.value:
                    if not isinstance(key, yaml.ScalarNode) or key.tag == _MERGE_TAG:
                        continue
                    name = (key.tag, key.value)
                    if name in seen:
                        raise yaml.constructor.ConstructorError(
                            "while reading a mapping", node.start_mark,
                            f"the key {key.value[:80]!r} is given twice", key.start_mark,
                        )  # fmt: skip
                    seen.add(name)
            return super().construct_mapping(node, deep=deep)

        def flatten_mapping(self, node: Any) -> None:
            merges = any(k.tag == _MERGE_TAG for k, _v in node.value)
            super().flatten_mapping(node)
            self.merged += len(node.value) if merges else 0
            if self.merged > MAX_MERGED_PAIRS:
                raise yaml.constructor.ConstructorError(
                    None, None, f"merges (<<) copy more than {MAX_MERGED_PAIRS:,} keys",
                    node.start_mark,
                )  # fmt: skip

    _LOADER = BoundedLoader
    return _LOADER


_MERGE_TAG = "tag:yaml.org,2002:merge"


def parse_json(text: str) -> Any:
    """A definition's JSON: `load_json` with keys given twice refused, as in YAML."""
    data = load_json(text, "JSON", max_nodes=None, unique_keys=True)
    return data  # JSON has no aliases: its size is bounded by the text, read capped


def parse_definition(path: Path, text: str) -> Any:
    return parse_json(text) if path.name.endswith(".json") else parse_yaml(text)


class ParsedCache:
    """What each YAML definition parsed to, kept in `.specialists/cache/definitions.json` by
    path and exact text: a catalog load reads every definition's text as ever, but parses
    (and imports PyYAML for, a sixth of a foreground run's own CPU) only a text that changed
    since the last load. Kept: only a document JSON holds exactly (not a YAML date, a set,
    a key that is not text) of a file up to MAX_TEXT; each use gets its own copy. A cache
    that cannot be read or written costs the parse, nothing else; none is made where the
    project has no state directory yet. A run's load writes it (discovery.load_catalog
    `keep_parsed`), every load reads it."""

    DOC = "definitions"
    MAX_TEXT = 64 * 1024

    def __init__(self, state_dir: Path | None) -> None:
        self._record: Any = None
        self._old: dict[str, Any] = {}
        self._new: dict[str, Any] = {}
        if state_dir is None or not state_dir.is_dir():
            return
        from specialists.base.errors import StoreError
        from specialists.store.kinds import DEFINITIONS

        self._record = DEFINITIONS.record(state_dir / "cache")
        try:
            doc = self._record.read(self.DOC, schema=1)
        except (OSError, StoreError) as exc:  # damaged or planted: parsed again, then rewritten
            _said(f"definitions cache not read: {exc}")
            doc = None
        files = doc.get("files") if doc is not None else None
        self._old = files if isinstance(files, dict) else {}

    def parse(self, path: Path, text: str) -> Any:
        """`parse_definition`, from the cache when this very text was parsed before."""
        if path.name.endswith(".json"):
            return parse_json(text)
        kept = self._old.get(str(path))
        if isinstance(kept, dict) and kept.get("text") == text and "data" in kept:
            try:
                data = json.loads(json.dumps(kept["data"]))  # the caller's own copy
                check_tree(data, "the YAML document")  # as bounded as a parse (planted?)
            except (Invalid, ValueError, RecursionError) as exc:
                _said(f"definitions cache: {path}: {exc}; parsed again")
            else:
                self._new[str(path)] = kept
                return data
        data = parse_yaml(text)
        if len(text) <= self.MAX_TEXT:
            try:
                copy = json.loads(json.dumps(data))
            except (TypeError, ValueError, RecursionError):  # a date, a set, ...: not kept
                return data
            if copy == data:  # (a key that is not text comes back as text: not kept)
                self._new[str(path)] = {"text": text, "data": copy}
        return data

    def save(self) -> None:
        """Keep what this load parsed, and only that (a removed file leaves the cache)."""
        if self._record is None or self._new == self._old:
            return
        from specialists.base.errors import StoreError

        try:
            self._record.ensure()
            self._record.replace(self.DOC, {"schema": 1, "files": self._new})
        except (OSError, StoreError) as exc:  # a full disk, a planted link: parsed next time
            _said(f"definitions cache not written: {exc}")


def _said(problem: str) -> None:
    """A cache problem, logged (it costs a parse, never a run); logging loads only then."""
    import logging

    logging.getLogger("specialists.catalog").info(problem)
