"""The agent tool table: every wave-2 tool defined once, adapted by four fronts.

A tool is a name, a description the model reads (under 900 characters), a JSON schema and
a handler on the core rooms (events, procs, timers, threads). Fronts adapt the table: the
native runtime calls handlers directly, the MCP server serves them, the Claude Code hooks
and the pi extension (through its sidecar) deliver their events and apply the guards here.
"""
