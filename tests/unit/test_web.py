"""`specialists web` without a browser: the token gate, job ids in URLs, damaged jobs, the
fleet diffs, the timeline and cost pages (escaping included), and the server's refusals."""

from __future__ import annotations

import asyncio
import json
import socket
from pathlib import Path
from typing import Any

import pytest

from specialists.base.errors import UserError
from specialists.fronts.fleet.model import job_fleet
from specialists.fronts.fleet.rows import Row
from specialists.fronts.web import server
from specialists.fronts.web.app import build_app
from specialists.fronts.web.auth import FORBIDDEN, TokenGate
from specialists.fronts.web.pages import costs_page
from specialists.fronts.web.payload import FleetDiff, snapshot
from specialists.fronts.web.timeline import MAX_BARS, timeline_svg
from specialists.store.jobs import JobStore
from specialists.store.news import NEWS
from tests.support.fleet import BASE_MS, fill_fleet, write_status

TOKEN = "t0k3n-for-tests-0123456789abcdef"


@pytest.fixture
def store(tmp_path: Path) -> JobStore:
    return JobStore(tmp_path / ".specialists", news=NEWS)


def http_scope(path: str, query: str) -> dict[str, Any]:
    """An ASGI scope of a GET from the loopback."""
    return {
        "type": "http",
        "asgi": {"version": "3.0"},
        "http_version": "1.1",
        "method": "GET",
        "scheme": "http",
        "path": path,
        "raw_path": path.encode(),
        "query_string": query.encode(),
        "headers": [(b"host", b"127.0.0.1")],
        "client": ("127.0.0.1", 5000),
        "server": ("127.0.0.1", 8765),
    }


def get(app: Any, path: str, token: str | None = TOKEN, query: str = "") -> tuple[int, dict, bytes]:
    """One GET through the ASGI app, in process: (status, headers, body)."""
    qs = "&".join(p for p in (f"token={token}" if token is not None else "", query) if p)
    scope = http_scope(path, qs)
    sent: list[dict[str, Any]] = []

    async def receive() -> dict[str, Any]:
        return {"type": "http.request", "body": b"", "more_body": False}

    async def send(message: dict[str, Any]) -> None:
        sent.append(message)

    asyncio.run(app(scope, receive, send))
    start = next(m for m in sent if m["type"] == "http.response.start")
    body = b"".join(m.get("body", b"") for m in sent if m["type"] == "http.response.body")
    headers = {k.decode().lower(): v.decode() for k, v in start["headers"]}
    return start["status"], headers, body


def test_every_route_refuses_a_missing_or_wrong_token(store):
    app = build_app(store, TOKEN)
    for path in ("/", "/costs", "/api/fleet", "/api/fleet/stream", "/job/00000001", "/nope"):
        for token in (None, "", "wrong", TOKEN[:-1], TOKEN + "x", TOKEN.upper()):
            status, headers, body = get(app, path, token)
            assert (status, body) == (403, FORBIDDEN), (path, token)
            assert headers["cache-control"] == "no-store"
    status, _, _ = get(app, "/api/fleet", TOKEN, query=f"token={TOKEN}")  # two tokens: refused
    assert status == 403


def test_pages_carry_a_strict_content_policy_and_no_outside_reference(store):
    app = build_app(store, TOKEN)
    status, headers, body = get(app, "/")
    assert status == 200
    policy = headers["content-security-policy"]
    assert "default-src 'none'" in policy and "connect-src 'self'" in policy
    assert headers["referrer-policy"] == "no-referrer"
    html = body.decode()
    assert "http://" not in html and "https://" not in html and "//cdn" not in html
    status, headers, _ = get(app, "/api/fleet")
    assert headers["content-security-policy"].startswith("default-src 'none'")


@pytest.mark.parametrize(
    ("path", "status"),
    [
        ("/job/zzzz", 400),
        ("/job/ABCDEF12", 400),
        ("/job/abcdef123", 400),
        ("/job/..", 400),
        ("/job/abcdef12", 404),
        ("/api/job/....%2F....%2Fetc/result", 400),
        ("/api/job/abcdef12/result", 404),
        ("/api/job/abcdef12/feed", 404),
        ("/api/job/abcdef12/timeline.svg", 404),
        ("/api/job/%00%00%00%00%00%00%00%00", 400),
        ("/api/job/../../etc/passwd", 404),  # no route: a path never reaches a handler
    ],
)
def test_malformed_or_unknown_job_ids_are_refused_before_any_path(store, path, status):
    fill_fleet(store.jobs_dir, 3, active=1)
    app = build_app(store, TOKEN)
    assert get(app, path)[0] == status


def test_a_damaged_status_is_shown_and_the_rest_render(store):
    ids = fill_fleet(store.jobs_dir, 10, active=2)
    (store.jobs_dir / "0000dead").mkdir()
    (store.jobs_dir / "0000dead" / "status.json").write_text('{"id": 1}')
    app = build_app(store, TOKEN)
    status, _, body = get(app, "/api/fleet")
    data = json.loads(body)
    rows = {r["key"]: r for r in data["upsert"]}
    assert status == 200 and len(rows) == 11
    assert rows["job:0000dead"]["status"] == "damaged" and rows["job:0000dead"]["flags"] == [
        "damaged"
    ]
    assert data["totals"]["damaged"] == 1
    assert get(app, "/job/0000dead")[0] == 200
    assert get(app, f"/job/{ids[0]}")[0] == 200
    assert get(app, "/costs")[0] == 200


def test_job_json_and_result(store):
    write_status(store.jobs_dir, "0000000a", status="done", cost_usd=0.5)
    (store.jobs_dir / "0000000a" / "result.txt").write_text("the answer\n")
    write_status(store.jobs_dir, "0000000b", status="running")
    app = build_app(store, TOKEN)
    status, _, body = get(app, "/api/job/0000000a")
    assert status == 200 and json.loads(body)["cost_usd"] == 0.5
    status, headers, body = get(app, "/api/job/0000000a/result")
    assert (status, body) == (200, b"the answer\n")
    assert headers["content-type"].startswith("text/plain")
    assert get(app, "/api/job/0000000b/result")[0] == 404


def test_fleet_diff_sends_only_what_changed(store):
    ids = fill_fleet(store.jobs_dir, 50, active=3)
    fleet = job_fleet(store)
    fleet.refresh()
    diff = FleetDiff()
    first = diff.next(fleet, BASE_MS)
    assert first is not None and len(first["upsert"]) == 50 and first["order"]
    assert diff.next(fleet, BASE_MS) is None  # nothing new
    started = fleet.rows[f"job:{ids[-2]}"].started_at_ms
    write_status(
        store.jobs_dir, ids[-2], status="running", current_tool="read(a.py)", started_at_ms=started
    )
    fleet.refresh()
    second = diff.next(fleet, BASE_MS)
    assert second is not None
    assert [r["job_id"] for r in second["upsert"]] == [ids[-2]] and second["order"] is None
    (store.jobs_dir / ids[0] / "status.json").unlink()
    (store.jobs_dir / ids[0]).rmdir()
    fleet.refresh()
    third = diff.next(fleet, BASE_MS)
    assert third is not None and third["remove"] == [f"job:{ids[0]}"] and third["order"]
    assert snapshot(fleet, BASE_MS)["totals"]["active"] == 3


def _row(key: str, **kw: Any) -> Row:
    base: dict[str, Any] = {"kind": "job", "title": "t", "status": "done", "job_id": key}
    base.update(kw)
    return Row(key=f"job:{key}", **base)


def test_timeline_draws_bars_escapes_text_and_caps_rows():
    rows = [
        _row("a", started_at_ms=BASE_MS, elapsed_s=30),
        _row("b", started_at_ms=BASE_MS + 10_000, status="running", title="<script>x</script>"),
        _row("c", started_at_ms=0),  # no start time: not drawn
    ]
    svg = timeline_svg(rows, BASE_MS + 60_000, root_key="job:a")
    assert svg.count("<rect") == 2 and "<script>" not in svg and "&lt;script&gt;" in svg
    assert 'class="root"' in svg and "+30s" in svg
    many = [_row(f"{i:08x}", started_at_ms=BASE_MS + i) for i in range(MAX_BARS + 5)]
    assert "5 more jobs not drawn" in timeline_svg(many, BASE_MS)
    assert "no job" in timeline_svg([], BASE_MS)


def test_costs_page_sorts_and_escapes():
    rows = [
        _row("00000001", cost_usd=0.1, title="cheap"),
        _row("00000002", cost_usd=2.0, title="<b>dear</b>"),
    ]
    from specialists.fronts.fleet.model import Totals

    page = costs_page(rows, Totals.of(rows), nonce="n", token=TOKEN)
    assert page.index("00000002") < page.index("00000001")
    assert "<b>dear</b>" not in page and "&lt;b&gt;dear&lt;/b&gt;" in page


def test_token_gate_refuses_short_tokens_and_non_http():
    with pytest.raises(ValueError, match="bug"):
        TokenGate(object(), "short")
    sent: list[Any] = []

    async def app(scope: Any, receive: Any, send: Any) -> None:
        sent.append("reached")

    async def noop(*_: Any) -> Any:
        return {}

    asyncio.run(TokenGate(app, TOKEN)({"type": "websocket"}, noop, noop))
    assert sent == []


def test_port_in_use_is_a_user_error():
    holder = socket.socket()
    holder.bind(("127.0.0.1", 0))
    holder.listen(1)
    port = holder.getsockname()[1]
    try:
        with pytest.raises(UserError) as info:
            server.bind("127.0.0.1", port)
        assert info.value.one_line() == (
            f"port {port} on 127.0.0.1 is in use "
            "(stop what holds it, or pick another with --port (0: any free port))"
        )
    finally:
        holder.close()
    with pytest.raises(UserError, match="out of range"):
        server.bind("127.0.0.1", 70000)


def test_a_non_loopback_host_is_warned_about(store, monkeypatch, capsys):
    class Bound:
        def getsockname(self) -> tuple[str, int]:
            return ("0.0.0.0", 9999)

    monkeypatch.setattr(server, "bind", lambda host, port: Bound())
    import uvicorn

    monkeypatch.setattr(uvicorn.Server, "run", lambda self, sockets=None: None)
    assert server.serve(store, "0.0.0.0", 9999) == 0
    out, err = capsys.readouterr()
    assert err.startswith("warning: serving on 0.0.0.0, not loopback")
    assert out.startswith("specialists web: http://0.0.0.0:9999/?token=")
    assert server.is_loopback("127.0.0.1") and server.is_loopback("::1")
    assert not server.is_loopback("0.0.0.0") and not server.is_loopback("example.org")


def stream(app: Any, path: str) -> tuple[int, bytes]:
    """One GET of an event stream that ends by itself: (status, body). The client never
    disconnects, so the stream ends only when the server ends it."""
    scope = http_scope(path, f"token={TOKEN}")
    sent: list[dict[str, Any]] = []
    asked: list[bool] = []

    async def receive() -> dict[str, Any]:
        if asked:
            await asyncio.Event().wait()  # no disconnect
        asked.append(True)
        return {"type": "http.request", "body": b"", "more_body": False}

    async def send(message: dict[str, Any]) -> None:
        sent.append(message)

    asyncio.run(asyncio.wait_for(app(scope, receive, send), 10))
    start = next(m for m in sent if m["type"] == "http.response.start")
    body = b"".join(m.get("body", b"") for m in sent if m["type"] == "http.response.body")
    return start["status"], body


@pytest.mark.parametrize("plant", ["directory", "symlink"])
def test_a_planted_events_file_is_one_line_in_the_feed_not_a_broken_stream(store, plant):
    job_dir = write_status(store.jobs_dir, "0000feed", status="done")
    outside = job_dir.parent.parent / "outside.jsonl"
    outside.write_text('{"seq": 1, "ts": 1, "event": "secret"}\n')
    if plant == "directory":
        (job_dir / "events.jsonl").mkdir()
    else:
        (job_dir / "events.jsonl").symlink_to(outside)
    status, body = stream(build_app(store, TOKEN), "/api/job/0000feed/feed")
    text = body.decode()
    assert status == 200 and "event: end" in text and "secret" not in text
    problems = [line for line in text.splitlines() if '"unreadable"' in line]
    assert len(problems) == 1 and "events.jsonl is a" in problems[0], text


def test_a_dead_job_whose_log_ends_in_a_long_unfinished_line_leaves_the_fleet_readable(store):
    """Recovery of a dead job looks for its last event in the log's last 256 KiB; a tail
    with no newline in it (a torn giant line, a sparse file) is no event, not a crash."""
    fill_fleet(store.jobs_dir, 3, active=0)
    job_dir = write_status(
        store.jobs_dir,
        "0000dead",
        status="running",
        supervisor_pid=2**22 + 7,
        supervisor_start_time=1,
    )
    (job_dir / "events.jsonl").write_bytes(b"x" * (300 * 1024))
    status, _, body = get(build_app(store, TOKEN), "/api/fleet")
    rows = {r["key"]: r for r in json.loads(body)["upsert"]}
    assert status == 200 and len(rows) == 4
    assert rows["job:0000dead"]["active"] is False


def test_a_host_that_cannot_be_served_on_is_one_line_naming_it(monkeypatch):
    """A name too long to encode (idna), or a link-local address without its interface."""

    def too_long(host: str, *args: Any, **kwargs: Any) -> Any:
        raise UnicodeError("encoding with 'idna' codec failed (UnicodeError: label too long)")

    monkeypatch.setattr(socket, "getaddrinfo", too_long)
    with pytest.raises(UserError) as info:
        server.bind("a" * 300, 0)
    assert info.value.one_line().startswith("cannot serve on host 'aaaa")
    link_local = [(socket.AF_INET6, socket.SOCK_STREAM, 6, "", ("fe80::1", 0, 0, 0))]
    monkeypatch.setattr(socket, "getaddrinfo", lambda *args, **kwargs: link_local)
    with pytest.raises(UserError) as info:  # EINVAL (no scope), or no IPv6 at all
        server.bind("fe80::1", 0)
    assert info.value.one_line().startswith("cannot serve on host 'fe80::1'")


def test_a_planted_missions_directory_is_one_line_on_the_cost_page(store):
    fill_fleet(store.jobs_dir, 3, active=0)
    (store.root / "missions").symlink_to(store.root.parent)
    status, _, body = get(build_app(store, TOKEN), "/costs")
    page = body.decode()
    assert status == 200 and "per job" in page
    assert "missions cannot be read" in page and "missions is not a directory" in page


def test_a_jobs_directory_that_is_not_one_is_one_line_not_a_traceback(store):
    """`status` says it in one line; the dashboard, started before the plant, says the same
    on every route, and its streams say it once and stay open for when it is repaired."""
    store.root.mkdir(parents=True)
    store.jobs_dir.write_text("not a directory")
    app = build_app(store, TOKEN)
    for path in ("/api/fleet", "/costs", "/job/00000001", "/api/job/00000001/result"):
        status, _, body = get(app, path)
        assert (status, body.count(b"\n")) == (500, 1), path
        assert body.startswith(b"the job store cannot be read: ") and b"Not a directory" in body

    async def first_event(path: str) -> bytes:
        scope = {
            "type": "http",
            "method": "GET",
            "path": path,
            "raw_path": path.encode(),
            "query_string": f"token={TOKEN}".encode(),
            "headers": [],
            "scheme": "http",
            "http_version": "1.1",
            "asgi": {"version": "3.0"},
        }
        got: list[bytes] = []
        said = asyncio.Event()

        async def receive() -> dict[str, Any]:
            await said.wait()
            return {"type": "http.disconnect"}

        async def send(message: dict[str, Any]) -> None:
            got.append(message.get("body", b""))
            if b"cannot be read" in message.get("body", b""):
                said.set()

        await asyncio.wait_for(app(scope, receive, send), 5)
        return b"".join(got)

    assert b"the job store cannot be read" in asyncio.run(first_event("/api/fleet/stream"))


def test_a_wild_timestamp_draws_a_few_ticks_not_one_a_day():
    """A finish 30 years after the start (a clock in µs does worse: 1.3 GB in 48 s) drew a
    grid line per day, blocking the server; the axis keeps about six ticks at any span."""
    rows = [_row("a", started_at_ms=BASE_MS, finished_at_ms=BASE_MS + 10**12)]
    svg = timeline_svg(rows, BASE_MS)
    assert svg.count("<line") <= 8 and len(svg) < 10_000 and 'class="tick">+0s' in svg
