"""The pi front: event written to the inbox -> delivered to pi (target p90 < 100 ms).

Runs the real pi (1.6.0) in RPC mode with our extension against the mock LLM, idle between
events (the "woken" case). For each event: `Emitter.emit` writes it (its ts is the start);
the end is the moment pi took it from our `pi.sendMessage` (the custom message's timestamp,
which pi sets inside sendMessage). Also printed: event -> the model's request (what the
woken model sees), which adds pi's own turn start and the HTTP call.

    .venv/bin/python -m benchmarks.bench_pi_front [--events 40]
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

from benchmarks.common import isolated_project, machine, median_ms, p90_ms
from specialists.events.emitter import Emitter
from specialists.events.model import EventSource
from specialists.events.owners import session_owner
from tests.support.agent_env import find_agent_bin
from tests.support.mock_llm import MockLLM
from tests.support.pi_rpc import PiSession


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--events", type=int, default=40)
    args = parser.parse_args()
    pi_bin = find_agent_bin("pi")
    if pi_bin is None:
        print("pi is not installed (scripts/setup puts pi 1.6.0 under .tools)")
        return 1
    layout = isolated_project()
    with MockLLM() as mock:
        layout.env.update(layout.point_at(mock.base_url))
        log = Path(tempfile.mkdtemp(prefix="sp-bench-pi-")) / "pi-extension.log"
        session = PiSession(pi_bin, layout.project, log, env=layout.env)
        try:
            session.ui("setStatus", timeout=120)  # the sidecar is up
            session.send({"type": "get_state", "id": "state"})
            state = session.wait(lambda ln: ln.get("id") == "state")
            owner = session_owner("pi", state["data"]["sessionId"])
            time.sleep(2.0)  # past the extension's start-up grace: events may start turns now
            emitter = Emitter(layout.project / ".specialists", "bench")
            to_send: list[float] = []
            to_model: list[float] = []
            for n in range(args.events):
                ends = session.agent_ends()
                requests = len(mock.model_requests)
                event = emitter.emit(owner, "notice", EventSource("bench"), f"event {n}")
                assert event is not None
                line = session.wait(
                    lambda ln, eid=event.id: (
                        ln.get("type") == "message_start"
                        and ln["message"].get("customType") == "specialists-event"
                        and eid in str(ln["message"].get("details"))
                    ),
                    timeout=30,
                )
                to_send.append((line["message"]["timestamp"] - event.ts_ms) / 1000)
                request = mock.wait_for_requests(requests + 1, timeout=30)[-1]
                to_model.append(request.ts - event.ts_ms / 1000)
                session.wait_agent_end(ends + 1)  # idle again before the next event
        finally:
            session.close()
    print(f"pi front, {machine()}: {args.events} events, pi idle between them")
    print(
        f"  event written -> pi.sendMessage: median {median_ms(to_send):.0f} ms, "
        f"p90 {p90_ms(to_send):.0f} ms, max {max(to_send) * 1000:.0f} ms (target p90 < 100 ms)"
    )
    print(
        f"  event written -> model request: median {median_ms(to_model):.0f} ms, "
        f"p90 {p90_ms(to_model):.0f} ms"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
