"""The modal screens of `top`: ask for a message, confirm a stop, read a result."""

from __future__ import annotations

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical, VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import Input, Label, Static


class AskMessage(ModalScreen[str | None]):
    """One line of text for a steer or follow-up; Enter sends, Escape cancels."""

    BINDINGS = [Binding("escape", "cancel", "cancel")]

    def __init__(self, title: str) -> None:
        super().__init__()
        self._title = title

    def compose(self) -> ComposeResult:
        with Vertical(classes="dialog"):
            yield Label(Text(self._title), classes="dialog-title")
            yield Input(placeholder="message (Enter sends, Escape cancels)", id="message")

    def on_input_submitted(self, event: Input.Submitted) -> None:
        self.dismiss(event.value)

    def action_cancel(self) -> None:
        self.dismiss(None)


class Confirm(ModalScreen[bool]):
    """y confirms, anything bound here else cancels."""

    BINDINGS = [
        Binding("y", "answer(True)", "yes"),
        Binding("n", "answer(False)", "no"),
        Binding("escape", "answer(False)", "no"),
    ]

    def __init__(self, question: str) -> None:
        super().__init__()
        self._question = question

    def compose(self) -> ComposeResult:
        with Vertical(classes="dialog"):
            yield Label(Text(self._question), classes="dialog-title")
            yield Label("y: yes   n / Escape: no")

    def action_answer(self, yes: bool) -> None:
        self.dismiss(yes)


class ResultView(ModalScreen[None]):
    """A job's answer, scrollable; Escape or q closes it."""

    BINDINGS = [Binding("escape", "close", "close"), Binding("q", "close", "close")]

    def __init__(self, title: str, text: str) -> None:
        super().__init__()
        self._title = title
        self._text = text

    def compose(self) -> ComposeResult:
        with Vertical(classes="dialog result"):
            yield Label(Text(self._title), classes="dialog-title")
            with VerticalScroll():
                yield Static(Text(self._text), id="result-text")
            yield Label("Escape / q: close")

    def action_close(self) -> None:
        self.dismiss(None)
