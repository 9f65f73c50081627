"""The `top` app: the fleet as a tree, a feed pane for the selected job, keys to act.

Every `refresh_s` the fleet re-reads what changed (fleet/jobsource.py) and the table is
patched cell by cell; it is rebuilt only when rows appear, vanish or move. The feed pane
follows the selected job's events by byte offset every `feed_s`.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any, ClassVar, Literal

from rich.text import Text
from textual.app import App, ComposeResult
from textual.binding import Binding, BindingType
from textual.events import Resize
from textual.widgets import DataTable, Footer, RichLog, Static

from specialists.fronts.fleet.feed import FeedTail, feed_parts
from specialists.fronts.fleet.model import Fleet
from specialists.fronts.fleet.rows import Row, printable_block
from specialists.fronts.fleet.tree import TreeLine
from specialists.fronts.tui import commands
from specialists.fronts.tui.cells import (
    COLUMNS,
    STATUS_STYLE,
    activity_width,
    row_cells,
    row_title,
    summary_text,
)
from specialists.fronts.tui.screens import AskMessage, Confirm, ResultView
from specialists.store.jobs import JobStore

MIN_WIDTH = 60
MIN_HEIGHT = 12
FEED_LINES = 1000
EVENT_STYLE = {
    "error": "red",
    "done": "green",
    "cancelled": "magenta",
    "toolcall": "yellow",
    "stalled": "bold red",
    "needs_attention": "bold red",
}

CSS = """
#summary { height: 1; background: $primary-background; padding: 0 1; }
#jobs { height: 3fr; }
#feed-title { height: 1; background: $panel; padding: 0 1; }
#feed { height: 2fr; }
#too-small { display: none; content-align: center middle; height: 1fr; }
Screen.-small #summary, Screen.-small #jobs, Screen.-small #feed-title,
Screen.-small #feed, Screen.-small Footer { display: none; }
Screen.-small #too-small { display: block; }
.dialog { width: 80%; height: auto; max-height: 80%; border: thick $accent;
          background: $surface; padding: 1 2; }
.dialog.result { height: 80%; }
.dialog-title { text-style: bold; margin-bottom: 1; }
AskMessage, Confirm, ResultView { align: center middle; }
"""


class _KeyedText(Text):
    """The job cell: text that knows which row it belongs to."""

    def __init__(self, row_key: str, text: str, style: str = "") -> None:
        super().__init__(text, style=style)
        self.row_key = row_key


class JobTable(DataTable[Text]):
    """The jobs table; in a row cursor Home and End go to the first and last job."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("home", "scroll_top", "first", show=False),
        Binding("end", "scroll_bottom", "last", show=False),
    ]


class TopApp(App[None]):
    CSS = CSS
    TITLE = "specialists top"
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("q", "quit", "quit"),
        Binding("s", "stop", "stop"),
        Binding("t", "steer", "steer"),
        Binding("f", "follow_up", "follow up"),
        Binding("i", "interrupt", "interrupt"),
        Binding("o", "result", "result"),
        Binding("a", "toggle_active", "active only"),
    ]

    def __init__(
        self,
        store: JobStore,
        fleet: Fleet,
        *,
        root_label: str,
        refresh_s: float = 0.5,
        feed_s: float = 0.25,
        now_ms: Callable[[], int] | None = None,
        active_only: bool = False,
    ) -> None:
        super().__init__()
        self.store = store
        self.fleet = fleet
        self.root_label = root_label
        self.refresh_s = refresh_s
        self.feed_s = feed_s
        self.now_ms = now_ms or (lambda: int(time.time() * 1000))
        self.active_only = active_only
        self._keys: list[str] = []  # row keys in table order
        self._cells: dict[str, dict[str, str]] = {}  # what each row shows now
        self._drawn: dict[str, Row] = {}  # the row each line was drawn from
        self._selected: str | None = None
        self._feed: FeedTail | None = None
        self._feed_key: str | None = None
        self._activity = 60  # width of the activity column, set from the terminal's

    def compose(self) -> ComposeResult:
        yield Static(id="summary")
        yield JobTable(id="jobs", cursor_type="row", zebra_stripes=True)
        yield Static(id="feed-title")
        yield RichLog(id="feed", max_lines=FEED_LINES, markup=False, wrap=False, highlight=False)
        yield Static(id="too-small")
        yield Footer()

    def on_mount(self) -> None:
        self._activity = activity_width(self.size.width)
        self._add_columns()
        self.tick()
        self.set_interval(self.refresh_s, self.tick)
        self.set_interval(self.feed_s, self.poll_feed)

    def _add_columns(self) -> None:
        table = self.query_one("#jobs", DataTable)
        if table.columns:
            return
        for key, label, width in COLUMNS:
            table.add_column(label, key=key, width=self._activity if key == "activity" else width)

    # --- refresh ------------------------------------------------------------------------

    def tick(self) -> None:
        """Re-read what changed, patch the table, update the summary line."""
        if not self.is_running:  # a tick while the app closes: its widgets are going away
            return
        self.fleet.refresh()
        self._sync_table(self.fleet.tree(active_only=self.active_only))
        summary = summary_text(self.root_label, self.fleet.totals(), self.active_only)
        self.query_one("#summary", Static).update(Text(summary))
        self._follow(self._current_row())

    def _sync_table(self, lines: list[TreeLine]) -> None:
        table = self.query_one("#jobs", DataTable)
        now = self.now_ms()
        keys = [line.row.key for line in lines]
        if keys != self._keys:
            self._reshape(table, lines, keys, now)
        for line in lines:
            # Only a row that changed, or an active one (its elapsed time moves), is redrawn.
            if line.row is self._drawn.get(line.row.key) and not line.row.active:
                continue
            old = self._cells[line.row.key]
            new = row_cells(line, now, self._activity)
            self._drawn[line.row.key] = line.row
            if new == old:
                continue
            for column, value in new.items():
                if value != old.get(column):
                    table.update_cell(line.row.key, column, self._styled(line.row, column, value))
            self._cells[line.row.key] = new

    def _reshape(self, table: DataTable, lines: list[TreeLine], keys: list[str], now: int) -> None:
        """Rows came, went or moved: remove and add only those, then put them in order.

        Clearing and refilling a table of 1,000 rows costs far more than a sort, so only a
        table that changed almost whole is rebuilt.
        """
        wanted = set(keys)
        gone = [key for key in self._keys if key not in wanted]
        fresh = [line for line in lines if line.row.key not in self._cells]
        if not self._keys or len(gone) + len(fresh) > len(keys) // 2:
            table.clear()
            self._cells, self._drawn = {}, {}
        else:
            for key in gone:
                table.remove_row(key)
                del self._cells[key]
                self._drawn.pop(key, None)
        for line in lines:
            if line.row.key in self._cells:
                continue
            cells = row_cells(line, now, self._activity)
            self._cells[line.row.key] = cells
            self._drawn[line.row.key] = line.row
            styled = [self._styled(line.row, column, cells[column]) for column, _, _ in COLUMNS]
            table.add_row(*styled, key=line.row.key)
        position = {key: index for index, key in enumerate(keys)}
        table.sort("job", key=lambda cell: position[cell.row_key])
        self._keys = keys
        if self._selected in position:
            table.move_cursor(row=position[self._selected], animate=False)
        elif keys:
            self._selected = keys[min(table.cursor_row, len(keys) - 1)]

    @staticmethod
    def _styled(row: Row, column: str, value: str) -> Text:
        if column == "job":  # it carries its row's key, so the table can be sorted by it
            return _KeyedText(row.key, value, style="red" if row.kind == "damaged" else "")
        if column == "status":
            return Text(value, style=STATUS_STYLE.get(row.status, ""))
        if column == "flags":
            return Text(value, style="bold red")
        return Text(value)

    def _current_row(self) -> Row | None:
        return self.fleet.rows.get(self._selected) if self._selected else None

    def on_data_table_row_highlighted(self, event: DataTable.RowHighlighted) -> None:
        # Read the cursor at handling time: a rebuild queues highlights of rows it passed.
        table = self.query_one("#jobs", DataTable)
        if 0 <= table.cursor_row < len(self._keys):
            self._selected = self._keys[table.cursor_row]
            self._follow(self._current_row())

    def on_data_table_row_selected(self, event: DataTable.RowSelected) -> None:
        self.action_result()

    def on_resize(self, event: Resize) -> None:
        small = event.size.width < MIN_WIDTH or event.size.height < MIN_HEIGHT
        self.screen.set_class(small, "-small")
        need = f"{MIN_WIDTH}×{MIN_HEIGHT}"
        have = f"{event.size.width}×{event.size.height}"
        self.query_one("#too-small", Static).update(
            Text(f"terminal too small for top\n{have}, needs {need}", justify="center")
        )
        width = activity_width(event.size.width)
        table = self.query_one("#jobs", DataTable)
        if width != self._activity and table.columns:  # fixed once added: add them anew
            self._activity = width
            table.clear(columns=True)
            self._add_columns()
            self._keys = []
            self.tick()

    # --- feed ---------------------------------------------------------------------------

    def _follow(self, row: Row | None) -> None:
        key = row.key if row is not None and row.job_id else None
        title = self.query_one("#feed-title", Static)
        title.update(Text(row_title(row)) if row is not None else Text("feed · no job selected"))
        if key == self._feed_key:
            return
        self._feed_key = key
        self.query_one("#feed", RichLog).clear()
        self._feed = None
        if row is not None and row.job_id:
            self._feed = FeedTail(self.store.events_path(row.job_id))
            self.poll_feed()

    def poll_feed(self) -> None:
        if self._feed is None or not self.is_running:
            return
        events = self._feed.poll()
        if not events:
            return
        log = self.query_one("#feed", RichLog)
        row = self._current_row()
        started = row.started_at_ms if row is not None else 0
        if not started and events:
            first_ts = events[0].get("ts")
            started = first_ts if isinstance(first_ts, int) else 0
        for ev in events[-FEED_LINES:]:
            clock, kind, detail = feed_parts(ev, started)
            style = EVENT_STYLE.get(str(ev.get("event")), "bold")
            log.write(Text.assemble((clock, "dim"), " ", (f"{kind:<11}", style), " ", detail))

    # --- actions ------------------------------------------------------------------------

    def _target(self) -> Row | None:
        row = self._current_row()
        if row is None or not row.job_id:
            self.notify("no job selected", severity="warning", markup=False)
            return None
        return row

    def action_stop(self) -> None:
        row = self._target()
        if row is None or row.job_id is None:
            return
        job_id = row.job_id

        def answered(yes: bool | None) -> None:
            if yes:
                self.notify(f"stopping job {job_id}…", markup=False)
                self._in_thread(lambda: commands.stop(self.store, job_id))

        self.push_screen(Confirm(f"Stop job {job_id} ({row.title}, {row.status})?"), answered)

    def action_steer(self) -> None:
        self._ask("steer", "steer")

    def action_follow_up(self) -> None:
        self._ask("follow_up", "follow up")

    def _ask(self, kind: Literal["steer", "follow_up"], verb: str) -> None:
        row = self._target()
        if row is None or row.job_id is None:
            return
        job_id = row.job_id

        def answered(text: str | None) -> None:
            if text is not None:
                self._in_thread(lambda: commands.send(self.store, job_id, kind, text))

        self.push_screen(AskMessage(f"{verb} job {job_id} ({row.title})"), answered)

    def action_interrupt(self) -> None:
        row = self._target()
        if row is not None and row.job_id is not None:
            job_id = row.job_id
            self._in_thread(lambda: commands.interrupt(self.store, job_id))

    def action_result(self) -> None:
        row = self._target()
        if row is None or row.job_id is None:
            return
        self._show(commands.result(self.store, row.job_id))

    def action_toggle_active(self) -> None:
        self.active_only = not self.active_only
        self.tick()

    def _in_thread(self, work: Callable[[], Any]) -> None:
        """Run a blocking action (a stop waits for the job to end) off the UI thread."""

        def run() -> None:
            outcome = work()
            self.call_from_thread(self._show, outcome)

        self.run_worker(run, thread=True, group="actions", exit_on_error=False)

    def _show(self, outcome: commands.Notice | commands.ResultText) -> None:
        if isinstance(outcome, commands.ResultText):
            self.push_screen(ResultView(outcome.title, printable_block(outcome.text)))
        else:
            self.notify(outcome.text, severity=outcome.severity, markup=False, timeout=6)
            self.tick()
