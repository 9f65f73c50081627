"""`specialists mcp` on stdin/stdout: a small JSON-RPC loop of our own over the tool table.

Why not the SDK here: a client waits for our `initialize` answer, and headless Claude Code
sends its first model request about 2 s after starting its MCP servers (5 s for a server it
must always load). `import mcp` loads the models of every protocol version (a second idle,
several under load), so this path imports the standard library only before it answers; the
tool table loads in a thread right after the first answer. The SDK stays for `--http`.

The loop (wire.py reads and shapes the messages):
- the main thread reads one line at a time (at most wire.MAX_LINE_BYTES; a longer one is
  skipped and answered) and answers initialize, server/discover and ping at once;
- tools/list of a client that is none of our jobs is answered from listing.json, the
  table's listing written down (`static_listing`), without waiting for the table;
- tools/list and tools/call run in their own threads, so a long call (a synchronous job, a
  waiting `events`) never holds up the others; at most MAX_CALLS at a time;
- notifications/cancelled sets the call's `cancelled` event (a waiting events or
  contact_supervisor call ends on it) and drops its answer, as the spec asks.

Shutdown: SIGTERM, SIGINT or the client closing stdin (or stdout) stop the jobs this server
runs itself (use_specialist, run_parallel) and kill their agents. Background jobs (`run`)
belong to their own supervisors and keep running.
"""

from __future__ import annotations

import os
import signal
import sys
import threading
import time

from specialists import __version__
from specialists.fronts.mcp import wire

TYPE_CHECKING = False  # `typing` is ~5 ms of a start the client waits for
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Any, BinaryIO

    from specialists.fronts.mcp.handlers import ServerContext


def log() -> Any:
    import logging  # 8 ms: not before the first answer

    return logging.getLogger("specialists.fronts.mcp")


SERVER_NAME = "specialists"
INSTRUCTIONS = (
    "Delegate work to specialist coding agents. Dispatch with run (returns a job id at once), "
    "keep working, and read the answer with result once the job's end is announced. "
    "Do not poll status in a loop. To wait, use sleep or sleep_until_event and end your "
    "turn; the wake-up comes as a [specialists event] message (without hooks: call events)."
)
SHUTDOWN_GRACE_S = 2.0
MAX_CALLS = 64  # calls in flight at once; each holds a thread (an `events` call waits 60 s)
IDENTITY = wire.Identity(SERVER_NAME, __version__, INSTRUCTIONS)


class Tools:
    """The tool table as this server uses it: the listing, one call, and stopping the jobs
    the server runs itself. Built in the loader thread (it imports the table)."""

    def __init__(self, context: ServerContext) -> None:
        from specialists.fronts.mcp import table

        self.context = context
        context.keys()  # the client's owner, found once (calls work on copies of the context)
        self.listing = table.wire_listing(context)
        self._table = table

    def call(self, name: str, arguments: dict[str, Any], call_id: str, cancelled: Any) -> dict:
        """The CallToolResult's fields, or wire.RpcError for a tool we do not have."""
        table = self._table
        try:
            outcome = table.call_tool(
                self.context, name, arguments, call_id=call_id, cancelled=cancelled
            )
        except table.UnknownTool as exc:
            raise wire.RpcError(wire.INVALID_PARAMS, exc.one_line()) from exc
        return table.wire_result(name, outcome)

    def stop_all(self, grace: float) -> list[str]:
        return self.context.jobs.stop_all(grace)


class StdioServer:
    """The loop. `load` builds the tools (Tools, or a fake with the same three members)."""

    def __init__(
        self,
        load: Callable[[], Tools],
        stdin: BinaryIO,
        stdout: BinaryIO,
        toolset: str | None = None,
    ) -> None:
        self._load_tools = load
        self._toolset = toolset  # its tools/list may come before the table (static_listing)
        self._in = stdin
        self._out = stdout
        self._write_lock = threading.Lock()
        self._calls_lock = threading.Lock()
        self._calls: dict[Any, threading.Event] = {}  # in-flight requests: cancelled events
        self._dropped: set[Any] = set()  # requests the client cancelled: no answer
        self._threads: set[threading.Thread] = set()
        self._tools: Tools | None = None
        self._load_failure: str | None = None
        self._loaded = threading.Event()
        self._loader: threading.Thread | None = None

    # ------------------------------------------------------------------ the loop

    def serve(self) -> int:
        """Answer until stdin ends. 0 when the client went away, 130 on Ctrl-C."""
        try:
            while True:
                line = self._read_line()
                if line is None:
                    break
                self.handle(line)
        except KeyboardInterrupt:
            self.shut_down("interrupted")
            return 130
        self.shut_down("the client closed stdin")
        return 0

    def _read_line(self) -> bytes | wire.RpcError | None:
        line = self._in.readline(wire.MAX_LINE_BYTES + 1)
        if not line:
            return None
        if len(line) > wire.MAX_LINE_BYTES and not line.endswith(b"\n"):
            head = line[:4096]
            while True:  # skip the rest of the line, a chunk at a time
                rest = self._in.readline(1 << 20)
                if not rest or rest.endswith(b"\n"):
                    break
            return wire.oversized_error(head)
        return line

    def handle(self, line: bytes | wire.RpcError) -> None:
        try:
            if isinstance(line, wire.RpcError):
                raise line
            message = wire.read_message(line)
            if message is None:
                return
            if not message.is_request:
                self._notified(message)
                return
            self._requested(message)
        except wire.RpcError as err:
            self._refuse(err)

    def _requested(self, message: wire.Message) -> None:
        modern = message.modern_version is not None
        method = message.method
        if method == "initialize":  # legacy: the one handshake of this connection
            self.send(
                wire.reply(
                    message.id, wire.initialize_result(IDENTITY, message.params), identity=None
                )
            )
            self._start_loading()
            return
        if modern:
            wire.check_modern(message)
        elif method == "server/discover":
            raise wire.RpcError(
                wire.INVALID_PARAMS,
                f"server/discover: _meta lacks {wire.VERSION_KEY} (or send initialize)",
                message.id,
            )
        if method == "server/discover":
            self.send(
                wire.reply(
                    message.id, wire.discover_result(IDENTITY), modern=True, identity=IDENTITY
                )
            )
            self._start_loading()
        elif method == "ping":
            self.send(wire.reply(message.id, {}, modern=modern, identity=IDENTITY))
        elif method == "tools/list":
            if message.params.get("cursor") is not None:
                raise wire.RpcError(
                    wire.INVALID_PARAMS, "tools/list: unknown cursor (one page)", message.id
                )
            self._start_loading()
            self._in_thread(message, self._list, modern)
        elif method == "tools/call":
            name = message.params.get("name")
            arguments = message.params.get("arguments", {})
            if not isinstance(name, str) or not isinstance(arguments, dict):
                raise wire.RpcError(
                    wire.INVALID_PARAMS,
                    "tools/call: params need a tool name and an arguments object",
                    message.id,
                )
            self._start_loading()
            self._in_thread(message, self._call, modern)
        else:
            raise wire.RpcError(
                wire.METHOD_NOT_FOUND, f"method not found: {method[:80]}", message.id
            )

    def _notified(self, message: wire.Message) -> None:
        if message.method == "notifications/cancelled":
            request_id = message.params.get("requestId")
            if isinstance(request_id, bool) or not isinstance(request_id, int | str):
                # No request has such an id (a list or an object is not even a key).
                log().warning("ignored notifications/cancelled: requestId %.80r", request_id)
                return
            with self._calls_lock:
                cancelled = self._calls.get(_key(request_id))
                if cancelled is not None:
                    self._dropped.add(_key(request_id))
            if cancelled is not None:
                log().info("request %r cancelled: %s", request_id, message.params.get("reason"))
                cancelled.set()
        # notifications/initialized and the rest need nothing from us

    def _refuse(self, err: wire.RpcError) -> None:
        # A notification gets no answer (JSON-RPC); a line we could not read at all does,
        # with a null id, so the client hears of it.
        if err.request_id is None and err.code not in (wire.PARSE_ERROR, wire.INVALID_REQUEST):
            log().warning("ignored a notification: %s", err.message)
            return
        if err.code == wire.METHOD_NOT_FOUND:  # clients probe; not a problem
            log().info("refused a message: %s", err.message)
        else:
            log().warning("refused a message: %s", err.message)
        self.send(wire.error_reply(err))

    # ------------------------------------------------------------------ calls in threads

    def _in_thread(
        self, message: wire.Message, work: Callable[[wire.Message, Any], dict], modern: bool
    ) -> None:
        cancelled = threading.Event()
        with self._calls_lock:
            if len(self._calls) >= MAX_CALLS:
                raise wire.RpcError(
                    wire.INTERNAL_ERROR,
                    f"{MAX_CALLS} calls are already running here; wait for one to finish",
                    message.id,
                )
            if _key(message.id) in self._calls:
                raise wire.RpcError(
                    wire.INVALID_REQUEST, f"request id {message.id!r} is already in use"
                )
            self._calls[_key(message.id)] = cancelled

        def run() -> None:
            try:
                answer = wire.reply(
                    message.id, work(message, cancelled), modern=modern, identity=IDENTITY
                )
            except wire.RpcError as err:
                err.request_id = message.id
                answer = wire.error_reply(err)
            except Exception as exc:  # noqa: BLE001 - a bug: logged, and answered in one line
                log().exception("%s failed", message.method)
                answer = wire.error_reply(
                    wire.RpcError(
                        wire.INTERNAL_ERROR, f"bug: {type(exc).__name__}: {exc}", message.id
                    )
                )
            finally:
                with self._calls_lock:
                    self._calls.pop(_key(message.id), None)
                    self._threads.discard(threading.current_thread())
                    dropped = _key(message.id) in self._dropped
                    self._dropped.discard(_key(message.id))
            if not dropped:  # a request the client cancelled gets no answer (the spec)
                self.send(answer)

        thread = threading.Thread(target=run, name=f"mcp-{message.method}", daemon=True)
        with self._calls_lock:
            self._threads.add(thread)
        thread.start()

    def _list(self, message: wire.Message, cancelled: Any) -> dict:
        listing = static_listing(self._toolset) if self._toolset else None
        if listing is None:
            listing = self._ready().listing
        return wire.tools_result(listing, message.modern_version is not None)

    def _call(self, message: wire.Message, cancelled: Any) -> dict:
        params = message.params
        call_id = f"mcp-{message.id}"
        return self._ready().call(params["name"], params.get("arguments", {}), call_id, cancelled)

    # ------------------------------------------------------------------ the tool table

    def _start_loading(self) -> None:
        if self._loader is None:
            self._loader = threading.Thread(target=self._load, name="mcp-load", daemon=True)
            self._loader.start()

    def _load(self) -> None:
        try:
            self._tools = self._load_tools()
        except Exception as exc:  # noqa: BLE001 - every call is answered with this line
            log().exception("cannot load the tools")
            self._load_failure = f"{type(exc).__name__}: {exc}"
        finally:
            self._loaded.set()

    def _ready(self) -> Tools:
        self._loaded.wait()
        if self._tools is None:
            raise wire.RpcError(
                wire.INTERNAL_ERROR, f"the specialists tools could not load: {self._load_failure}"
            )
        return self._tools

    # ------------------------------------------------------------------ output and the end

    def send(self, message: dict[str, Any]) -> None:
        data = wire.encode(message)
        try:
            with self._write_lock:
                self._out.write(data)
                self._out.flush()
        except (OSError, ValueError):  # stdout closed: the client is gone
            self.shut_down("the client closed stdout")
            os._exit(0)

    def shut_down(self, why: str) -> None:
        """Stop waiting calls and the jobs this server runs; a bounded wait for both. Calls
        still running may answer meanwhile (a client that wrote its requests and closed
        stdin still reads stdout); a `run` mid-way finishes starting its job."""
        with self._calls_lock:
            for cancelled in self._calls.values():
                cancelled.set()  # a waiting events or contact_supervisor stops waiting
            threads = list(self._threads)
        stopped = self._tools.stop_all(SHUTDOWN_GRACE_S) if self._tools is not None else []
        if stopped:
            print(f"specialists mcp: {why}; stopped jobs {', '.join(stopped)}", file=sys.stderr)
        deadline = time.monotonic() + SHUTDOWN_GRACE_S
        for thread in threads:
            thread.join(max(0.0, deadline - time.monotonic()))

    def busy(self) -> bool:
        """Whether a thread of ours still runs: the tool table's loader (a client may leave
        before anything waited for it: a refused request needs no table) or a call past the
        shutdown's grace."""
        with self._calls_lock:
            threads = [self._loader, *self._threads]
        return any(t is not None and t.is_alive() for t in threads)

    def terminate(self, _signum: int, _frame: Any) -> None:
        self.shut_down("terminated")
        sys.stderr.flush()
        # Exit now: unwinding could wait on the main thread's blocking read of stdin.
        os._exit(0)


def _key(request_id: Any) -> Any:
    """Requests ids 1 and "1" are different requests."""
    return (type(request_id).__name__, request_id)


def check_stdio() -> None:
    """A UserError when stdin or stdout is closed: there is no client to serve."""
    from specialists.base.errors import UserError

    for name, stream in (("stdin", sys.stdin), ("stdout", sys.stdout)):
        try:
            ok = stream is not None and stream.fileno() >= 0
            if ok:
                os.fstat(stream.fileno())
        except (OSError, ValueError, AttributeError):
            ok = False
        if not ok:
            raise UserError(
                f"{name} is closed; `specialists mcp` speaks MCP on stdin and stdout",
                hint="start it from an MCP client: claude mcp add specialists -- specialists mcp",
            )


LISTING = os.path.join(os.path.dirname(__file__), "listing.json")


def static_listing(toolset: str) -> list[dict[str, Any]] | None:
    """tools/list of a client that is none of our jobs, answered before the table loads from
    listing.json (scripts/mcp-listing writes it; a unit test holds it equal to the table's).
    None when the listing depends on a job (its tier, its thread) or the file cannot be
    read: then tools/list waits for the table, as it always may."""
    from specialists.base.owner import JOB_ENV, OWNER_ENV
    from specialists.base.vocab import NODE_COPY_ENV

    if any(os.environ.get(name) for name in (JOB_ENV, OWNER_ENV, NODE_COPY_ENV)):
        return None
    import json

    try:
        with open(LISTING, "rb") as f:
            listed: list[dict[str, Any]] = json.load(f)[toolset]
    except (OSError, ValueError, KeyError) as exc:
        log().warning("tools/list waits for the table: %s", exc)
        return None
    return listed


def serve(make_context: Callable[[], ServerContext], toolset: str | None = None) -> int:
    """Serve on stdin/stdout until the client goes away or a signal arrives. `toolset`: the
    tool set of a server that is no job's (its listing is static_listing's)."""
    check_stdio()
    server = StdioServer(
        lambda: Tools(make_context()), sys.stdin.buffer, sys.stdout.buffer, toolset
    )
    signal.signal(signal.SIGTERM, server.terminate)
    code = server.serve()
    if server.busy():  # the interpreter's finalization under a thread mid-import can crash
        sys.stdout.flush()  # (SIGSEGV, once in CI, after every answer was written)
        sys.stderr.flush()
        os._exit(code)
    return code
