"""A command generated from a noun of the operations table (base/ops.py): one subcommand per
op, its positional-only parameters as positionals and its keyword-only ones as `--options`,
`--json` on each, and the renderer of the noun's `cmd_<noun>.py` (if it has one) for text.

A renderer is `(result, args) -> exit code`, looked up as `TEXT[verb]` in the noun's module
(by the noun's name for a noun that is one command, as `wait` is); without one, the text a
model reads of the result (the op's `text`), else the result as JSON. `--json` prints the
result as one JSON document (docs/cli.md, "Output") and asks the module only for the exit
code (`CODE[verb]`), unless the renderer prints JSON itself (`OWN_JSON`: `timer set --wait`
prints the timer once it fired). The module may add flags of the command line's own
(`FLAGS[verb]`: `--wait`), adjust the parsed arguments first (`PREPARE[verb]`: `-` for
stdin), and run the op again from its renderer (`args.again(**more)`, once the person
confirmed: such verbs are its `ASKS`, which take no `--json`). An op without a verb beside
others is what the noun alone runs (`claims` lists, `claims release` releases).
"""

from __future__ import annotations

import importlib
import json
import sys
from pathlib import Path
from types import SimpleNamespace
from typing import TYPE_CHECKING, Any

from specialists.base.opschema import Param, signature
from specialists.fronts.cli.commands import COMMANDS

if TYPE_CHECKING:
    import argparse
    from collections.abc import Callable

    from specialists.base.ops import Noun, Op
    from specialists.native.agent_tools import Caller
    from specialists.project import Project


def add_noun(sub: argparse._SubParsersAction, noun: Noun, module: str | None) -> None:
    """The noun's command, its ops under it (`state get`: two words, two levels)."""
    p = sub.add_parser(noun.name, help=noun.help, description=_sentence(noun.help))
    ops = [o for o in noun.ops if o.cli]
    bare = next((o for o in ops if not o.verb), None)  # the noun alone runs it: `claims`
    if bare is not None:
        _add_op(p, noun, bare, module)
        ops.remove(bare)
    parsers: dict[tuple[str, ...], argparse.ArgumentParser] = {(): p}
    subs: dict[tuple[str, ...], argparse._SubParsersAction] = {}
    for op in ops:
        words = tuple(op.verb.split())
        for depth in range(1, len(words) + 1):
            path = words[:depth]
            if path in parsers:
                continue
            above = path[:-1]
            if above not in subs:
                dest = "_".join(("verb", *above))
                subs[above] = parsers[above].add_subparsers(
                    dest=dest, metavar="VERB", required=bool(above) or bare is None
                )
            if depth < len(words):  # a word that groups verbs: `state` of `state get`
                under = sorted(
                    {o.verb.split()[depth] for o in ops if tuple(o.verb.split()[:depth]) == path}
                )
                help_ = " | ".join(under)
            else:
                help_ = op.help or _first_sentence(signature(op.fn).description)
            parsers[path] = subs[above].add_parser(
                path[-1], help=help_, description=_sentence(help_)
            )
        _add_op(parsers[words], noun, op, module)


def _add_op(p: argparse.ArgumentParser, noun: Noun, op: Op, module: str | None) -> None:
    groups: dict[str, Any] = {}  # `Cli(group=)`: at most one of them (`--days` | `--all`)
    for param in signature(op.fn).params:
        if not param.cli.hidden:
            group = param.cli.group
            if group and group not in groups:
                groups[group] = p.add_mutually_exclusive_group()
            _add_param(groups[group] if group else p, param)
    if op.owner:
        p.add_argument(
            "--owner",
            metavar="KEY",
            help="whose inbox: job-<id>, claude-<session>, ... (default: this session, else "
            "cli-<user>)",
        )
    renderers = importlib.import_module(module) if module is not None else None
    extra = getattr(renderers, "FLAGS", {}).get(op.verb or noun.name)
    if extra is not None:
        extra(p)
    # FLAGS may say what its JSON is; a verb that asks the person first (ASKS) has none.
    if "--json" in p._option_string_actions or op.verb in getattr(renderers, "ASKS", ()):
        p.set_defaults(json=False)
    else:
        p.add_argument("--json", action="store_true", help="machine-readable output")
    p.set_defaults(run=lambda args, project: run(noun, op, module, args, project))


# Names the parser itself uses: a parameter of one of these is kept under `<name>_`.
TAKEN = frozenset({"command", "run", "json", "verb", "owner", "help"})


def _dest(param: Param) -> str:
    return f"{param.name}_" if param.name in TAKEN else param.name


def _add_param(p: Any, param: Param) -> None:
    import argparse

    from specialists.fronts.cli.values import DURATION_HELP, Duration

    if param.keys:  # a JSON object of known keys: an option for each
        for key in param.keys:
            _add_param(p, key._replace(name=f"{param.name}__{key.name}", cli=_flag_of(key)))
        return
    kw: dict[str, Any] = {"help": param.help or None}
    if param.cli.metavar:
        kw["metavar"] = param.cli.metavar
    if param.kind == "choice":
        kw["choices"] = param.choices
    elif param.cli.parse is not None:
        kw["type"] = _parsed_by(param.cli.parse)
    elif param.kind in ("int", "float") and not param.seconds:
        kw["type"] = int if param.kind == "int" else float
    elif param.seconds:
        kw["type"] = Duration
        kw["help"] = f"{param.help or 'a duration'} ({DURATION_HELP})"
        kw.setdefault("metavar", "DURATION")
    if param.positional:
        if param.kind == "list" or param.cli.words:
            kw["nargs"] = "+" if param.required else "*"
        elif not param.required:
            kw["nargs"] = "?"
        kw.setdefault("metavar", param.name)
        p.add_argument(_dest(param), **kw)
        return
    flags = _flags(param)
    kw["dest"], kw["default"] = _dest(param), _option_default(param)
    if param.kind not in ("bool", "choice") and param.cli.const is None:
        kw.setdefault("metavar", flags[0].lstrip("-").upper().replace("-", "_"))
    if param.cli.const is not None:
        kw.pop("choices", None)
        kw.update(action="store_const", const=param.cli.const)
    elif param.kind == "bool":
        kw["action"] = "store_true" if not param.default else argparse.BooleanOptionalAction
    elif param.kind == "list":
        kw["action"] = "append"
    else:
        kw["required"] = param.required
    p.add_argument(*flags, **kw)


def _flags(param: Param) -> tuple[str, ...]:
    return param.cli.flags or (f"--{param.name.replace('_', '-')}",)


def _option_default(param: Param) -> Any:
    """What an option's dest holds when the option is not given."""
    if param.cli.const is not None:
        return param.default
    if param.kind == "bool":
        return bool(param.default)
    return None if param.kind == "list" else param.default


def _flag_of(key: Param) -> Any:
    from specialists.base.opschema import Cli

    return key.cli if key.cli.flags else Cli(f"--{key.name.replace('_', '-')}")


# --- plain forms: what a person types most, read without argparse -------------------------


def plain_op_args(args: list[str]) -> SimpleNamespace | None:
    """The namespace the parser would give a command of the operations table typed in a
    plain form (`stop JOB`, `steer JOB words --recover`, `timer list --json`): positionals,
    `--flag`s and `--option value`s of text, numbers or choices; None for anything else
    (`--help`, `--opt=value`, an abbreviation, a list, a duration, options of one group, a
    module's own flags, any mistake), which argparse reads and refuses as before. A person
    is spared argparse's import and parser, about a tenth of such a command's CPU
    (benchmarks/bench_ops.py; tests/unit/test_plain_ops.py holds the namespaces equal)."""
    from specialists.base import ops
    from specialists.project import boot

    boot()  # the features name their nouns
    noun = ops.noun(args[0])
    if noun is None:
        return None
    module = f"specialists.fronts.cli.cmd_{COMMANDS[args[0]]}" if COMMANDS.get(args[0]) else None
    offered = [o for o in noun.ops if o.cli]
    bare = next((o for o in offered if not o.verb), None)
    verbs = sorted((o for o in offered if o.verb), key=lambda o: -len(o.verb.split()))
    op = next((o for o in verbs if args[1 : 1 + len(o.verb.split())] == o.verb.split()), None)
    if op is None and (bare is None or (verbs and args[1:] and args[1][:1] != "-")):
        return None  # no verb where one must be: argparse names the choices
    chosen = op or bare
    assert chosen is not None
    renderers = importlib.import_module(module) if module is not None else None
    flags = getattr(renderers, "FLAGS", {})
    above = bare if op is not None else None  # the noun's own op: its options' defaults too
    if (chosen.verb or noun.name) in flags or (above is not None and noun.name in flags):
        return None  # the module's own flags
    own = _slots(chosen, renderers)
    slots = [*(_slots(above, renderers) if above is not None else []), *own]
    if None in slots:
        return None
    values: dict[str, Any] = {s.dest: s.default for s in slots if s is not None}
    values.update(command=args[0], run=lambda a, p: run(noun, chosen, module, a, p))
    if verbs:
        said = chosen.verb.split()
        values["verb"] = said[0] if said else None
        values.update({"_".join(("verb", *said[:i])): said[i] for i in range(1, len(said))})
    if not _read_plain(args[1 + len(chosen.verb.split()) :], [s for s in own if s], values):
        return None
    return SimpleNamespace(**values)


class _Slot:
    """One argument of a plain form: its dest, its flag ("" for a positional), the value
    argparse gives it when absent, and whether a plain form reads a value for it."""

    __slots__ = ("default", "dest", "flag", "param", "readable")

    def __init__(
        self, dest: str, flag: str, default: Any, param: Param | None, readable: bool = True
    ) -> None:
        self.dest, self.flag, self.default, self.param = dest, flag, default, param
        self.readable = readable


def _slots(op: Op, renderers: Any) -> list[_Slot | None]:
    """The op's arguments as the parser adds them (their defaults alike); None for a
    positional a plain form does not read (a list, zero words or more) or a JSON object's
    keys. An option it does not read (a list, a duration, a parsed value, a constant, a
    `--no-` flag, one of a group) is unreadable: naming it leaves the line to argparse."""
    slots: list[_Slot | None] = []
    for param in signature(op.fn).params:
        if param.cli.hidden:
            continue
        readable = param.kind in ("str", "int", "float", "bool", "choice") and not (
            param.seconds or param.cli.parse or param.cli.const is not None or param.cli.group
            or (param.kind == "bool" and param.default)
        )  # fmt: skip
        if param.keys or (param.positional and not readable):
            slots.append(None)
        elif param.positional:
            if param.cli.words and not param.required:
                slots.append(None)  # zero words or more
            else:
                slots.append(_Slot(_dest(param), "", None, param))
        else:
            default = _option_default(param)
            slots.extend(_Slot(_dest(param), f, default, param, readable) for f in _flags(param))
    if op.owner:
        slots.append(_Slot("owner", "--owner", None, None))
    asks = op.verb in getattr(renderers, "ASKS", ())  # it asks the person first: no --json
    slots.append(_Slot("json", "" if asks else "--json", False, None))
    return slots


def _read_plain(words: list[str], slots: list[_Slot], values: dict[str, Any]) -> bool:
    """Fill `values` from the words after the verb as argparse would; False for anything a
    plain form does not take."""
    options = {s.flag: s for s in slots if s.flag}
    waiting = [s for s in slots if not s.flag and s.param is not None]
    given: set[str] = set()
    running: list[str] | None = None  # a words positional's words, while they run
    took = False  # a positional was read since the last option
    rest = iter(words)
    for word in rest:
        if word.startswith("-"):
            slot = options.get(word)
            if slot is None or not slot.readable:
                return False
            if took:  # argparse ends the positionals' run here: the optional ones stay empty
                waiting = [s for s in waiting if s.param is not None and s.param.required]
            running, took = None, False
            given.add(slot.dest)
            if slot.dest == "json" or (slot.param is not None and slot.param.kind == "bool"):
                values[slot.dest] = True
                continue
            value = next(rest, None)
            if value is None or value.startswith("-") or "\x00" in value:
                return False
            typed = value if slot.param is None else _typed(slot.param, value)
            if typed is None:
                return False
            values[slot.dest] = typed
        elif running is not None:
            running.append(word)
        elif waiting:
            slot = waiting.pop(0)
            took = True
            given.add(slot.dest)
            assert slot.param is not None
            typed = _typed(slot.param, word)
            if typed is None:
                return False
            if slot.param.cli.words:
                running = values[slot.dest] = [typed]
            else:
                values[slot.dest] = typed
        else:
            return False
    return all(s.dest in given for s in slots if s.param is not None and s.param.required)


def _typed(param: Param, text: str) -> Any:
    """A word as the parser's type reads it; None where argparse would refuse it."""
    if param.kind == "choice":
        return text if text in param.choices else None
    if param.kind in ("int", "float"):
        try:
            return int(text) if param.kind == "int" else float(text)
        except ValueError:
            return None
    return text


def run(noun: Noun, op: Op, module: str | None, args: argparse.Namespace, project: Project) -> int:
    """Check the arguments as every front does, run the op for the person, render."""
    from specialists.base.ops import call_json, said

    renderers = importlib.import_module(module) if module is not None else None
    key = op.verb or noun.name  # how the noun's module names the op
    prepare = getattr(renderers, "PREPARE", {}).get(key)
    if prepare is not None:  # a command line's own conveniences (`-` for stdin)
        prepare(args)
    values: dict[str, Any] = {}
    for param in signature(op.fn).params:
        if param.cli.hidden and not hasattr(args, _dest(param)):  # PREPARE may set one
            continue
        if param.keys:
            keys = {k.name: getattr(args, f"{param.name}__{k.name}") for k in param.keys}
            if given := {k: v for k, v in keys.items() if v is not None}:
                values[param.name] = given
            continue
        value = getattr(args, _dest(param), None)
        if param.cli.words and isinstance(value, list):
            value = " ".join(value)
        if value is None:
            value = [] if param.kind == "list" and param.required is False else None
        if param.seconds and value is not None:  # argparse read it (a plain form has none)
            from specialists.fronts.cli.values import Duration

            if isinstance(value, Duration):
                if (warning := value.warning(_flag(param))) is not None:
                    print(f"warning: {warning}", file=sys.stderr)
                value = value.ms / 1000
        elif value is not None and param.kind in ("object", "any"):
            value = _json(param, value)
        if value is not None:
            values[param.name] = value
    words = " ".join(w for w in (noun.name, op.verb) if w)
    caller = person(
        project, getattr(args, "owner", None) if op.owner else None,
        getattr(renderers, "OWNER", None),
    )  # fmt: skip

    def again(verb: str | None = None, **more: Any) -> Any:
        """The op again with `more` (`confirmed` once the person said yes), or another verb's
        op of the noun with just `more` (`merge start --wait` runs `merge run`)."""
        said_before = len(caller.warnings)
        try:
            if verb is not None:
                return call_json(noun.op(verb), caller, more, f"{noun.name} {verb}")
            return call_json(op, caller, {**values, **more}, words)
        finally:
            for warning in caller.warnings[said_before:]:
                _warn(warning)

    args.again = again
    config = len(caller.warnings)  # the settings' warnings: noise beside a refusal's line
    try:
        result = call_json(op, caller, values, words)
    except BaseException:
        del caller.warnings[:config]
        raise
    finally:
        for warning in caller.warnings:
            _warn(warning)
    if args.json and key not in getattr(renderers, "OWN_JSON", ()):
        print(json.dumps(_data(result), ensure_ascii=False))
        code = getattr(renderers, "CODE", {}).get(key)
        return 0 if code is None else int(code(result))
    render = getattr(renderers, "TEXT", {}).get(key)
    if render is None:  # what a model reads of it, else the JSON
        print(
            said(op, result) if op.text else json.dumps(_data(result), ensure_ascii=False, indent=1)
        )
        return 0
    return int(render(result, args))


def person(
    project: Project, owner: str | None = None, choose: Callable[[str | None], str] | None = None
) -> Caller:
    """The caller of an op typed at a terminal: the owner given, the session around it, else
    the person (`choose`: a noun's own rule for that)."""
    from specialists.events.owners import check_owner_dir
    from specialists.fronts.cli.cmd_events import owner_key
    from specialists.native.agent_tools import Caller
    from specialists.native.tool_settings import load_settings

    settings, unknown, problem = load_settings(project.root)
    keys = tuple(project.owner.keys)
    main = choose(owner) if choose is not None else owner_key(owner, project)
    check_owner_dir(project.store.root, main)
    caller = Caller(
        project.store.root, main, Path.cwd(), settings=settings, person=True,
        keys=(main,) if owner is not None else keys,
    )  # fmt: skip
    caller.warnings.extend(unknown)  # unknown config keys: named, ignored
    if problem:
        caller.warnings.append(problem)
    return caller


def _parsed_by(parse: Callable[[str], Any]) -> Callable[[str], Any]:
    """An argparse type from a parser that raises our errors: a bad value is argparse's one
    usage line (exit 2), never a traceback."""
    import argparse

    from specialists.base.errors import SpecialistsError

    def typed(text: str) -> Any:
        try:
            return parse(text)
        except SpecialistsError as exc:
            raise argparse.ArgumentTypeError(exc.one_line()) from None

    typed.__name__ = getattr(parse, "__name__", "value")
    return typed


def _data(result: Any) -> Any:
    from specialists.base.ops import as_data

    return as_data(result) if not isinstance(result, list) else result


def _json(param: Param, text: Any) -> Any:
    from specialists.base.errors import UserError
    from specialists.base.reader import Invalid, load_json

    if not isinstance(text, str):
        return text
    try:
        return load_json(text, _flag(param), max_nodes=None)
    except Invalid as exc:
        raise UserError(
            f"{_flag(param)} {text[:60]!r} is not JSON we take: {exc.problem}",
            hint="quote text as JSON ('\"ship it\"')",
        ) from None


def _flag(param: Param) -> str:
    if param.positional:
        return param.name.upper()
    return _flags(param)[0]


def _warn(text: str) -> None:
    from specialists.base.display import display_line

    print(f"warning: {display_line(text, 400)}", file=sys.stderr)


def _first_sentence(text: str) -> str:
    head = text.split(". ")[0].rstrip(".")
    return head[:1].lower() + head[1:] if head[:1].isupper() and head[1:2].islower() else head


def _sentence(text: str) -> str:
    return text[:1].upper() + text[1:] + ("" if text.endswith(".") else ".")
