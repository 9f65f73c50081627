"""The MCP adapter: the tool table over the official `mcp` SDK (2.x low-level Server), stdio.

Everything MCP-specific is here; handlers stay plain functions (handlers.py, table.py).
Handlers block (file reads, synchronous jobs), so each call runs in a worker thread.

Shutdown: SIGTERM, SIGINT or the client closing stdin stop the jobs this server runs
itself (use_specialist, run_parallel) and kill their agents. Background jobs (`run`)
belong to their own supervisors and keep running.
"""

from __future__ import annotations

import logging
import os
import signal
import sys
import threading
from types import FrameType
from typing import Any

from specialists import __version__
from specialists.fronts.mcp.handlers import ServerContext
from specialists.fronts.mcp.table import (
    DATA_META,
    ERROR_META,
    TOOLS_BY_NAME,
    ToolOutcome,
    UnknownTool,
    call_tool,
    served_tools,
)

log = logging.getLogger("specialists.fronts.mcp")

SERVER_NAME = "specialists"
INSTRUCTIONS = (
    "Delegate work to specialist coding agents. Dispatch with run (returns a job id at once), "
    "keep working, and read the answer with result once the job's end is announced. "
    "Do not poll status in a loop. To wait, use sleep or sleep_until_event and end your "
    "turn; the wake-up comes as a [specialists event] message (without hooks: call events)."
)
SHUTDOWN_GRACE_S = 2.0


def build_server(ctx: ServerContext | None = None) -> Any:
    """A low-level `mcp.server.Server` serving the tool table with `ctx`."""
    import anyio
    import mcp.types as types
    from mcp.server import Server
    from mcp.shared.exceptions import MCPError

    context = ctx or ServerContext()
    context.keys()  # the client's owner, found once (calls work on copies of the context)
    tools = [
        types.Tool(
            name=spec.name,
            description=spec.description,
            input_schema=spec.input_schema,
            output_schema=spec.served_output_schema,
            annotations=types.ToolAnnotations(
                read_only_hint=spec.read_only,
                destructive_hint=False,
                open_world_hint=False,
            ),
        )
        for spec in served_tools(context)
    ]

    async def list_tools(_ctx: Any, _params: Any) -> types.ListToolsResult:
        return types.ListToolsResult(tools=tools)

    async def handle_call(req: Any, params: types.CallToolRequestParams) -> types.CallToolResult:
        arguments = dict(params.arguments or {})
        cancelled = threading.Event()  # tells a waiting `events` call to take nothing

        def call() -> ToolOutcome:
            call_id = f"mcp-{getattr(req, 'request_id', None) or id(cancelled)}"
            return call_tool(context, params.name, arguments, call_id=call_id, cancelled=cancelled)

        try:
            # Abandoned on cancellation: a synchronous job then ends with the server (stop_all).
            outcome = await anyio.to_thread.run_sync(call, abandon_on_cancel=True)
        except UnknownTool as exc:
            raise MCPError(code=types.INVALID_PARAMS, message=exc.one_line()) from exc
        except anyio.get_cancelled_exc_class():
            cancelled.set()
            raise
        content: list[Any] = [types.TextContent(type="text", text=outcome.text)]
        if outcome.is_error:  # no structuredContent: see ToolOutcome
            return types.CallToolResult(
                content=content, is_error=True, _meta={ERROR_META: outcome.data}
            )
        if TOOLS_BY_NAME[params.name].text_first:  # see McpTool.text_first
            return types.CallToolResult(content=content, _meta={DATA_META: outcome.data})
        return types.CallToolResult(content=content, structured_content=outcome.data)

    return Server(
        SERVER_NAME,
        version=__version__,
        instructions=INSTRUCTIONS,
        on_list_tools=list_tools,
        on_call_tool=handle_call,
    )


def unreadable_reply(exc: Exception) -> Any:
    """The JSON-RPC error answering a request line the SDK could not parse, or None.

    The SDK's parser refuses a JSON string holding a lone surrogate escape ("\\ud800"), and
    it then drops the line: the client would wait forever. Python's own parser reads such a
    line, so when it holds a request id we can answer that id with one clear error.
    """
    import json

    import mcp.types as types
    from pydantic import ValidationError

    if not isinstance(exc, ValidationError):
        return None
    errors = exc.errors()
    line = errors[0].get("input") if errors and errors[0].get("type") == "json_invalid" else None
    if not isinstance(line, str):
        return None
    try:
        request = json.loads(line)
    except ValueError:
        return None  # not JSON at all: there is no id to answer
    request_id = request.get("id") if isinstance(request, dict) else None
    if isinstance(request_id, bool) or not isinstance(request_id, int | str):
        return None
    try:
        line.encode("utf-8")
        json.dumps(request, ensure_ascii=False).encode("utf-8")
        why = f"the request is not valid JSON-RPC: {errors[0].get('msg', 'unreadable')}"
    except UnicodeEncodeError:
        why = "the request holds a lone surrogate escape (e.g. \\ud800), which is not text"
    return types.JSONRPCError(
        jsonrpc="2.0",
        id=request_id,
        error=types.ErrorData(code=types.INVALID_PARAMS, message=f"{why} (send valid UTF-8)"),
    )


async def _answer_unreadable(read_stream: Any, write_stream: Any, to_server: Any) -> None:
    """Pass the client's messages on to the server, answering unparseable requests here."""
    from mcp.shared.message import SessionMessage

    async with to_server:
        async for item in read_stream:
            reply = unreadable_reply(item) if isinstance(item, Exception) else None
            if reply is None:
                await to_server.send(item)
            else:
                log.warning("answered an unparseable request: %s", reply.error.message)
                await write_stream.send(SessionMessage(reply))


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


def serve_stdio(ctx: ServerContext | None = None) -> int:
    """Serve on stdin/stdout until the client goes away or a signal arrives."""
    import anyio
    from mcp.server.stdio import stdio_server

    check_stdio()
    context = ctx or ServerContext()
    server = build_server(context)

    def on_terminate(_signum: int, _frame: FrameType | None) -> None:
        stopped = context.jobs.stop_all(SHUTDOWN_GRACE_S)
        if stopped:
            print(f"specialists mcp: stopped jobs {', '.join(stopped)}", file=sys.stderr)
        sys.stderr.flush()
        # Exit now: unwinding the event loop could wait on the blocked stdin reader thread.
        os._exit(0)

    signal.signal(signal.SIGTERM, on_terminate)

    async def main() -> None:
        async with stdio_server() as (read_stream, write_stream):
            to_server, from_client = anyio.create_memory_object_stream[Any](0)
            async with anyio.create_task_group() as tg:
                tg.start_soon(_answer_unreadable, read_stream, write_stream, to_server)
                await server.run(from_client, write_stream, server.create_initialization_options())
                tg.cancel_scope.cancel()

    try:
        anyio.run(main)
    except KeyboardInterrupt:
        return 130
    finally:
        context.jobs.stop_all(SHUTDOWN_GRACE_S)
    return 0
