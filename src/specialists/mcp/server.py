"""The tool table over the official `mcp` SDK (2.x low-level Server): what `--http` serves.

The stdio server is our own (stdio.py): a client waits for its start, and the SDK's import
costs seconds under load. Over HTTP the SDK's streamable transport, sessions and DNS-rebinding
protection are worth that one start. Handlers stay plain functions (handlers.py, table.py);
they block (file reads, synchronous jobs), so each call runs in a worker thread.
"""

from __future__ import annotations

import threading
from typing import Any

from specialists import __version__
from specialists.mcp.handlers import ServerContext
from specialists.mcp.stdio import INSTRUCTIONS, SERVER_NAME
from specialists.mcp.table import (
    ToolOutcome,
    UnknownTool,
    call_tool,
    wire_listing,
    wire_result,
)


def build_server(ctx: ServerContext | None = None) -> Any:
    """A low-level `mcp.server.Server` serving the tool table with `ctx`."""
    import anyio
    import mcp.types as types
    from mcp.server import Server
    from mcp.shared.exceptions import MCPError

    context = ctx or ServerContext()
    context.keys()  # the client's owner, found once (calls work on copies of the context)
    tools = [types.Tool.model_validate(tool) for tool in wire_listing(context)]

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
        return types.CallToolResult.model_validate(wire_result(params.name, outcome))

    return Server(
        SERVER_NAME,
        version=__version__,
        instructions=INSTRUCTIONS,
        on_list_tools=list_tools,
        on_call_tool=handle_call,
    )
