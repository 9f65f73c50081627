"""Waiting for a supervisor's acknowledgement of a control request."""

from __future__ import annotations

import time
from typing import Any

from specialists.jobs.store import JobStore, read_event_lines


def wait_for_ack(
    store: JobStore, job_id: str, request_id: str, timeout: float
) -> dict[str, Any] | None:
    """The ack event for `request_id`, or None if none arrived within `timeout` seconds."""
    path = store.events_path(job_id)
    offset = 0
    deadline = time.monotonic() + timeout
    while True:
        events, offset = read_event_lines(path, offset)
        for ev in events:
            if ev.get("request") == request_id:
                return ev
        if time.monotonic() >= deadline:
            return None
        time.sleep(0.03)
