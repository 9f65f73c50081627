"""One exception root. User errors become one line and a non-zero exit at the edges."""

from __future__ import annotations

TYPE_CHECKING = False  # every command imports this module: no `typing` at run time
if TYPE_CHECKING:
    from collections.abc import Mapping


class SpecialistsError(Exception):
    """Root of every error this package raises on purpose."""

    exit_code = 2

    def __init__(self, message: str, *, hint: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.hint = hint

    def one_line(self) -> str:
        return f"{self.message} ({self.hint})" if self.hint else self.message


class UserError(SpecialistsError):
    """Bad input from a person or an agent: unknown name, bad id, malformed file."""


class Failed(UserError):
    """An op could not do what was asked, and the input was fine (a job that is not running,
    an answer not there yet): exit 1 on the command line; `data` travels beside the line
    (an MCP error result's details)."""

    exit_code = 1

    def __init__(
        self, message: str, *, hint: str | None = None, data: Mapping[str, object] | None = None
    ) -> None:
        super().__init__(message, hint=hint)
        self.data = dict(data or {})


class NotFound(UserError):
    """A named thing (specialist, job) does not exist."""


class ConfigError(UserError):
    """A definition or config file is malformed."""


class AgentUnavailable(SpecialistsError):
    """Something a command needs is not installed: an agent CLI, its credentials, or an
    optional package (Textual for `top`, Ray for `--executor ray`)."""

    exit_code = 3


class Bug(SpecialistsError):
    """An impossible state: a defect in specialists, never the user's fault.

    The message starts with "bug:". The CLI logs the traceback and prints one line.
    """

    exit_code = 70  # EX_SOFTWARE

    def __init__(self, message: str, *, hint: str | None = None) -> None:
        if not message.startswith("bug:"):
            message = f"bug: {message}"
        super().__init__(message, hint=hint)


class StoreError(SpecialistsError):
    """The job store on disk is unreadable or inconsistent."""

    exit_code = 4


class Planted(StoreError):
    """Something that is not our file stands where one of ours belongs (a symbolic link, a
    FIFO, a device, a directory): never followed or opened, unlike a file that is damaged."""


def reason(exc: Exception) -> str:
    """What went wrong, in one line: ours as `one_line()`, an OSError as its text (for the
    warnings a best-effort step leaves instead of failing)."""
    return exc.one_line() if isinstance(exc, SpecialistsError) else str(exc)


# --- reporting an exception nobody planned for -----------------------------------------------

TRACE_FRAMES = 1000  # Python's default recursion limit: every ordinary traceback fits whole


def bound_tracebacks() -> None:
    """Every traceback this process formats (a crash report, a logged exception) keeps at
    most TRACE_FRAMES frames. Code that raised the recursion limit and recursed a million
    calls deep (a workflow script) would otherwise keep the report busy for minutes. Called
    by each of our processes' entry points, never on import."""
    import sys

    if getattr(sys, "tracebacklimit", None) is None:
        sys.tracebacklimit = TRACE_FRAMES


def exception_text(exc: BaseException, limit: int = 500) -> str:
    """`Type: message` on one line, clipped; never raises (a `__str__` may fail or recurse)."""
    try:
        text = " ".join(str(exc)[: limit * 4].split())
    except Exception:  # noqa: BLE001 - whatever the exception's own __str__ raises
        text = "(its message cannot be shown)"
    if len(text) > limit:
        text = text[: limit - 1] + "…"
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__
