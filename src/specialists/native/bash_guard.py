"""The bash guard (seed 001 R-B1..R-B5): would this command hold the agent's turn?

It spots the idioms that block until someone stops them or for a long time (long sleeps,
followers, watch loops, dev servers, attached `docker compose up`, endless loops) and says
to use `bg_run` or the `sleep` tool instead. Every front asks it (native/guards.py).

How a command is read, so that wrapping it changes nothing:

- It is tokenized as the shell would (quoted text is never scanned), heredoc bodies are
  dropped, and it is split into simple commands at `;`, `&&`, `||`, `|`, newlines, `( )`,
  `$( )` and backticks; `if`/`then`/`do`/`{`/`!` and the like in front of a command are
  skipped. A command sent to the background by its own `&` does not hold the turn, unless a
  later `wait` waits for it.
- Wrappers that run the rest in the foreground are looked through: `env` (its options and
  assignments), `nice`, `nohup`, `setsid` (unless `-f`), `stdbuf`, `time`, `command`,
  `exec`, `ionice`, `chrt`, `taskset`, `sudo`, `doas`, `flock`, `xargs`, `unbuffer`, `eval`,
  and a shell's `-c SCRIPT` (bash, sh, zsh, dash, ksh, ash, busybox sh), read again whole,
  a few levels deep.
- `timeout D CMD` bounds CMD: it blocks for at most D, so it is flagged only when D is at
  least the sleep limit (`timeout 300 sleep 299`), never when D is short (`timeout 5 tail -f`).
- The code given to an interpreter (`python -c`, `node -e`, `perl -e`, `ruby -e`,
  `php -r`) is searched for the same idioms in that language: a sleep of a literal duration
  at or over the limit (`time.sleep(60)`, `setTimeout(f, 60000)`, `sleep 60`), a server
  (`serve_forever`, `.listen(`), `setInterval` without `clearInterval`, and an endless loop
  (`while True`, `for(;;)`, `loop do`) with no `break` in the code.

A command it cannot read (unbalanced quotes) is left alone: the shell itself refuses it.
"""

from __future__ import annotations

import re
import shlex

from specialists.base.tuples import NamedTuple

DEFAULT_SLEEP_LIMIT_S = 20
MAX_NESTING = 4  # `bash -c "sh -c '...'"`: how many scripts deep a command is read
MAX_COMMAND_CHARS = 100_000  # longer commands are read up to here

_SEPARATORS = frozenset(";&|()`\n")
_DURATION = re.compile(r"(\d+(?:\.\d+)?)([smhd]?)")
_UNIT_S = {"": 1, "s": 1, "m": 60, "h": 3600, "d": 86400}
_JS_RUNNERS = frozenset({"npm", "pnpm", "yarn", "bun"})
_DEV_SCRIPTS = frozenset({"dev", "start", "serve"})
_ASSIGNMENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*=.*")
_KEYWORDS = frozenset({"{", "}", "!", "if", "then", "do", "else", "elif", "fi", "done", "esac"})
_SHELLS = frozenset({"bash", "sh", "zsh", "dash", "ksh", "ash", "mksh", "yash"})
_HEREDOC = re.compile(r"<<-?\s*(['\"]?)([A-Za-z_][\w.-]*)\1")
_REDIRECT_AND = re.compile(r"&>>?|>&")  # `2>&1`, `&>log`: not a background `&`

# Wrappers: the options that take a value (so the value is not read as the command).
_WRAPPERS: dict[str, frozenset[str]] = {
    "env": frozenset({"-u", "--unset", "-C", "--chdir", "-S", "--split-string"}),
    "nice": frozenset({"-n", "--adjustment"}),
    "nohup": frozenset(),
    "setsid": frozenset(),
    "stdbuf": frozenset({"-i", "-o", "-e", "--input", "--output", "--error"}),
    "time": frozenset({"-f", "--format", "-o", "--output"}),
    "command": frozenset(),
    "builtin": frozenset(),
    "exec": frozenset({"-a"}),
    "ionice": frozenset({"-c", "-n", "-p", "-P", "-u", "--class", "--classdata"}),
    "sudo": frozenset({"-u", "-g", "-h", "-p", "-C", "-D", "-r", "-t", "-U", "--user"}),
    "doas": frozenset({"-u", "-C"}),
    "unbuffer": frozenset(),
    "xargs": frozenset(
        {"-n", "-L", "-l", "-P", "-I", "-i", "-d", "-a", "-E", "-e", "-s", "--max-args"}
        | {"--max-lines", "--max-procs", "--replace", "--delimiter", "--arg-file", "--eof"}
        | {"--max-chars", "--process-slot-var"}
    ),
    "timeout": frozenset({"-s", "--signal", "-k", "--kill-after"}),
    "chrt": frozenset(),
    "taskset": frozenset(),
    "flock": frozenset({"-w", "--timeout", "-E", "--conflict-exit-code"}),
}
# A value (a priority, a CPU mask, a lock file) before the command, after any options.
_POSITIONAL_FIRST = {"chrt": 1, "taskset": 1, "flock": 1}


class BashVerdict(NamedTuple):
    """What the guard found: `pattern` is None when the command may run as it is."""

    pattern: str | None
    reason: str = ""

    @property
    def flagged(self) -> bool:
        return self.pattern is not None


def classify_bash(command: str, *, sleep_limit_s: float = DEFAULT_SLEEP_LIMIT_S) -> BashVerdict:
    """Would `command` block the agent's turn? (R-B2, R-B3)"""
    pattern = _in_script(command[:MAX_COMMAND_CHARS], sleep_limit_s, 0)
    return BashVerdict(pattern, block_reason(pattern)) if pattern else BashVerdict(None)


def block_reason(pattern: str) -> str:
    """R-B1/R-B5: name the better tool and the cheap escape."""
    return (
        f"Blocked: `{pattern}` would hold this turn until it ends. Start it with bg_run "
        "(returns at once; you get a job_exit event, and job_match events for watch "
        "patterns), or use the sleep tool to wait, then end your turn. If this is a false "
        'positive, set bash.guard to "warn" in .specialists/config.toml ([bash] guard = '
        '"warn") and retry.'
    )


# --- a script: its simple commands ----------------------------------------------------------


def _in_script(script: str, limit: float, depth: int) -> str | None:
    if depth > MAX_NESTING:
        return None
    # `$(...)` and backticks run, quoted or not; not in a quoted heredoc's body (`<<'EOF'`)
    for inner in _substitutions(_without_heredocs(script, quoted_only=True)):
        found = _in_script(inner, limit, depth + 1)
        if found:
            return found
    tokens = _tokens(script)
    if tokens is None:
        return None  # unbalanced quotes: the shell itself will refuse it
    may_end = "break" in tokens or "exit" in tokens or "return" in tokens
    waiting: list[str] = []  # patterns sent to the background, for a later `wait`
    for words, background in _simple_commands(tokens):
        pattern = _in_command(words, limit, depth, may_end)
        if background:
            waiting += [pattern] if pattern else []
        elif pattern:
            return pattern
        elif words and words[0] == "wait" and waiting:
            return f"{waiting[0]} & wait"
    return None


def _substitutions(script: str) -> list[str]:
    """The text of each `$( ... )` and `` `...` `` outside single quotes (the shell runs
    them even inside double quotes, where the tokens hide them)."""
    found: list[str] = []
    i, quote, n = 0, "", len(script)
    while i < n:
        c = script[i]
        if c == "\\" and quote != "'":
            i += 2
            continue
        if quote == "'":
            quote = "" if c == "'" else quote
        elif c == "'" and not quote:
            quote = "'"
        elif c == '"':
            quote = "" if quote == '"' else '"'
        elif c == "`":
            end = script.find("`", i + 1)
            if end < 0:
                break
            found.append(script[i + 1 : end])
            i = end
        elif script.startswith("$(", i) and not script.startswith("$((", i):
            level, j = 1, i + 2
            while j < n and level:
                level += {"(": 1, ")": -1}.get(script[j], 0)
                j += 1
            found.append(script[i + 2 : j - 1])
            i = j - 1
        i += 1
    return found


def _endless(head: str, rest: list[str]) -> str | None:
    """`while true`, `while :`, `while sleep N`, `until false`, `for ((;;))`: a loop that only
    a signal ends (one whose script holds a `break`, `exit` or `return` may end itself)."""
    if head == "while" and rest[:1] in (["true"], [":"], ["sleep"]):
        return f"while {rest[0]}"
    if head == "until" and rest[:1] == ["false"]:
        return "until false"
    if head == "for" and rest[:1] and re.fullmatch(r"\(\(\s*;\s*;\s*\)\)", rest[0]):
        return "for ((;;))"
    return None


def _tokens(command: str) -> list[str] | None:
    text = _REDIRECT_AND.sub(">", _without_heredocs(command))
    lexer = shlex.shlex(text, posix=True, punctuation_chars=";&|()`\n")
    lexer.whitespace = " \t\r"  # a newline separates commands: it is punctuation here
    lexer.whitespace_split = True
    lexer.commenters = ""
    try:
        return list(lexer)
    except ValueError:
        return None


def _without_heredocs(command: str, *, quoted_only: bool = False) -> str:
    """A heredoc's body is data for a command, never commands: dropped up to its end line.
    quoted_only: only the bodies the shell does not expand (`<<'EOF'`, `<<"EOF"`)."""
    if "<<" not in command:
        return command
    lines, out, end = command.split("\n"), [], None
    for line in lines:
        if end is not None:
            if line.strip() == end:
                end = None
            continue
        out.append(line)
        m = _HEREDOC.search(line)
        if m and (m.group(1) or not quoted_only):
            end = m.group(2)
    return "\n".join(out)


def _sends_to_background(separator: str) -> bool:
    return separator.startswith("&") and not separator.startswith("&&")


def _simple_commands(tokens: list[str]) -> list[tuple[list[str], bool]]:
    """(words, sent to the background) for each simple command, in order. `for ((;;))` is
    kept as one command (its separators are its own)."""
    out: list[tuple[list[str], bool]] = []
    words: list[str] = []
    for token in tokens:
        if words[-1:] == ["for"] and token.startswith("(("):  # `((;;));` is one token
            end = token.find("))") + 2 if "))" in token else len(token)
            words.append(token[:end])
            if token[end:]:
                out.append((words, _sends_to_background(token[end:])))
                words = []
        elif token and set(token) <= _SEPARATORS:
            out.append((words, _sends_to_background(token)))
            words = []
        else:
            words.append(token)
    out.append((words, False))
    return [(w, bg) for w, bg in out if w]


# --- one simple command: wrappers looked through ------------------------------------------


def _in_command(words: list[str], limit: float, depth: int, may_end: bool) -> str | None:
    bound: float | None = None  # a `timeout` in front: it blocks at most this long
    for _ in range(32):  # wrappers of wrappers, bounded
        while words and (words[0] in _KEYWORDS or _ASSIGNMENT.fullmatch(words[0])):
            words = words[1:]
        if not words:
            return None
        head, rest = _name(words[0]), words[1:]
        if head in ("while", "until", "for"):
            loop = None if may_end else _endless(head, rest)
            if loop or head == "for":
                return _bounded(loop, bound, limit)
            words = rest  # the condition is a command of its own
            continue
        if head in _SHELLS or (head == "busybox" and rest[:1] in (["sh"], ["ash"])):
            script = _shell_script(rest[1:] if head == "busybox" else rest)
            found = _in_script(script, limit, depth + 1) if script is not None else None
            return _bounded(found, bound, limit)
        if head == "eval":
            return _bounded(_in_script(" ".join(rest), limit, depth + 1), bound, limit)
        code = _interpreter_code(head, rest)
        if code is not None:
            return _bounded(_in_code(head, code, limit), bound, limit)
        if head == "setsid" and any(a in ("-f", "--fork") for a in rest if a.startswith("-")):
            return None  # forks: returns at once
        if head == "command" and rest[:1] and rest[0] in ("-v", "-V"):
            return None  # only looks the name up
        if head == "timeout":
            inner, seconds = _after_timeout(rest)
            bound = seconds if bound is None else min(bound, seconds)
            words = inner
            continue
        if head == "env" and any(a in ("-S", "--split-string") for a in rest):
            split = rest[rest.index("-S" if "-S" in rest else "--split-string") + 1 :]
            return _bounded(_in_script(" ".join(split), limit, depth + 1), bound, limit)
        if head in _WRAPPERS or head in _POSITIONAL_FIRST:
            words = _after_options(head, rest)
            continue
        return _bounded(_blocking_pattern(head, rest, limit, bound), bound, limit)
    return None


def _bounded(pattern: str | None, bound: float | None, limit: float) -> str | None:
    """A blocking pattern under `timeout D` holds the turn only when D reaches the limit."""
    if pattern is None or bound is None:
        return pattern
    return f"timeout {bound:g} {pattern}" if bound >= limit else None


def _name(word: str) -> str:
    return word.rsplit("/", 1)[-1]


def _after_options(head: str, rest: list[str]) -> list[str]:
    """The command a wrapper runs: its options (and their values) and assignments skipped."""
    takes_value = _WRAPPERS.get(head, frozenset())
    i = 0
    while i < len(rest):
        word = rest[i]
        if word == "--":
            i += 1
            break
        if head == "env" and (_ASSIGNMENT.fullmatch(word) or word == "-"):
            i += 1
        elif word.startswith("-") and len(word) > 1:
            i += 2 if word in takes_value else 1  # `-n 5`; `-n5`, `--adjustment=5` are one
        else:
            break
    return rest[i + _POSITIONAL_FIRST.get(head, 0) :]


def _after_timeout(rest: list[str]) -> tuple[list[str], float]:
    inner = _after_options("timeout", rest)
    if not inner:
        return [], float("inf")
    seconds = _seconds(inner[0])
    return inner[1:], seconds if seconds > 0 else float("inf")  # `timeout $T ...`: unknown


def _shell_script(rest: list[str]) -> str | None:
    """The SCRIPT of `sh [options] -c SCRIPT`, or None (a script file: not read)."""
    i = 0
    while i < len(rest):
        word = rest[i]
        if word in ("-o", "+o", "-O", "+O", "--rcfile", "--init-file"):
            i += 2
            continue
        if word.startswith("-") and not word.startswith("--") and "c" in word[1:]:
            return rest[i + 1] if i + 1 < len(rest) else None
        if not word.startswith(("-", "+")):
            return None
        i += 1
    return None


# --- what blocks ------------------------------------------------------------------------------


def _blocking_pattern(head: str, rest: list[str], limit: float, bound: float | None) -> str | None:
    if head == "sleep" and rest:
        seconds = sum(_seconds(arg) for arg in rest)
        if seconds >= limit and (bound is None or bound >= limit):
            return f"sleep {' '.join(rest)}"
    if head == "tail" and any(
        a in ("-f", "-F", "--follow") or a.startswith("--follow=") or _short(a, "fF") for a in rest
    ):
        return "tail -f"
    if head in ("journalctl", "dmesg") and any(
        a in ("-f", "--follow", "-w") or _short(a, "f") for a in rest
    ):
        return f"{head} -f"
    if (
        head in ("docker", "kubectl", "podman")
        and rest[:1] == ["logs"]
        and any(a in ("-f", "--follow") for a in rest)
    ):
        return f"{head} logs -f"
    if head == "watch" and rest:
        return "watch"
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
    if _is_python(head) and rest[:2] == ["-m", "http.server"]:
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


def _short(arg: str, letters: str) -> bool:
    """A cluster of short flags holding one of `letters` (`-fn`, `-nF`), not a long option."""
    return arg.startswith("-") and not arg.startswith("--") and any(c in arg[1:] for c in letters)


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


# --- interpreters: the code they are given --------------------------------------------------

_CODE_FLAGS = {"python": ("-c",), "node": ("-e", "--eval", "-p", "--print")}
_CODE_FLAGS |= {"perl": ("-e", "-E"), "ruby": ("-e",), "php": ("-r",)}
_NUMBER = r"([0-9][0-9_]*(?:\.[0-9]+)?(?:e[0-9]+)?)"
_SLEEP_CALL = {
    "python": re.compile(r"\b(?:\w+\.)?sleep\s*\(\s*" + _NUMBER + r"\s*\)"),
    "perl": re.compile(r"\bsleep\s*\(?\s*" + _NUMBER),
    "ruby": re.compile(r"\bsleep\s*\(?\s*" + _NUMBER),
    "php": re.compile(r"\bsleep\s*\(\s*" + _NUMBER + r"\s*\)"),
}
_JS_TIMEOUT = re.compile(r"\bsetTimeout\s*\((?:[^()]|\([^()]*\))*,\s*" + _NUMBER + r"\s*\)")
_ENDLESS = {
    "python": re.compile(r"\bwhile\s*\(?\s*(?:True|1)\s*\)?\s*:"),
    "node": re.compile(r"\bwhile\s*\(\s*(?:true|1)\s*\)|\bfor\s*\(\s*;\s*;\s*\)"),
    "perl": re.compile(r"\bwhile\s*\(\s*1\s*\)|\bfor\s*\(\s*;\s*;\s*\)"),
    "ruby": re.compile(r"\bloop\s+do\b|\bloop\s*\{|\bwhile\s+true\b"),
    "php": re.compile(r"\bwhile\s*\(\s*(?:true|1)\s*\)|\bfor\s*\(\s*;\s*;\s*\)"),
}


def _language(head: str) -> str | None:
    if _is_python(head):
        return "python"
    if head in ("node", "nodejs"):
        return "node"
    name = head.rstrip("0123456789.")
    return name if name in ("perl", "ruby", "php") else None


def _is_python(head: str) -> bool:
    return re.fullmatch(r"python(?:\d+(?:\.\d+)?)?", head) is not None


def _interpreter_code(head: str, rest: list[str]) -> str | None:
    """The code of `python -c CODE`, `node -e CODE`, ...; None for a script file or a REPL."""
    language = _language(head)
    if language is None:
        return None
    flags = _CODE_FLAGS[language]
    for i, word in enumerate(rest):
        if word in flags or (
            language in ("perl", "ruby") and re.fullmatch(r"-[a-zA-Z]*[eE]", word)
        ):
            return rest[i + 1] if i + 1 < len(rest) else None  # `perl -le CODE` too
        if language == "python" and word.startswith("-c") and len(word) > 2:
            return word[2:]  # `python -c'code'`
        if not word.startswith("-"):
            return None
    return None


def _in_code(head: str, code: str, limit: float) -> str | None:
    language = _language(head) or ""
    sleep = _SLEEP_CALL.get(language)
    found = sleep.search(code) if sleep is not None else None
    if found and _number(found.group(1)) >= limit:
        return " ".join(found.group(0).split())
    if language == "node":
        timer = _JS_TIMEOUT.search(code)
        if timer and _number(timer.group(1)) >= limit * 1000:
            return f"setTimeout(..., {timer.group(1)})"
        if "setInterval" in code and "clearInterval" not in code:
            return "setInterval"
        if re.search(r"\.listen\s*\(", code):
            return ".listen("
    if language == "python" and re.search(r"\bserve_forever\s*\(|\bsignal\.pause\s*\(", code):
        return "serve_forever()" if "serve_forever" in code else "signal.pause()"
    endless = _ENDLESS.get(language)
    if endless is not None and not re.search(r"\bbreak\b|\blast\b|\bexit\b", code):
        loop = endless.search(code)
        if loop:
            return " ".join(loop.group(0).split())
    return None


def _number(text: str) -> float:
    try:
        return float(text.replace("_", ""))
    except ValueError:
        return 0.0
