"""The routes of `specialists web`, behind the token gate. Read-only: nothing here acts on a job.

One fleet serves every connection; it re-reads the store at most once per `poll_s`, however
many browsers are watching. Job ids from a URL are validated before they touch a path.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator, Callable
from html import escape
from typing import Any

from sse_starlette.sse import EventSourceResponse
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import HTMLResponse, JSONResponse, PlainTextResponse, Response
from starlette.routing import Route

from specialists.base.errors import SpecialistsError, StoreError, reason
from specialists.base.vocab import WORKFLOW_RUNNER
from specialists.fronts.fleet.feed import FeedTail, feed_parts
from specialists.fronts.fleet.model import Fleet, job_fleet
from specialists.fronts.fleet.rows import Row
from specialists.fronts.web import pages
from specialists.fronts.web.auth import TokenGate
from specialists.fronts.web.graph import graph_svg
from specialists.fronts.web.payload import FleetDiff, snapshot
from specialists.fronts.web.timeline import timeline_svg
from specialists.store.ids import is_job_id
from specialists.store.jobs import JobStore

POLL_S = 0.5
FEED_POLL_S = 0.2
PING_S = 15


class Watch:
    """The shared fleet, refreshed at most once per `poll_s`."""

    def __init__(self, fleet: Fleet, poll_s: float, clock: Callable[[], float]) -> None:
        self.fleet = fleet
        self.poll_s = poll_s
        self._clock = clock
        self._last: float | None = None

    def fresh(self) -> Fleet:
        """The fleet, or StoreError when the store cannot be listed (jobs/ is a file)."""
        now = self._clock()
        if self._last is None or now - self._last >= self.poll_s:
            self._last = now
            try:
                self.fleet.refresh()
            except (StoreError, OSError) as exc:
                self._last = None  # the next look tries again, and says it again
                raise StoreError(f"the job store cannot be read: {reason(exc)}") from None
        return self.fleet


def build_app(
    store: JobStore,
    token: str,
    *,
    fleet: Fleet | None = None,
    poll_s: float = POLL_S,
    now_ms: Callable[[], int] = lambda: int(time.time() * 1000),
) -> Any:
    watch = Watch(fleet or job_fleet(store), poll_s, time.monotonic)

    def html(page: str, nonce: str, status: int = 200) -> HTMLResponse:
        return HTMLResponse(page, status, headers={"content-security-policy": pages.csp(nonce)})

    def lookup(request: Request) -> Row | _Refusal:
        """The row of the job named in the URL; the id is checked before any path is made."""
        job_id = str(request.path_params["job_id"])
        if not is_job_id(job_id):
            return _Refusal(400, "invalid job id: job ids are 8 hex characters")
        row = watch.fresh().rows.get(f"job:{job_id}")
        return row if row is not None else _Refusal(404, f"no job {job_id}")

    async def fleet_page(request: Request) -> Response:
        nonce = pages.new_nonce()
        return html(pages.fleet_page(nonce=nonce, token=token), nonce)

    async def costs_page(request: Request) -> Response:
        f = watch.fresh()
        nonce = pages.new_nonce()
        try:
            missions, problem = mission_costs(store, f), ""
        except (SpecialistsError, OSError) as exc:  # missions/ itself planted or unreadable
            missions, problem = [], f"the missions cannot be read: {reason(exc)}"
        page = pages.costs_page(
            list(f.rows.values()), f.totals(), missions, nonce=nonce, token=token, problem=problem
        )
        return html(page, nonce)

    async def job_page(request: Request) -> Response:
        row = lookup(request)
        nonce = pages.new_nonce()
        if isinstance(row, _Refusal):
            title = "not found" if row.status == 404 else "bad request"
            page = pages.message_page(title, row.text, nonce=nonce, token=token)
            return html(page, nonce, row.status)
        svg = timeline_svg(watch.fleet.descendants(row.key), now_ms(), root_key=row.key)
        graph = workflow_graph(row) if row.runner == WORKFLOW_RUNNER else None
        return html(pages.job_page(row, svg, graph, nonce=nonce, token=token), nonce)

    def workflow_graph(row: Row) -> str:
        """The workflow's stages and edges, from its journal (its shape survives it)."""
        from specialists.features.workflows.graph import fold_graph
        from specialists.features.workflows.journal import JOURNAL_FILE, read_entries

        try:
            entries = read_entries(store.job_dir(row.job_id or "") / JOURNAL_FILE)
        except (SpecialistsError, OSError) as exc:
            return f"<p class=muted>the workflow's journal cannot be read: {escape(str(exc))}</p>"
        return graph_svg(fold_graph(entries))

    cached: list[Any] = [-1, b""]  # fleet version, its snapshot as JSON without now_ms

    async def fleet_json(request: Request) -> Response:
        fleet = watch.fresh()
        if cached[0] != fleet.version:
            body = snapshot(fleet, 0)
            del body["now_ms"]
            cached[:] = [fleet.version, _json(body).encode()]
        # Serialising 1,000 rows is most of the cost: done once per change, not per request.
        body_bytes = b'{"now_ms":%d,' % now_ms() + cached[1][1:]
        return Response(body_bytes, media_type="application/json")

    async def fleet_stream(request: Request) -> Response:
        async def events() -> AsyncIterator[dict[str, Any]]:
            diff = FleetDiff()
            said = ""
            while True:
                try:
                    change = diff.next(watch.fresh(), now_ms())
                    problem = ""
                except StoreError as exc:  # said once; the stream stays for when it is mended
                    change, problem = None, exc.message
                if problem != said:  # a new problem, or "" when it is mended
                    said = problem
                    yield {"event": "problem", "data": _json({"text": problem})}
                if change is not None:
                    yield {"event": "fleet", "data": _json(change)}
                await asyncio.sleep(watch.poll_s)

        return EventSourceResponse(events(), ping=PING_S)

    async def job_json(request: Request) -> Response:
        row = lookup(request)
        return row.response() if isinstance(row, _Refusal) else JSONResponse(row.to_json())

    async def job_timeline(request: Request) -> Response:
        row = lookup(request)
        if isinstance(row, _Refusal):
            return row.response()
        svg = timeline_svg(watch.fleet.descendants(row.key), now_ms(), root_key=row.key)
        return Response(svg, media_type="image/svg+xml")

    async def job_graph(request: Request) -> Response:
        row = lookup(request)
        if isinstance(row, _Refusal):
            return row.response()
        if row.runner != WORKFLOW_RUNNER:
            return PlainTextResponse(f"job {row.job_id} is not a workflow\n", 404)
        return Response(workflow_graph(row), media_type="image/svg+xml")

    async def job_result(request: Request) -> Response:
        row = lookup(request)
        if isinstance(row, _Refusal):
            return row.response()
        job_id = row.job_id or ""
        try:
            text = store.read_result(job_id) if row.status == "done" else None
            if text is None and row.status == "waiting":
                text = store.latest_answer(job_id)
        except (SpecialistsError, OSError) as exc:
            return PlainTextResponse(f"the result cannot be read: {exc}\n", 500)
        if text is None:
            return PlainTextResponse(f"job {job_id} has no result ({row.status})\n", 404)
        return PlainTextResponse(text)

    async def job_feed(request: Request) -> Response:
        row = lookup(request)
        if isinstance(row, _Refusal):
            return row.response()
        job_id = row.job_id or ""
        after = _int_header(request.headers.get("last-event-id"))
        tail = FeedTail(store.events_path(job_id))

        async def events() -> AsyncIterator[dict[str, Any]]:
            shown: Row | None = None
            feed: FeedTail | None = tail
            said = ""
            while True:
                try:
                    current = watch.fresh().rows.get(f"job:{job_id}")
                except StoreError as exc:  # said once; the stream stays for when it is mended
                    if exc.message != said:
                        problem = {"seq": None, "clock": "", "kind": "unreadable", "event": "error"}
                        yield {"event": "ev", "data": _json({**problem, "detail": exc.message})}
                    said = exc.message
                    await asyncio.sleep(FEED_POLL_S)
                    continue
                if current is not None and current != shown:
                    shown = current
                    yield {"event": "row", "data": _json(current.to_json())}
                batch: list[dict[str, Any]] = []
                try:
                    batch = feed.poll() if feed is not None else []
                except (SpecialistsError, OSError) as exc:  # planted (a link, a directory)
                    feed = None  # said once; the row still follows the job
                    problem = {"seq": None, "clock": "", "kind": "unreadable", "event": "error"}
                    yield {"event": "ev", "data": _json({**problem, "detail": reason(exc)})}
                started = shown.started_at_ms if shown is not None else 0
                for ev in batch:
                    seq = ev.get("seq")
                    if isinstance(seq, int) and seq <= after:
                        continue
                    clock, kind, detail = feed_parts(ev, started)
                    event = str(ev.get("event", ""))[:40]
                    data = {"seq": seq, "clock": clock, "kind": kind, "detail": detail}
                    data["event"] = event
                    yield {"event": "ev", "data": _json(data), "id": str(seq)}
                # The end: the job is finished (or gone) and nothing more was written.
                if current is None or (not current.active and not batch):
                    yield {"event": "end", "data": "{}"}
                    return
                await asyncio.sleep(FEED_POLL_S)

        return EventSourceResponse(events(), ping=PING_S)

    routes = [
        Route("/", fleet_page),
        Route("/costs", costs_page),
        Route("/job/{job_id}", job_page),
        Route("/api/fleet", fleet_json),
        Route("/api/fleet/stream", fleet_stream),
        Route("/api/job/{job_id}", job_json),
        Route("/api/job/{job_id}/feed", job_feed),
        Route("/api/job/{job_id}/timeline.svg", job_timeline),
        Route("/api/job/{job_id}/graph.svg", job_graph),
        Route("/api/job/{job_id}/result", job_result),
    ]
    handlers = {StoreError: _store_problem}
    return TokenGate(Starlette(routes=routes, exception_handlers=handlers), token)


async def _store_problem(request: Request, exc: Exception) -> Response:
    """A store that cannot be listed: the one line `status` would print, not a traceback."""
    text = exc.message if isinstance(exc, SpecialistsError) else str(exc)
    return PlainTextResponse(text + "\n", 500)


def mission_costs(store: JobStore, fleet: Fleet) -> list[pages.MissionCost]:
    """What each mission's linked jobs spent, from the fleet's rows (read only: nothing is
    saved back, unlike `mission show`); a damaged mission is left out."""
    from specialists.features.missions.model import Mission
    from specialists.features.missions.store import MissionStore
    from specialists.store.rollup import each_once

    out = []
    for mission in MissionStore(store.root).all():
        if not isinstance(mission, Mission):
            continue
        linked = [fleet.rows.get(f"job:{run.job_id}") for run in mission.runs]
        spent = each_once(
            (r.job_id or "", _parent_job(r), r.rollup or _own(r))
            for r in linked
            if r is not None and r.kind == "job"
        )
        out.append(pages.MissionCost(mission.id, mission.title, mission.status, spent))
    return out


def _parent_job(row: Row) -> str | None:
    return row.parent.removeprefix("job:") if row.parent else None


def _own(row: Row) -> dict[str, Any]:
    """A row's own spending in store/rollup.py's shape (its `in` counts cache reads too)."""
    tokens = {"input": row.tokens_in, "output": row.tokens_out, "cache_read": 0, "cache_write": 0}
    return {"tokens": tokens, "cost_usd": row.cost_usd, "jobs": 1}


class _Refusal:
    """A request naming a job that is malformed or absent."""

    def __init__(self, status: int, text: str) -> None:
        self.status = status
        self.text = text

    def response(self) -> Response:
        return PlainTextResponse(self.text + "\n", self.status)


def _json(value: Any) -> str:
    import json

    return json.dumps(value, separators=(",", ":"), default=str)


def _int_header(value: str | None) -> int:
    try:
        return int(value) if value and len(value) < 20 else 0
    except ValueError:
        return 0
