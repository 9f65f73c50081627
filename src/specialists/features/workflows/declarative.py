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

A `gate` and an `acceptance` are the exception: a command is shell code, and no text from an
argument or an agent's answer may become shell code. They are taken as written (no
placeholder, no brace escape) and a placeholder in them is refused; the values reach the
command as environment variables it names: `$SPECIALISTS_ARG_<NAME>` (each argument, upper
case, other characters as `_`; a list or mapping as JSON), `$SPECIALISTS_ITEM`,
`$SPECIALISTS_INDEX` and `$SPECIALISTS_KEY` (the child's key).
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from typing import Any

from specialists.base.errors import UserError
from specialists.base.reader import Invalid, check_tree
from specialists.features.workflows.options import (
    MAX_CHILDREN,
    MAX_ITEMS,
    check_unicode,
    child_options,
)
from specialists.features.workflows.results import ChildResult
from specialists.features.workflows.runtime import Runs

_FIELD = re.compile(r"\{\{|\}\}|\{([A-Za-z_][\w.-]*)\}")
_ROOTS = ("args", "item", "index", "prev", "results")
_STEP_KINDS = ("run", "all", "pipeline", "phase")
_TOP = frozenset({"steps", "defaults", "concurrency", "name", "description"})


MAX_STEPS = 1000  # a run launches at most MAX_CHILDREN children anyway
MAX_DOCUMENT_NODES = 100_000  # values, each use of a YAML alias counted


def check_document(doc: Mapping[str, Any], args: Mapping[str, Any] | None = None) -> None:
    """The whole document, before any child launches: its shape and options, then its keys
    (each unique; one that every item would share is refused), its references (`{results.K}`
    names an earlier child, `{prev}` a pipeline's earlier stage, `{item}` and `{index}` an
    items step) and what it would launch (at most MAX_CHILDREN children; with `args`, the
    lengths of `{args.X}` item lists count too)."""
    if not isinstance(doc, Mapping):
        raise UserError("a declarative workflow must be a mapping with steps")
    try:  # an inline document (MCP) was parsed by another's parser: its size is ours to bound
        check_tree(doc, "the workflow document", max_nodes=MAX_DOCUMENT_NODES)
    except Invalid as exc:
        raise UserError(exc.problem) from None
    check_unicode(doc, "the workflow document")
    extra = sorted(str(k) for k in doc if k not in _TOP)
    if extra:
        raise UserError(
            f"workflow: unknown field {extra[0]!r}", hint="fields: " + ", ".join(sorted(_TOP))
        )
    steps = doc.get("steps")
    if not isinstance(steps, list) or not steps:
        raise UserError("workflow: steps must be a non-empty list")
    if len(steps) > MAX_STEPS:
        raise UserError(f"workflow: {len(steps)} steps, more than {MAX_STEPS}")
    defaults = doc.get("defaults") or {}
    if not isinstance(defaults, Mapping):
        raise UserError("workflow: defaults must be a mapping of child options")
    for n, template in child_templates(doc):
        _check_template(template, n)
    _check_keys(doc, args)


def _check_keys(doc: Mapping[str, Any], args: Mapping[str, Any] | None) -> None:
    defaults = doc.get("defaults") or {}
    earlier: list[tuple[str, re.Pattern[str]]] = []  # (key as written, what it may become)
    launches = 0
    for n, step in enumerate(doc["steps"], 1):
        kind, body = _step(step, n)
        templates = [{**defaults, **t} for t in _templates(kind, body, n)]
        # One child per item: a pipeline, or `all` over items (a list of children is not).
        per_item = kind == "pipeline" or (kind == "all" and not isinstance(body, list))
        count = _item_count(body.get("items"), args) if per_item else None
        launches += (
            (count if count is not None else 1) * len(templates) if per_item else len(templates)
        )
        if launches > MAX_CHILDREN:
            raise UserError(
                f"workflow step {n}: the document would launch more than {MAX_CHILDREN} "
                "children, the most one run may launch"
            )
        mine: list[tuple[str, re.Pattern[str]]] = []
        for stage, template in enumerate(templates):
            key = template.get("key")
            if not isinstance(key, str):
                continue  # child_options said why already
            names = _names(key)
            if per_item and count != 1 and not any(_root(x) in ("item", "index") for x in names):
                raise UserError(
                    f"workflow step {n}: key {key!r} would be the same for every item",
                    hint='name the item in it, e.g. key: "lint-{item}" or "part-{index}"',
                )
            for name in _names(_options(template)):
                _check_reference(name, n, earlier, kind, stage, per_item, args)
            # Certain duplicates only: the same fixed key anywhere, or the same key template
            # twice in one step (every item would make it twice). The runtime catches the rest.
            clash = [k for k, _p in mine] if names else [k for k, _p in (*earlier, *mine)]
            if key in clash:
                raise UserError(f"workflow step {n}: duplicate workflow key {key!r}")
            mine.append((key, _key_pattern(key)))
        earlier += mine


def _root(name: str) -> str:
    return name.split(".")[0]


def _key_pattern(key: str) -> re.Pattern[str]:
    """What a key as written may become once its placeholders are filled."""
    parts, last = [], 0
    for m in _FIELD.finditer(key):
        parts.append(re.escape(key[last : m.start()]))
        parts.append(".+" if m.group(1) else re.escape(m.group(0)[0]))
        last = m.end()
    parts.append(re.escape(key[last:]))
    return re.compile("".join(parts), re.DOTALL)


def _check_reference(
    name: str,
    n: int,
    earlier: list[tuple[str, re.Pattern[str]]],
    kind: str,
    stage: int,
    per_item: bool,
    args: Mapping[str, Any] | None,
) -> None:
    root, parts = _root(name), name.split(".")
    if root == "args" and args is not None and (len(parts) < 2 or parts[1] not in args):
        raise UserError(
            f"workflow step {n}: {{{name}}} names an argument that was not given",
            hint="given: " + (", ".join(sorted(map(str, args))) or "none"),
        )
    if root in ("item", "index") and not per_item:
        raise UserError(
            f"workflow step {n}: {{{name}}} is only known in a step over items",
            hint='items: [...] or items: "{args.LIST}" with child: or stages:',
        )
    if root == "prev" and not (kind == "pipeline" and stage > 0):
        raise UserError(
            f"workflow step {n}: {{{name}}} is only known in a pipeline's second stage on",
            hint="{prev.output} is the item's previous stage",
        )
    if root == "results":
        if len(parts) < 2:
            raise UserError(
                f"workflow step {n}: {{{name}}} names no child", hint="{results.KEY.output}"
            )
        if not any(pattern.fullmatch(parts[1]) for _key, pattern in earlier):
            raise UserError(
                f"workflow step {n}: {{{name}}} names no child of an earlier step "
                f"(no key {parts[1]!r} before step {n})",
                hint="results are known once their step has ended",
            )


def _item_count(items: object, args: Mapping[str, Any] | None) -> int | None:
    if isinstance(items, list):
        return len(items)
    if isinstance(items, str) and args is not None:
        name = items[len("{args.") : -1]
        if name not in args:
            raise UserError(
                f"workflow: items {items} names an argument that was not given",
                hint="given: " + (", ".join(sorted(map(str, args))) or "none"),
            )
        value = args[name]
        if isinstance(value, list):
            if len(value) > MAX_ITEMS:
                raise UserError(
                    f"workflow: argument {items} has {len(value)} items, more than {MAX_ITEMS}"
                )
            return len(value)
    return None


def child_templates(doc: Mapping[str, Any]) -> list[tuple[int, Mapping[str, Any]]]:
    """Every child template of a document, defaults applied, in document order, each with
    the number of its step."""
    defaults = doc.get("defaults") or {}
    found: list[tuple[int, Mapping[str, Any]]] = []
    for n, step in enumerate(doc["steps"], 1):
        kind, body = _step(step, n)
        found += [(n, {**defaults, **t}) for t in _templates(kind, body, n)]
    return found


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


_COMMANDS = ("gate", "acceptance")  # shell code: taken as written, values by environment
_PLACEHOLDER_IN_COMMAND = re.compile(r"(?<!\$)\{(?:" + "|".join(_ROOTS) + r")(?:\.[\w.-]*)?\}")
_VAR_HINT = "$SPECIALISTS_ARG_<NAME>, $SPECIALISTS_ITEM, $SPECIALISTS_INDEX, $SPECIALISTS_KEY"


def _options(template: Mapping[str, Any]) -> dict[str, Any]:
    """The template's options that may hold placeholders: all but its commands."""
    return {k: v for k, v in template.items() if k not in _COMMANDS}


def _check_commands(template: Mapping[str, Any], n: int) -> None:
    for key in _COMMANDS:
        for text in _strings(template.get(key)):
            found = _PLACEHOLDER_IN_COMMAND.search(text)
            if found:
                raise UserError(
                    f"workflow step {n}: {key} takes no placeholder ({found.group(0)}): a "
                    "command never has text pasted into it",
                    hint=f"read the value from the environment: {_VAR_HINT}",
                )


def _strings(value: object) -> list[str]:
    if isinstance(value, str):
        return [value]
    if isinstance(value, Mapping):
        return [t for v in value.values() for t in _strings(v)]
    if isinstance(value, list):
        return [t for v in value for t in _strings(v)]
    return []


def _check_template(template: Mapping[str, Any], n: int) -> None:
    _check_commands(template, n)
    for name in _names(_options(template)):
        if _root(name) not in _ROOTS:
            raise UserError(
                f"workflow step {n}: unknown placeholder {{{name}}}",
                hint="placeholders: {args.X} {item} {index} {prev.output} {results.KEY.output}",
            )
    try:
        child_options(_child(template, _Dummy()))
    except UserError as exc:
        raise UserError(f"workflow step {n}: {exc.message}", hint=exc.hint) from None


def _names(value: object) -> list[str]:
    return [m.group(1) for text in _strings(value) for m in _FIELD.finditer(text) if m.group(1)]


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
            return _plain(scope.lookup(m.group(1)))

        return _FIELD.sub(one, value)
    if isinstance(value, Mapping):
        return {k: _fill(v, scope) for k, v in value.items()}
    if isinstance(value, list):
        return [_fill(v, scope) for v in value]
    return value


def _child(template: Mapping[str, Any], scope: Any) -> dict[str, Any]:
    """The template's options filled in, but its gate and acceptance as written, each command
    given the values it names (`vars`, gates/spec.py) as environment variables."""
    filled: dict[str, Any] = _fill(_options(template), scope)
    values = _command_values(filled.get("key"), scope)
    if template.get("gate") is not None:
        filled["gate"] = _given(template["gate"], values)
    acceptance = template.get("acceptance")
    if isinstance(acceptance, Mapping) and acceptance.get("verify") is not None:
        verify = acceptance["verify"]
        listed = verify if isinstance(verify, list) else [verify]
        filled["acceptance"] = {**acceptance, "verify": [_given(v, values) for v in listed]}
    elif acceptance is not None:
        filled["acceptance"] = acceptance
    return filled


def _command_values(key: object, scope: Any) -> dict[str, str]:
    """Every value a command may read: the arguments, the item and index, the child's key."""
    values: dict[str, str] = {}
    if isinstance(key, str):
        values["SPECIALISTS_KEY"] = key
    if isinstance(scope, _Scope):
        for name, value in (scope.get("args") or {}).items():
            var = "SPECIALISTS_ARG_" + re.sub(r"[^A-Z0-9_]", "_", str(name).upper())[:64]
            values[var] = _plain(value)
        if "item" in scope:
            values["SPECIALISTS_ITEM"] = _plain(scope["item"])
        if "index" in scope:
            values["SPECIALISTS_INDEX"] = str(scope["index"])
    return values


def _given(gate: Any, values: Mapping[str, str]) -> Any:
    """A gate option with the values its command names (only those: a large argument it
    does not read is not put into its environment, and does not change its memo key)."""
    command = gate.get("command") if isinstance(gate, Mapping) else gate
    if not isinstance(command, str):
        return gate  # malformed: the gates room's parser says why
    named = {k: v for k, v in values.items() if k in command}
    if not named:
        return gate
    base = {"command": gate} if isinstance(gate, str) else dict(gate)
    return {**base, "vars": named}


def _plain(value: Any) -> str:
    """A value as text: a string as itself, anything else as JSON."""
    return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)


async def run_document(runs: Runs, doc: Mapping[str, Any], args: Mapping[str, Any]) -> Any:
    check_document(doc, args)
    defaults = dict(doc.get("defaults") or {})
    results: dict[str, ChildResult] = {}

    def scope(**more: Any) -> _Scope:
        return _Scope({"args": dict(args), "results": results, **more})

    def child(template: Mapping[str, Any], s: _Scope) -> dict[str, Any]:
        return _child({**defaults, **template}, s)

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
