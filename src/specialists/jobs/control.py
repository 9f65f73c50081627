"""The control inbox: other processes ask a job's supervisor to act.

A request is one small JSON file in <job>/control/, written atomically (temp + rename) so
the supervisor never reads half of one. The supervisor handles requests in name order,
deletes each file and acknowledges by an event carrying the request id.
"""

from __future__ import annotations

import json
import os
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from specialists.jobs.atomic import write_atomic
from specialists.jobs.store import CONTROL_DIR

ControlKind = Literal["steer", "follow_up", "abort", "stop"]
CONTROL_KINDS: tuple[str, ...] = ("steer", "follow_up", "abort", "stop")


@dataclass(frozen=True)
class ControlRequest:
    id: str
    kind: str
    message: str = ""
    sent_at_ms: int = 0

    def to_dict(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "kind": self.kind,
            "message": self.message,
            "sent_at_ms": self.sent_at_ms,
        }


def post_request(job_dir: Path, kind: ControlKind, message: str = "") -> ControlRequest:
    inbox = job_dir / CONTROL_DIR
    inbox.mkdir(exist_ok=True)
    now_ns = time.time_ns()
    request = ControlRequest(
        id=os.urandom(4).hex(), kind=kind, message=message, sent_at_ms=now_ns // 1_000_000
    )
    # Names sort by send time (ns): requests are handled in the order they were sent.
    name = f"{now_ns:020d}-{request.id}.json"
    write_atomic(inbox / name, json.dumps(request.to_dict()).encode())
    return request


def take_requests(job_dir: Path) -> tuple[list[ControlRequest], list[str]]:
    """Read and delete pending requests. Returns (requests, problems with bad files)."""
    inbox = job_dir / CONTROL_DIR
    try:
        names = sorted(
            n for n in os.listdir(inbox) if n.endswith(".json") and not n.startswith(".")
        )
    except FileNotFoundError:
        return [], []
    requests: list[ControlRequest] = []
    problems: list[str] = []
    for name in names:
        path = inbox / name
        try:
            data = json.loads(path.read_bytes())
            kind = data["kind"]
            if kind not in CONTROL_KINDS:
                raise ValueError(f"unknown kind {kind!r}")
            requests.append(
                ControlRequest(
                    id=str(data["id"]),
                    kind=kind,
                    message=str(data.get("message", "")),
                    sent_at_ms=int(data.get("sent_at_ms", 0)),
                )
            )
        except (ValueError, KeyError, TypeError) as exc:
            problems.append(f"control request {name} ignored: {exc}")
        except FileNotFoundError:
            continue
        path.unlink(missing_ok=True)
    return requests, problems


def pending_count(job_dir: Path) -> int:
    try:
        return sum(1 for n in os.listdir(job_dir / CONTROL_DIR) if n.endswith(".json"))
    except FileNotFoundError:
        return 0
