"""Events and inboxes: every asynchronous outcome, addressed to an owner, delivered once.

An *owner* is whoever must hear of an outcome: a job (`job-<id>`) or an outside session (a
Claude Code, pi or Codex session, an MCP client, a person at the CLI). Producers (a proc
job's supervisor, a timer, a child thread) append `Event`s to the owner's durable inbox;
fronts (the native loop's supervisor, the Claude Code hooks, the pi extension's sidecar,
the MCP `events` tool, `specialists events`) take them, show them to the model in one
stable text format, and acknowledge them by advancing a cursor.

Rules (seed 001 section 4, R-E1..R-E7):
- ids are `<source>:<kind>:<seq>`; a source that can restart carries a fresh nonce (R-E7);
- a bounded seen-set drops a second event with the same id (R-E1);
- bodies over `max_chars` are spilled to a file and replaced by head, tail and path (R-E2);
- delivery is at-least-once: the cursor moves only on acknowledgement, so whatever was not
  acknowledged is delivered again after a restart (R-E6);
- producers never raise into their caller: a failed append is logged and returned (R-E5).

Standard library only, like jobs/: hooks import this on every prompt.
"""
