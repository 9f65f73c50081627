"""The operations table: every capability is a typed function, declared once as an `Op`, and the
fronts generate their part from it (the command line's subcommand, the MCP tool, the agent
tool a job's model calls). Each front keeps only its renderer.

An op is `fn(caller, /, positionals..., *, options...) -> result`: the caller says who asks
(its owner keys, directory, whether it is a person at a terminal or a model), the arguments
are checked against the schema its signature gives (opschema.py) before it runs, and the
result is plain data (a dict, or a TypedDict the MCP tool declares as its output). A refusal
is a `UserError`, which every front shows as one line.

Ops are grouped in nouns, one per command (`schedule`, `bg`, `mission`), which features
declare in their own modules and name from their `plugin.py` (`register_noun`): a process
imports only the nouns it runs or lists. A noun whose ops have no tool name of their own is
offered to models as one tool with an `action` argument (the MCP tool `schedule`).
"""

from __future__ import annotations

import importlib

TYPE_CHECKING = False  # registering costs no import: plugin.py runs in every process
if TYPE_CHECKING:
    from collections.abc import Callable, Mapping
    from typing import Any, Literal

    Power = Literal["", "command", "write"]


class Op:
    """One capability and what the fronts need to offer it.

    verb     its word after the noun on the command line ("create", "state get"; "" when
             the noun is the whole command, as `wait` is)
    help     the command line's one-line help (default: the description)
    cli      offered on the command line
    tool     its own tool name ("bg_run"); "" when it is an action of its noun's tool;
             None: no tool (a person's command only)
    action   its `action` in the noun's tool (default: the verb, "state get" -> state_get)
    reads    it only reads (the MCP readOnlyHint)
    power    None: no job's model may call it; otherwise it is in the agent tool table and
             a job's permission tier must grant this power ("" needs none, "command" runs a
             command on the host, "write" writes into the caller's tree)
    scope    "child": offered to thread jobs only; "job": to any of our jobs only
    text     what a model reads of the result (default: the result as compact JSON)
    yields   the agent's turn ends after it (the answer comes later as an event)
    core     in the MCP server's always-offered set
    guidance a line for the agent tools' shared system-prompt section
    owner    the command line takes `--owner KEY`: a person may act for any owner's inbox
    """

    __slots__ = (
        "about", "action", "cli", "core", "fn", "guidance", "help", "owner", "power", "reads",
        "scope", "text", "tool", "verb", "yields",
    )  # fmt: skip

    def __init__(
        self,
        fn: Callable[..., Any],
        verb: str = "",
        *,
        help: str = "",
        cli: bool = True,
        tool: str | None = "",
        action: str = "",
        reads: bool = False,
        power: Power | None = None,
        scope: Literal["any", "child", "job"] = "any",
        text: Callable[[Any], str] | None = None,
        yields: bool = False,
        core: bool = False,
        guidance: str = "",
        about: str = "",
        owner: bool = False,
    ) -> None:
        self.owner = owner
        self.fn, self.verb, self.help, self.cli, self.tool = fn, verb, help, cli, tool
        self.action = action or verb.replace(" ", "_").replace("-", "_")
        self.reads, self.power, self.scope, self.text = reads, power, scope, text
        self.yields, self.core, self.guidance, self.about = yields, core, guidance, about

    @property
    def description(self) -> str:
        """The tool's description: `about`, else the docstring's first paragraph."""
        if self.about:
            return self.about
        from specialists.base.opschema import signature

        return signature(self.fn).description

    def __repr__(self) -> str:
        return f"Op({self.fn.__qualname__}, {self.verb!r})"


class Noun:
    """A command and its ops. `tool`: the one tool its ops without a tool name of their own
    make (their verbs as `action`), described by `about`; `power`, `guidance` and `core` as
    for an op's own tool."""

    __slots__ = ("about", "core", "guidance", "help", "name", "ops", "power", "tool")

    def __init__(
        self,
        name: str,
        help: str,
        ops: tuple[Op, ...],
        *,
        tool: str = "",
        about: str = "",
        power: Power | None = None,
        guidance: str = "",
        core: bool = False,
    ) -> None:
        self.name, self.help, self.ops, self.tool, self.about = name, help, ops, tool, about
        self.power, self.guidance, self.core = power, guidance, core

    def op(self, verb: str) -> Op:
        return next(o for o in self.ops if o.verb == verb)

    def grouped(self) -> tuple[Op, ...]:
        """The ops its one tool offers (by action)."""
        return tuple(o for o in self.ops if o.tool == "") if self.tool else ()


_NOUNS: dict[str, str] = {}  # command -> "package.module:ATTRIBUTE" of its Noun


def register_noun(command: str, ref: str) -> None:
    """Name a noun (`ref`: "package.module:ATTRIBUTE"); imported when first asked for."""
    _NOUNS[command] = ref


def registered() -> tuple[str, ...]:
    return tuple(_NOUNS)


def noun(command: str) -> Noun | None:
    ref = _NOUNS.get(command)
    if ref is None:
        return None
    module, _, attribute = ref.partition(":")
    found: Noun = getattr(importlib.import_module(module), attribute)
    return found


def nouns() -> list[Noun]:
    """Every registered noun (imports their modules: for listings, never a fast path)."""
    return [n for n in (noun(c) for c in _NOUNS) if n is not None]


# --- running an op from JSON arguments (the MCP server, the agent tools, the pi sidecar) -----


def tool_schema(noun: Noun) -> dict[str, Any]:
    """The input schema of a noun's one tool: `action`, and every action's arguments."""
    from specialists.base.opschema import obj, signature

    props: dict[str, Any] = {
        "action": {"type": "string", "enum": [o.action for o in noun.grouped()]}
    }
    for op in noun.grouped():
        for p in signature(op.fn).params:
            if not p.cli.only:  # no default: one action's would be given to every action
                props.setdefault(p.name, {k: v for k, v in p.schema.items() if k != "default"})
    return obj(props, ("action",))


def op_schema(op: Op, *, person: bool = False) -> dict[str, Any]:
    """The op's input schema; a person's (the command line) has their options too."""
    from specialists.base.opschema import obj, signature

    sig = signature(op.fn)
    if not person:
        return sig.input_schema()
    return obj({p.name: p.schema for p in sig.params}, [p.name for p in sig.params if p.required])


def pick(noun: Noun, arguments: Mapping[str, Any]) -> tuple[Op, dict[str, Any]]:
    """The op a call of the noun's tool names by `action`, and the rest of its arguments."""
    from specialists.base.errors import UserError
    from specialists.base.reader import suggest

    values = dict(arguments)
    action = values.pop("action", None)
    ops = {o.action: o for o in noun.grouped()}
    if not isinstance(action, str) or action not in ops:  # a list or an object is no key
        near = suggest(str(action), ops) if isinstance(action, str) else None
        said = (
            "missing required argument 'action'"
            if action is None
            else (f"unknown action {str(action)[:40]!r}")
        )
        hint = f"did you mean {near!r}?" if near else "one of " + ", ".join(ops)
        raise UserError(f"{noun.tool}: {said}", hint=hint)
    return ops[action], values


def call_json(
    op: Op, caller: Any, arguments: Mapping[str, Any] | None, name: str | None = ""
) -> Any:
    """Check `arguments` (a JSON object, untrusted) against the op's schema and run it. A
    refusal names the tool (`name`; None: a model's own call, which knows it)."""
    from specialists.base.reader.arguments import check_arguments

    said = "" if name is None else (name or op.tool or op.verb)
    values = check_arguments(
        said, op_schema(op, person=getattr(caller, "person", False)), arguments
    )
    return call(op, caller, values)


def call(op: Op, caller: Any, values: Mapping[str, Any]) -> Any:
    """Run `op` with checked values, named as in its schema."""
    from specialists.base.opschema import signature

    params = signature(op.fn).params
    positional = [values.get(p.name, p.default) for p in params if p.positional]
    taken = {p.name for p in params if p.positional}
    return op.fn(caller, *positional, **{k: v for k, v in values.items() if k not in taken})


def as_data(result: Any) -> dict[str, Any]:
    """An op's result as a JSON object."""
    if isinstance(result, dict):
        return result
    to_dict = getattr(result, "to_dict", None)
    if to_dict is not None:
        return dict(to_dict())
    raise TypeError(f"bug: an op returned {type(result).__name__}, not a JSON object")


def said(op: Op, result: Any) -> str:
    """What a model (or the MCP text block) reads of a result."""
    if op.text is not None:
        return op.text(result)
    import json

    return json.dumps(as_data(result), ensure_ascii=False, separators=(",", ":"))
