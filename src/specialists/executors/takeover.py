"""Taking over an agent process a dead supervisor left on its node (supervise/reattach.py).

`adopt_process` asks the node for the process its checkpoint names and makes the
`RemoteProcess` a successor reads on with: from the checkpoint's last recorded item, with
stdin numbered on from the last write the node applied, and stderr.log cut back to what the
checkpoint saw (the rest comes again). It refuses, with the reason, a process the node no
longer knows, and a cursor the node's output does not cover.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from specialists.base.errors import AgentUnavailable
from specialists.executors.remote import START_WAIT_S, NodeGone, RemoteHost, RemoteProcess


def adopt_process(
    host: RemoteHost, cursor: Mapping[str, Any], *, stderr_log: Path | None
) -> RemoteProcess:
    client = host.client
    proc_id = str(cursor["proc"])
    try:
        adopted = client.call_sync("adopt", proc_id, timeout=START_WAIT_S)
    except NodeGone as exc:
        raise AgentUnavailable(f"cannot reattach to the agent: {exc}") from exc
    if adopted.get("gone"):
        raise AgentUnavailable(
            f"the {client.name} no longer knows the agent "
            f"(its lease of {host.lease_s:g}s ran out before a supervisor came back)"
        )
    check_cursor(int(cursor["seq"]), adopted, client.name)
    if stderr_log is not None:
        with open(stderr_log, "r+b") as f:
            f.truncate(min(int(cursor.get("stderr_bytes", 0)), os.fstat(f.fileno()).st_size))
    proc = RemoteProcess(
        client,
        {"proc": proc_id, "pid": adopted["pid"]},
        paths=host.paths,
        stderr_log=stderr_log,
        raw=bool(cursor.get("raw")),
        mark=cursor.get("mark"),
        checkpointed=True,
        on_release=host.ended.append,
    )
    proc.resume_at(int(cursor["seq"]), int(adopted["wseq"]))
    if adopted.get("expired"):
        proc.expired = True
    host.latest = proc
    return proc


def check_cursor(seq: int, adopted: Mapping[str, Any], node: str) -> None:
    """The node must still hold every item after the checkpoint's: a cursor past its output
    (a checkpoint of another process, or a damaged one) or output it has dropped would make
    the successor miss part of the agent's output, silently."""
    last, first = adopted.get("seq"), adopted.get("first")
    if last is None or first is None:
        return  # a node of an older version: it drops only what a checkpoint recorded
    if seq > int(last):
        raise AgentUnavailable(
            f"the checkpoint reads the agent's output from item {seq}, past the {int(last)} "
            f"the {node} has (the checkpoint is not this agent's)"
        )
    if int(first) > seq + 1:
        raise AgentUnavailable(
            f"the {node} has dropped the agent's output after item {seq} (it keeps items "
            f"from {int(first)}), so it cannot be read again"
        )
