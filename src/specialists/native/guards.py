"""Guards every front applies to an agent's tool calls (seed 001 sections 5.2 and 5.4).

- The bash guard (R-B1..R-B5) spots commands that would block the turn (long sleeps,
  followers, watch loops, dev servers, attached `docker compose up`) and says to use
  `bg_run` or `sleep` instead. It tokenizes first, so quoted text is never scanned; a
  command that ends with a lone `&`, or starts with nohup, setsid or timeout, is left alone,
  and so is each part of a list sent to the background by its own `&` (`sleep 300 & echo
  $!` returns at once).
- The oversized-result guard (R-O1..R-O3) spills any tool result over the limit, except
  `read`'s own output, and hands back head, tail and the path.
"""

from __future__ import annotations

import re
import shlex
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from specialists.events.spill import SpillLimits, bound_body

GuardMode = Literal["block", "warn", "off"]
GUARD_MODES: tuple[str, ...] = ("block", "warn", "off")
DEFAULT_SLEEP_LIMIT_S = 20
DEFAULT_BASH_TIMEOUT_S = 180
RESULT_LIMITS = SpillLimits(max_chars=40_000, head_chars=6_000, tail_chars=2_000)

_OPERATORS = frozenset({";", "&&", "||", "|", "&", "|&", ";;", "(", ")", "\n"})
_PREFIXES_THAT_DETACH = frozenset({"nohup", "setsid", "timeout"})
_DURATION = re.compile(r"(\d+(?:\.\d+)?)([smhd]?)")
_UNIT_S = {"": 1, "s": 1, "m": 60, "h": 3600, "d": 86400}
_JS_RUNNERS = frozenset({"npm", "pnpm", "yarn", "bun"})
_DEV_SCRIPTS = frozenset({"dev", "start", "serve"})
_ASSIGNMENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*=.*")


@dataclass(frozen=True)
class BashVerdict:
    """What the guard found: `pattern` is None when the command may run as it is."""

    pattern: str | None
    reason: str = ""

    @property
    def flagged(self) -> bool:
        return self.pattern is not None


def classify_bash(command: str, *, sleep_limit_s: float = DEFAULT_SLEEP_LIMIT_S) -> BashVerdict:
    """Would `command` block the agent's turn? (R-B2, R-B3)"""
    tokens = _tokens(command)
    if tokens is None:
        return BashVerdict(None)  # unbalanced quotes: the shell itself will refuse it
    if tokens and tokens[-1] == "&":
        return BashVerdict(None)
    for simple in _simple_commands(tokens):
        pattern = _blocking_pattern(simple, sleep_limit_s)
        if pattern:
            return BashVerdict(pattern, block_reason(pattern))
    return BashVerdict(None)


def block_reason(pattern: str) -> str:
    """R-B1/R-B5: name the better tool and the cheap escape."""
    return (
        f"Blocked: `{pattern}` would hold this turn until it ends. Start it with bg_run "
        "(returns at once; you get a job_exit event, and job_match events for watch "
        "patterns), or use the sleep tool to wait, then end your turn. If this is a false "
        'positive, set bash.guard to "warn" in .specialists/config.toml ([bash] guard = '
        '"warn") and retry.'
    )


def guard_result(
    tool: str, text: str, spill_dir: Path, *, limits: SpillLimits = RESULT_LIMITS
) -> str:
    """R-O1..R-O3: a tool result over the limit becomes head + path + tail (`read` exempt)."""
    if tool == "read":
        return text
    return bound_body(text, spill_dir, f"{tool}-result", limits)


# --- internals ---------------------------------------------------------------------------


def _tokens(command: str) -> list[str] | None:
    lexer = shlex.shlex(command.replace("\n", " ; "), posix=True, punctuation_chars=";&|()")
    lexer.whitespace_split = True
    lexer.commenters = ""
    try:
        return list(lexer)
    except ValueError:
        return None


def _simple_commands(tokens: list[str]) -> list[list[str]]:
    """The simple commands that run in the foreground (one that a lone `&` ends does not)."""
    out: list[list[str]] = [[]]
    for token in tokens:
        if token == "&":
            out[-1] = []  # sent to the background: it cannot hold the turn
            out.append([])
        elif token in _OPERATORS:
            out.append([])
        else:
            out[-1].append(token)
    return [c for c in out if c]


def _blocking_pattern(words: list[str], sleep_limit_s: float) -> str | None:
    while words and _ASSIGNMENT.fullmatch(words[0]):  # FOO=1 npm run dev
        words = words[1:]
    if not words or words[0] in _PREFIXES_THAT_DETACH:
        return None
    head, rest = words[0].rsplit("/", 1)[-1], words[1:]
    if head == "sleep" and rest:
        seconds = sum(_seconds(arg) for arg in rest)
        if seconds >= sleep_limit_s:
            return f"sleep {' '.join(rest)}"
    if head == "tail" and any(
        a in ("-f", "-F", "--follow") or a.startswith("--follow=") for a in rest
    ):
        return "tail -f"
    if head == "watch" and rest:
        return "watch"
    if head == "while" and rest and rest[0] in ("true", ":"):
        return f"while {rest[0]}"
    if head in _JS_RUNNERS and rest:
        # `npm run dev`, `npm start`; pnpm, yarn and bun also run scripts without `run`.
        via_run = rest[0] == "run" and len(rest) > 1
        script = rest[1] if via_run else rest[0]
        if script in _DEV_SCRIPTS and (via_run or head != "npm" or script == "start"):
            return " ".join([head, *rest[: 2 if via_run else 1]])
    if head == "vite" and not (rest and rest[0] in ("build", "optimize", "--version", "-v")):
        return "vite"
    if head == "next" and rest[:1] == ["dev"]:
        return "next dev"
    if head in ("python", "python3") and rest[:2] == ["-m", "http.server"]:
        return "python -m http.server"
    if head == "php" and "-S" in rest:
        return "php -S"
    if head in ("rails", "bin/rails") and rest[:1] in (["s"], ["server"]):
        return "rails s"
    if head == "docker" and rest[:2] == ["compose", "up"] and not _detached(rest[2:]):
        return "docker compose up"
    if head == "docker-compose" and rest[:1] == ["up"] and not _detached(rest[1:]):
        return "docker compose up"
    return None


def _seconds(arg: str) -> float:
    if arg in ("infinity", "inf"):
        return float("inf")
    m = _DURATION.fullmatch(arg)
    return float(m.group(1)) * _UNIT_S[m.group(2)] if m else 0.0  # `$DELAY`: unknown


def _detached(args: list[str]) -> bool:
    """A true detach flag: -d, --detach, --detach=true (--detach=false does not count)."""
    for arg in args:
        if arg in ("-d", "--detach", "--detach=true"):
            return True
        if arg.startswith("-") and not arg.startswith("--") and "d" in arg[1:]:
            return True  # combined short flags such as -dV
    return False
