"""A job the shared fork server revives (supervise/forks.py `_ForkHere`): a job paused at a
usage limit, whose supervisor the server forked and keeps, is taken over when that
supervisor dies. The server's keeper starts the new supervisor through the launch path
every launcher takes; in the server that path forks here, at once: asked of the server's
own socket, it waited SHARED_REPLY_S for an answer the server could not give while it
waited, then started a fresh interpreter."""

from __future__ import annotations

import os
import signal
from collections.abc import Iterator
from pathlib import Path

import pytest

from specialists.store.jobs import JobStore
from specialists.supervise import shared_forks
from tests.integration.test_cli_pi import sp
from tests.integration.test_fork_server import _parent
from tests.integration.test_shared_forks import _listening, _servers, launched_lately
from tests.integration.test_usage_limits import SPEC, ended, paused, run
from tests.support.mock_llm import MockLLM, Reply, write_mockhttp_project
from tests.support.processes import killed_after
from tests.support.waiting import wait_until

pytestmark = pytest.mark.integration


@pytest.fixture
def project(mock_llm: MockLLM, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """A native `tester` against the mock LLM; the project's shared servers killed at the end."""
    monkeypatch.delenv(shared_forks.OFF_ENV, raising=False)
    monkeypatch.setenv("MOCK_KEY", "sk-test")
    root = write_mockhttp_project(
        Path(os.environ["SPECIALISTS_PROJECT_ROOT"]), mock_llm.openai_base_url, SPEC
    )
    launched_lately(root)  # the next launch that finds no server starts one
    try:
        yield root
    finally:
        with killed_after() as pids:
            pids.extend(_servers(root))


def test_the_server_forks_the_supervisor_that_takes_over_its_paused_job(
    project: Path, mock_llm: MockLLM
) -> None:
    mock_llm.enqueue(Reply("first done"))
    ended(run("first"))  # started fresh, and the shared server with it
    server = _listening(project)
    mock_llm.enqueue(Reply.usage_limited(resets_in=120))
    mock_llm.set_default(Reply("finished after a crash"))
    job = run("write the report")
    dead = paused(job)["supervisor_pid"]
    assert _parent(dead) == server  # forked and kept by the server
    jobs = JobStore(project / ".specialists", news=None)  # a plain read: no reader recovers
    os.kill(dead, signal.SIGKILL)
    revived = wait_until(
        lambda: (pid := jobs.read_status(job).supervisor_pid) != dead and pid, 30, "a takeover"
    )
    assert _parent(revived) == server  # forked by the server itself, not a fresh interpreter
    assert jobs.read_status(job).status == "waiting"  # still paused, under its new supervisor
    out = sp("resume", job, input="")
    assert out.returncode == 0, out.stderr
    assert ended(job)["status"] == "done"
    assert sp("result", job).stdout.strip() == "finished after a crash"
