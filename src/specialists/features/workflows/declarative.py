"""Declarative workflows: a document of steps, run with the same `runs` as a Python one.

    defaults: {agent: reviewer, runner: command}      # options every child starts from
    steps:
      - phase: scan
      - run: {key: scan, agent: scout, task: "Map {args.target}"}
      - all: [{key: a, task: "..."}, {key: b, task: "..."}]           # a barrier
      - all: {items: "{args.files}", child: {key: "lint-{item}", task: "Lint {item}"}}
      - pipeline:                                                      # no barrier
          items: [a.py, b.py]
          stages:
            - {key: "find-{item}", task: "Find bugs in {item}"}
            - {key: "check-{item}", task: "Check: {prev.output}"}

String options may name `{args.X}`, `{item}` / `{item.X}`, `{index}`, `{prev.output}` /
`{prev.data.X}` (the item's previous stage) and `{results.KEY.output}` (an earlier child);
`{{` and `}}` are literal braces. The whole document is checked before the first child is
launched (`check_document`); a placeholder that names nothing known fails when it is filled.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from specialists.base.errors import UserError
from specialists.features.workflows.options import MAX_ITEMS, child_options
from specialists.features.workflows.results import ChildResult
from specialists.features.workflows.runtime import Runs

_FIELD = re.compile(r"\{\{|\}\}|\{([A-Za-z_][\w.-]*)\}")
_ROOTS = ("args", "item", "index", "prev", "results")
_STEP_KINDS = ("run", "all", "pipeline", "phase")
_TOP = frozenset({"steps", "defaults", "concurrency", "name", "description"})


def check_document(doc: Mapping[str, Any]) -> None:
    if not isinstance(doc, Mapping):
        raise UserError("a declarative workflow must be a mapping with steps")
    extra = sorted(str(k) for k in doc if k not in _TOP)
    if extra:
        raise UserError(
            f"workflow: unknown field {extra[0]!r}", hint="fields: " + ", ".join(sorted(_TOP))
        )
    steps = doc.get("steps")
    if not isinstance(steps, list) or not steps:
        raise UserError("workflow: steps must be a non-empty list")
    defaults = doc.get("defaults") or {}
    if not isinstance(defaults, Mapping):
        raise UserError("workflow: defaults must be a mapping of child options")
    for n, step in enumerate(steps, 1):
        kind, body = _step(step, n)
        for template in _templates(kind, body, n):
            _check_template({**defaults, **template}, n)


def _step(step: object, n: int) -> tuple[str, Any]:
    if not isinstance(step, Mapping) or len(step) != 1:
        raise UserError(f"workflow step {n}: give exactly one of " + ", ".join(_STEP_KINDS))
    kind, body = next(iter(step.items()))
    if kind not in _STEP_KINDS:
        raise UserError(
            f"workflow step {n}: unknown step {kind!r}", hint="one of " + ", ".join(_STEP_KINDS)
        )
    return str(kind), body


def _templates(kind: str, body: Any, n: int) -> list[Mapping[str, Any]]:
    if kind == "phase":
        if not isinstance(body, str) or not body.strip():
            raise UserError(f"workflow step {n}: phase needs a name")
        return []
    if kind == "run":
        return [_mapping(body, n, "run")]
    if kind == "all" and isinstance(body, list):
        _count(body, n)
        return [_mapping(b, n, "all") for b in body]
    body = _mapping(body, n, kind)
    _items_field(body.get("items"), n)
    if kind == "all":
        extra = sorted(set(body) - {"items", "child"})
        if extra:
            raise UserError(f"workflow step {n}: all has an unknown field {extra[0]!r}")
        return [_mapping(body.get("child"), n, "all.child")]
    extra = sorted(set(body) - {"items", "stages"})
    if extra:
        raise UserError(f"workflow step {n}: pipeline has an unknown field {extra[0]!r}")
    stages = body.get("stages")
    if not isinstance(stages, list) or not stages:
        raise UserError(f"workflow step {n}: pipeline needs a non-empty list of stages")
    return [_mapping(s, n, "pipeline stage") for s in stages]


def _mapping(value: object, n: int, what: str) -> Mapping[str, Any]:
    if not isinstance(value, Mapping):
        raise UserError(f"workflow step {n}: {what} must be a mapping of child options")
    return value


def _count(items: list[Any], n: int) -> None:
    if len(items) > MAX_ITEMS:
        raise UserError(f"workflow step {n}: {len(items)} items, more than {MAX_ITEMS} in one step")


def _items_field(items: object, n: int) -> None:
    if isinstance(items, list):
        _count(items, n)
        return
    if isinstance(items, str) and re.fullmatch(r"\{args\.[A-Za-z_][\w-]*\}", items):
        return
    raise UserError(f"workflow step {n}: items must be a list or one {{args.NAME}}")


def _check_template(template: Mapping[str, Any], n: int) -> None:
    for value in template.values():
        for name in _names(value):
            if name.split(".")[0] not in _ROOTS:
                raise UserError(
                    f"workflow step {n}: unknown placeholder {{{name}}}",
                    hint="placeholders: {args.X} {item} {index} {prev.output} {results.KEY.output}",
                )
    filled = _fill(template, _Dummy())
    try:
        child_options(filled)
    except UserError as exc:
        raise UserError(f"workflow step {n}: {exc.message}", hint=exc.hint) from None


def _names(value: object) -> list[str]:
    if isinstance(value, str):
        return [m.group(1) for m in _FIELD.finditer(value) if m.group(1)]
    if isinstance(value, Mapping):
        return [n for v in value.values() for n in _names(v)]
    if isinstance(value, list):
        return [n for v in value for n in _names(v)]
    return []


class _Dummy(dict[str, Any]):
    """What a placeholder reads while the document is only being checked."""

    def lookup(self, name: str) -> str:
        return "x"


class _Scope(dict[str, Any]):
    def lookup(self, name: str) -> Any:
        parts = name.split(".")
        value: Any = self
        for part in parts:
            if isinstance(value, ChildResult):
                value = value.to_json() | {"output": value.output, "data": value.data}
            if isinstance(value, Mapping) and part in value:
                value = value[part]
            elif isinstance(value, list) and part.isdigit() and int(part) < len(value):
                value = value[int(part)]
            else:
                raise UserError(f"placeholder {{{name}}} names nothing ({part!r} is unknown)")
        return value


def _fill(value: Any, scope: Any) -> Any:
    if isinstance(value, str):
        whole = _FIELD.fullmatch(value)
        if whole and whole.group(1) and not isinstance(scope, _Dummy):
            got = scope.lookup(whole.group(1))
            if not isinstance(got, str | int | float | bool):
                return got  # a list or mapping stays itself (items, schema parts)

        def one(m: re.Match[str]) -> str:
            if m.group(0) == "{{":
                return "{"
            if m.group(0) == "}}":
                return "}"
            got = scope.lookup(m.group(1))
            return got if isinstance(got, str) else _text(got)

        return _FIELD.sub(one, value)
    if isinstance(value, Mapping):
        return {k: _fill(v, scope) for k, v in value.items()}
    if isinstance(value, list):
        return [_fill(v, scope) for v in value]
    return value


def _text(value: Any) -> str:
    import json

    return json.dumps(value, ensure_ascii=False)


async def run_document(runs: Runs, doc: Mapping[str, Any], args: Mapping[str, Any]) -> Any:
    check_document(doc)
    defaults = dict(doc.get("defaults") or {})
    results: dict[str, ChildResult] = {}

    def scope(**more: Any) -> _Scope:
        return _Scope({"args": dict(args), "results": results, **more})

    def child(template: Mapping[str, Any], s: _Scope) -> dict[str, Any]:
        return _fill({**defaults, **template}, s)

    for n, step in enumerate(doc["steps"], 1):
        kind, body = _step(step, n)
        if kind == "phase":
            runs.phase(body)
        elif kind == "run":
            r = await runs.run(**child(body, scope()))
            results[r.key] = r
        elif kind == "all":
            if isinstance(body, list):
                items = [child(b, scope()) for b in body]
            else:
                values = _items(body["items"], scope(), n)
                items = [child(body["child"], scope(item=v, index=i)) for i, v in enumerate(values)]
            for r in await runs.all(items):
                results[r.key] = r
        else:
            values = _items(body["items"], scope(), n)
            stages = body["stages"]

            def stage_of(template: Mapping[str, Any]) -> Any:
                def stage(pair: tuple[int, Any], prev: Any) -> dict[str, Any]:
                    index, item = pair
                    return child(template, scope(item=item, index=index, prev=prev))

                return stage

            ends = await runs.pipeline(list(enumerate(values)), *(stage_of(t) for t in stages))
            for r in ends:
                if isinstance(r, ChildResult):
                    results[r.key] = r
    return {k: r.to_json() for k, r in runs.results.items()}


def _items(raw: Any, s: _Scope, n: int) -> list[Any]:
    values = _fill(raw, s)
    if not isinstance(values, list):
        raise UserError(
            f"workflow step {n}: items must come to a list, not {type(values).__name__}"
        )
    _count(values, n)
    return values
