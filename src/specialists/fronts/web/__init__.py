"""`specialists web`: a read-only dashboard on loopback, behind a per-run token.

Built on what the MCP SDK already brings (starlette, uvicorn, sse-starlette); imported only by
`specialists web`. Pure parts (the fleet payload and its diffs, the timeline SVG, the pages)
are tested without a server; `app.py` wires them to routes, `server.py` binds and serves.
"""
