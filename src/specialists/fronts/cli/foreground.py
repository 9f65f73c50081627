"""What a foreground run shows: the answer on stdout as it streams, progress on stderr.

Agent text reaches a terminal here, so on a terminal it goes through `for_terminal`
(escape sequences shown, not obeyed); piped into a file or another program, the answer
keeps its exact text, and stderr shows the agent's words as `says` lines (excerpts, as in
the feed) so a person watching stderr still sees them.
"""

from __future__ import annotations

import sys

from specialists.base.display import display_line, for_terminal
from specialists.events.lines import event_detail, feed_name

TYPE_CHECKING = False  # no `typing` at run time: `result` shows its answer through `shown`
if TYPE_CHECKING:
    from typing import TextIO

_QUIET_EVENTS = {"run_end", "follow_up_sent"}


def _is_tty(stream: TextIO) -> bool:
    try:
        return stream.isatty()
    except (AttributeError, ValueError):
        return False


def shown(text: str, stream: TextIO) -> str:
    """Agent text as it may be written to `stream`: made safe when that is a terminal."""
    return for_terminal(text) if _is_tty(stream) else text


class ForegroundObserver:
    def __init__(self, *, quiet: bool = False) -> None:
        self.quiet = quiet
        self.streamed = False
        self._ends_with_newline = True
        self._job_id = ""

    def on_text(self, text: str) -> None:
        if self.quiet or not text:
            return
        sys.stdout.write(shown(text, sys.stdout))
        sys.stdout.flush()
        self.streamed = True
        self._ends_with_newline = text.endswith("\n")

    def on_event(self, event: dict[str, object]) -> None:
        kind = str(event.get("event"))
        if kind == "starting":
            self._job_id = str(event.get("id", ""))
        if self.quiet or kind in _QUIET_EVENTS:
            return
        if kind == "text" and _is_tty(sys.stdout):
            return  # its words are on the terminal already, as they streamed on stdout
        self._end_line()
        detail = event_detail(event)
        prefix = f"[{self._job_id}] " if self._job_id else ""
        print(f"{prefix}{feed_name(event):<11} {detail}".rstrip(), file=sys.stderr, flush=True)

    def finish(self, result: str | None) -> None:
        """Print the answer if it was not streamed (runners that give it whole)."""
        if not self.streamed and result:
            sys.stdout.write(shown(result, sys.stdout))
            self._ends_with_newline = result.endswith("\n")
        self._end_line()

    def fail(self, message: str) -> None:
        """The run's one failure line on stderr."""
        print(f"error: {display_line(message, 500)}", file=sys.stderr, flush=True)

    def _end_line(self) -> None:
        if not self._ends_with_newline:
            sys.stdout.write("\n")
            self._ends_with_newline = True
        sys.stdout.flush()
