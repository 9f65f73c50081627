"""An interrupted or stopped pi job ends its waiting ask: pi's abort cannot reach the sidecar
call that waits (the extension only drops its promise), so the job's supervisor settles the
ask when the job pauses or ends. REAL pi 1.6.0, the mock LLM, the real detached supervisor."""

from __future__ import annotations

import json

import pytest

from tests.integration.test_asks_real import echo_tool_result
from tests.integration.test_cli_pi import events, sp, status, wait_until
from tests.integration.test_control_pi import _project, finished, start
from tests.support.mock_llm import MockLLM, Reply, ToolCall

pytestmark = pytest.mark.integration
__all__ = ["_project"]


def asks(*flags: str) -> list[dict]:
    return list(json.loads(sp("asks", "--json", *flags).stdout)["asks"])


def _asking_job(mock_llm: MockLLM) -> tuple[str, dict]:
    ask = {"kind": "need_decision", "message": "tabs or spaces?", "timeout_s": 900}
    mock_llm.enqueue(Reply(tool_calls=(ToolCall("contact_supervisor", ask),)))
    mock_llm.set_default(echo_tool_result)
    job_id = start("ask your supervisor")
    row = wait_until(lambda: (asks() or [None])[0], 90, "the ask")
    return job_id, row


def test_interrupting_a_pi_job_ends_its_ask(mock_llm: MockLLM) -> None:
    """The job pauses; the ask is cancelled with the reason at once (not at its 900 s
    timeout), recorded once in the feed; a late reply is refused; the job resumes."""
    job_id, row = _asking_job(mock_llm)
    out = sp("interrupt", job_id)
    assert out.returncode == 0 and "is paused" in out.stdout, (out.stdout, out.stderr)
    assert asks() == []
    (settled,) = asks("--all")
    assert settled["state"] == "cancelled", settled
    kinds = [e for e in events(job_id) if e["event"] == "ask_cancelled"]
    assert [e["ask"] for e in kinds] == [row["id"]]
    assert kinds[0]["reason"] == "the asking job was interrupted"
    late = sp("reply", row["id"], "spaces")
    assert late.returncode == 2
    assert "already settled: cancelled by the asker (the asking job was interrupted)" in (
        late.stderr
    )
    assert sp("resume", job_id, "--prompt", "decide yourself").returncode == 0
    assert finished(job_id)["status"] == "done"


def test_stopping_a_pi_job_ends_its_ask(mock_llm: MockLLM) -> None:
    job_id, row = _asking_job(mock_llm)
    assert sp("stop", job_id).returncode == 0
    wait_until(lambda: status(job_id)["status"] == "cancelled", 60, "cancelled")
    (settled,) = asks("--all")
    assert settled["state"] == "cancelled", settled
    late = sp("reply", row["id"], "spaces")
    assert late.returncode == 2 and "already settled: cancelled by the asker" in late.stderr
