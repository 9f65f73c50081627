"""What a foreground run shows: the answer on stdout as it streams, progress on stderr."""

from __future__ import annotations

import sys

from specialists.cli.render import event_detail

_QUIET_EVENTS = {"run_end", "follow_up_sent"}


class ForegroundObserver:
    def __init__(self, *, quiet: bool = False) -> None:
        self.quiet = quiet
        self.streamed = False
        self._ends_with_newline = True
        self._job_id = ""

    def on_text(self, text: str) -> None:
        if self.quiet or not text:
            return
        sys.stdout.write(text)
        sys.stdout.flush()
        self.streamed = True
        self._ends_with_newline = text.endswith("\n")

    def on_event(self, event: dict[str, object]) -> None:
        kind = str(event.get("event"))
        if kind == "starting":
            self._job_id = str(event.get("id", ""))
        if self.quiet or kind in _QUIET_EVENTS:
            return
        if not self._ends_with_newline:
            sys.stdout.write("\n")
            sys.stdout.flush()
            self._ends_with_newline = True
        detail = event_detail(event)
        prefix = f"[{self._job_id}] " if self._job_id else ""
        print(f"{prefix}{kind:<12} {detail}".rstrip(), file=sys.stderr, flush=True)

    def finish(self, result: str | None) -> None:
        """Print the answer if it was not streamed (runners that give it whole)."""
        if not self.streamed and result:
            sys.stdout.write(result)
            self._ends_with_newline = result.endswith("\n")
        if not self._ends_with_newline:
            sys.stdout.write("\n")
        sys.stdout.flush()
