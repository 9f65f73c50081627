"""`specialists web` and `specialists top` against real jobs: a real server process watched by a
real headless Chromium (Debian's chromium, driven over the DevTools protocol), and `top`'s
keys acting on real supervised jobs through Textual's pilot."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.integration.test_cli_pi import sp, status, wait_until, write_spec
from tests.support.cdp import Chromium, chromium_path
from tests.support.mock_llm import MockLLM, Reply

pytestmark = pytest.mark.integration

# Read at import: the isolated environment of each test drops unknown variables.
SCREENSHOT_DIR = os.environ.get("SPECIALISTS_SCREENSHOT_DIR")


def project() -> Path:
    return Path(os.environ["SPECIALISTS_PROJECT_ROOT"])


def gated_spec(name: str, gate: Path) -> None:
    """A command specialist that waits for `gate` to exist, then answers with its prompt."""
    (project() / "specialists").mkdir(exist_ok=True)
    script = f"while [ ! -e {gate} ]; do sleep 0.05; done; echo answered:; cat"
    (project() / "specialists" / f"{name}.specialist.yaml").write_text(
        f"metadata: {{name: {name}}}\n"
        "execution:\n"
        f"  runner: {{type: command, command: sh, args: ['-c', {json.dumps(script)}]}}\n"
    )


@pytest.fixture
def web() -> Iterator[tuple[subprocess.Popen[str], str]]:
    """A running `specialists web --port 0` and the URL it printed."""
    proc = subprocess.Popen(
        [sys.executable, "-m", "specialists", "web", "--port", "0"],
        cwd=project(),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert proc.stdout is not None
    line = proc.stdout.readline()
    assert line.startswith("specialists web: http://127.0.0.1:"), line + proc.stderr.read()
    try:
        yield proc, line.split(": ", 1)[1].strip()
    finally:
        if proc.poll() is None:
            proc.send_signal(signal.SIGINT)
            try:
                proc.wait(timeout=15)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()


def fetch(url: str) -> tuple[int, bytes]:
    try:
        with urllib.request.urlopen(url, timeout=10) as res:
            return res.status, res.read()
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read()


def test_browser_sees_a_real_job_appear_and_finish(web, tmp_path: Path) -> None:
    """The fleet page is open before the job exists; the job's row appears running, then
    turns done, without a reload. The job page then shows its feed to the end and the result.
    Every request the browser made went to the server under test."""
    if chromium_path() is None:
        pytest.skip(
            "chromium is not installed (scripts/setup installs it: apt-get install chromium)"
        )
    proc, url = web
    base = url.split("/?")[0]
    gate = tmp_path / "go"
    gated_spec("gated", gate)
    browser = Chromium(tmp_path / "profile")
    try:
        browser.navigate(url)
        browser.wait_for("document.getElementById('conn').className === 'live'", 30, "the stream")
        assert browser.evaluate("document.querySelectorAll('#fleet tbody tr').length") == 0
        out = sp("run", "gated", "--prompt", "hello from the browser test", "--background")
        assert out.returncode == 0, out.stderr
        job_id = out.stdout.strip()
        cell = f"document.querySelector('tr[data-key=\"job:{job_id}\"] .st')"
        browser.wait_for(f"{cell} && {cell}.textContent === 'running'", 30, "the row, running")
        shots = Path(SCREENSHOT_DIR) if SCREENSHOT_DIR else tmp_path
        browser.screenshot(shots / "web-fleet-running.png")
        gate.touch()
        browser.wait_for(f"{cell} && {cell}.textContent === 'done'", 30, "the row, done")
        assert status(job_id)["status"] == "done"
        browser.screenshot(shots / "web-fleet-done.png")
        browser.navigate(f"{base}/job/{job_id}?token={url.split('token=')[1]}")
        browser.wait_for(
            "document.getElementById('conn').textContent === 'finished'", 30, "the feed to end"
        )
        result = browser.wait_for("document.getElementById('result').textContent", 30, "result")
        assert "answered:" in result and "hello from the browser test" in result
        kinds = browser.evaluate(
            "[...document.querySelectorAll('#feed .k')].map(e => e.textContent)"
        )
        assert kinds[0] == "starting" and kinds[-1] == "done"
        assert browser.evaluate("document.querySelectorAll('#timeline rect').length") == 1
        browser.screenshot(shots / "web-job.png")
        urls = browser.requested_urls()
        assert urls and all(u.startswith(base + "/") for u in urls), urls
    finally:
        browser.close()
    assert proc.poll() is None


def test_the_server_refuses_requests_without_the_right_token(web) -> None:
    _, url = web
    base, token = url.split("/?token=")
    for path in ("/", "/api/fleet", "/api/fleet/stream", "/costs"):
        assert fetch(base + path)[0] == 403
        assert fetch(f"{base}{path}?token=wrong")[0] == 403
        assert fetch(f"{base}{path}?token={token[:-1]}")[0] == 403
    code, body = fetch(f"{base}/api/fleet?token={token}")
    assert code == 200 and json.loads(body)["upsert"] == []
    assert fetch(f"{base}/job/..%2F..%2Fetc%2Fpasswd?token={token}")[0] in (400, 404)
    assert fetch(f"{base}/job/not-a-job?token={token}")[0] == 400
    assert fetch(f"{base}/job/abcdef12?token={token}")[0] == 404


def test_ctrl_c_stops_the_server_with_a_stream_open(web) -> None:
    proc, url = web
    base, token = url.split("/?token=")
    stream = urllib.request.urlopen(f"{base}/api/fleet/stream?token={token}", timeout=10)
    assert stream.readline().startswith(b"event: fleet")
    proc.send_signal(signal.SIGINT)
    assert proc.wait(timeout=15) == 0
    stream.close()


def test_a_port_in_use_is_one_clear_line() -> None:
    holder = socket.socket()
    holder.bind(("127.0.0.1", 0))
    holder.listen(1)
    port = holder.getsockname()[1]
    try:
        out = sp("web", "--port", str(port), timeout=30)
    finally:
        holder.close()
    assert out.returncode == 2
    assert out.stderr == (
        f"error: port {port} on 127.0.0.1 is in use "
        "(stop what holds it, or pick another with --port (0: any free port))\n"
    )


# --- top, acting on real jobs ---------------------------------------------------------------


def _top_app():
    pytest.importorskip("textual")
    from specialists.fronts.fleet.model import job_fleet
    from specialists.fronts.tui.app import TopApp
    from specialists.store.jobs import JobStore
    from specialists.store.news import NEWS
    from specialists.store.paths import state_dir

    store = JobStore(state_dir(project()), news=NEWS)
    return TopApp(store, job_fleet(store), root_label="test", refresh_s=0.2, feed_s=0.1)


def test_top_stop_key_cancels_a_real_job(tmp_path: Path) -> None:
    from tests.support.screen import run, screen_text, until

    gated_spec("gated", tmp_path / "never")
    job_id = sp("run", "gated", "--prompt", "x", "--background").stdout.strip()
    wait_until(lambda: status(job_id)["status"] == "running", 30, "running")

    async def scenario() -> None:
        app = _top_app()
        async with app.run_test(size=(132, 30)) as pilot:
            await until(pilot, lambda: app._selected == f"job:{job_id}", 10, "the job selected")
            await pilot.press("s", "y")
            await until(pilot, lambda: status(job_id)["status"] == "cancelled", 30, "cancel")
            await until(pilot, lambda: "cancelled" in screen_text(app), 10, "the row updated")
            assert any("stopped" in n.message for n in app._notifications)

    run(scenario())


def test_top_follow_up_and_interrupt_a_keep_alive_pi_job(mock_llm: MockLLM, pi_bin: Path) -> None:
    """f sends a follow-up to a waiting job; i aborts the turn it started (the mock hangs) and
    the job goes back to waiting instead of ending."""
    from tests.support.screen import run, until

    write_spec()
    mock_llm.enqueue(Reply("first answer"), Reply("never finished", hang_after=1))
    out = sp("run", "tester", "--prompt", "one", "--keep-alive", "--background")
    job_id = out.stdout.strip()
    wait_until(lambda: status(job_id)["status"] == "waiting", 60, "waiting")

    async def scenario() -> None:
        app = _top_app()
        async with app.run_test(size=(132, 30)) as pilot:
            await until(pilot, lambda: app._selected == f"job:{job_id}", 10, "the job selected")
            await pilot.press("f", *"two", "enter")
            await until(
                pilot,
                lambda: any("delivered" in n.message for n in app._notifications),
                20,
                "the follow-up delivered",
            )
            mock_llm.wait_until_hanging(1, timeout=60)
            await until(pilot, lambda: status(job_id)["status"] == "running", 30, "running")
            await pilot.press("i")
            await until(
                pilot,
                lambda: any("interrupted" in n.message for n in app._notifications),
                20,
                "the interrupt acknowledged",
            )
            await until(pilot, lambda: status(job_id)["status"] == "waiting", 30, "waiting again")

    try:
        run(scenario())
    finally:
        mock_llm.release()
        sp("stop", job_id)
    assert status(job_id)["status"] == "done"


def test_feed_stream_of_a_finished_job_ends_and_resumes_after_last_event_id(web) -> None:
    """A finished job's stream sends its row, its events with ids, then `end` and closes; a
    reconnecting client (Last-Event-ID) gets only what came after."""
    from tests.support.fleet import append_events, write_status

    _, url = web
    base, token = url.split("/?token=")
    job_dir = write_status(project() / ".specialists" / "jobs", "0000f00d", status="done")
    append_events(job_dir, {"event": "starting"}, {"event": "text"}, {"event": "done"})

    def stream(last: str | None) -> list[str]:
        request = urllib.request.Request(f"{base}/api/job/0000f00d/feed?token={token}")
        if last:
            request.add_header("Last-Event-ID", last)
        with urllib.request.urlopen(request, timeout=30) as res:
            return res.read().decode().replace("\r\n", "\n").split("\n")

    lines = stream(None)
    assert [ln for ln in lines if ln.startswith("event:")] == [
        "event: row",
        "event: ev",
        "event: ev",
        "event: ev",
        "event: end",
    ]
    assert [ln for ln in lines if ln.startswith("id:")] == ["id: 1", "id: 2", "id: 3"]
    again = stream("2")
    assert [ln for ln in again if ln.startswith("id:")] == ["id: 3"]


def test_the_fleet_endpoint_with_a_thousand_jobs_and_a_damaged_one(web) -> None:
    from tests.support.fleet import fill_fleet

    _, url = web
    base, token = url.split("/?token=")
    jobs = project() / ".specialists" / "jobs"
    fill_fleet(jobs, 1000, active=3)
    (jobs / "0badf00d").mkdir()
    (jobs / "0badf00d" / "status.json").write_bytes(b"\x00" * 100)

    def fleet() -> dict:
        code, body = fetch(f"{base}/api/fleet?token={token}")
        assert code == 200
        return json.loads(body)

    wait_until(lambda: len(fleet()["upsert"]) == 1001, 30, "every job listed")
    data = fleet()
    assert data["totals"]["damaged"] == 1 and data["totals"]["active"] == 3
    assert len(data["order"]) == 1001


def test_top_and_web_agree_on_a_workflow_and_the_web_draws_its_stages(web, tmp_path: Path) -> None:
    """The same store in a real browser and in top's cells: each row's name, what it does
    and what it spent read the same (one read model, fleet/); the workflow's page draws its
    stages from the journal. Escapes an agent printed are shown as text in both."""
    if chromium_path() is None:
        pytest.skip("chromium is not installed (apt-get install chromium)")
    from specialists.fronts.fleet.model import job_fleet
    from specialists.fronts.fleet.tree import build_tree
    from specialists.fronts.tui.cells import row_cells
    from specialists.store.jobs import JobStore
    from tests.support.fleet import WORKFLOW, workflow_fleet

    store = JobStore(project() / ".specialists", news=None)
    workflow_fleet(store.jobs_dir)
    fleet = job_fleet(store)
    fleet.refresh()
    top = {
        line.row.job_id: row_cells(line, 0, activity=500)
        for line in build_tree(fleet.rows.values())
    }
    proc, url = web
    browser = Chromium(tmp_path / "profile", width=1500, height=700)
    try:
        browser.navigate(url)
        browser.wait_for("document.querySelectorAll('#fleet tbody tr').length === 6", 30, "rows")
        cells = browser.evaluate(
            "Object.fromEntries([...document.querySelectorAll('#fleet tbody tr')].map(tr => "
            "[tr.dataset.key.split(':')[1], [...tr.children].map(td => td.textContent)]))"
        )

        def same(web_text: str, top_text: str) -> bool:
            """Top clips to its column (…); the page shows it whole."""
            a, b = web_text.replace(" ", ""), top_text.replace("·", "").replace(" ", "")
            return a == b or (b.endswith("…") and a.startswith(b[:-1]))

        for job_id, shown in cells.items():
            _, what, status_, _, _, tokens, cost, activity = shown
            mine = top[job_id]
            assert same(what, mine["what"]), (job_id, what, mine["what"])
            assert status_ == mine["status"] and activity == mine["activity"], job_id
            assert tokens.replace(" ", "") == mine["tokens"].replace(" ", ""), job_id
            assert cost.replace(" ", "") == mine["cost"].replace(" ", ""), job_id
        assert "\\e[31m" in cells["000000a3"][7]
        shots = Path(SCREENSHOT_DIR) if SCREENSHOT_DIR else tmp_path
        browser.screenshot(shots / "web-fleet-workflow.png")
        base, token = url.split("/?token=")
        browser.navigate(f"{base}/job/{WORKFLOW}?token={token}")
        browser.wait_for("document.querySelectorAll('#graph g.stage').length === 2", 30, "stages")
        labels = browser.evaluate(
            "[...document.querySelectorAll('#graph text.label')].map(t => t.textContent)"
        )
        assert labels == ["review", "verify"]
        assert "1 failed" in browser.evaluate("document.getElementById('graph').textContent")
        browser.screenshot(shots / "web-workflow-stages.png", full_page=True)
    finally:
        browser.close()
    assert proc.poll() is None
