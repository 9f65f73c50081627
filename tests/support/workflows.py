"""Helpers for workflow tests: a project with specialists and workflow files, and waiting on
a workflow job's journal and end."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from specialists.features.workflows.journal import JOURNAL_FILE, fold, read_entries
from specialists.features.workflows.receipt import RECEIPT_FILE
from specialists.store.jobs import JobStore
from specialists.store.records import JobStatus
from specialists.store.view import current_status
from tests.support.threads import thread_project
from tests.support.waiting import wait_until

NATIVE = (
    "metadata: {name: nat, description: t}\n"
    "execution: {runner: native, model: openai/mock-model, permission_required: READ_ONLY}\n"
    'prompt: {system: "Be brief.", task_template: "$prompt"}\n'
)
PI = (
    "metadata: {name: pichild, description: t}\n"
    "execution: {runner: pi, model: mock/mock-model, permission_required: READ_ONLY}\n"
    'prompt: {task_template: "$prompt"}\n'
)


def workflow_project(workflows: dict[str, str] | None = None, **shell: str) -> Path:
    """The test project: echo, nat (native on the mock), pichild, shell specialists, and the
    given workflow files under .specialists/workflows/."""
    project = thread_project(**shell)
    (project / "specialists" / "nat.specialist.yaml").write_text(NATIVE)
    (project / "specialists" / "pichild.specialist.yaml").write_text(PI)
    folder = project / ".specialists" / "workflows"
    folder.mkdir(parents=True, exist_ok=True)
    for name, text in (workflows or {}).items():
        (folder / name).write_text(text)
    return project


def store(project: Path) -> JobStore:
    return JobStore(project / ".specialists", news=None)


def journal(project: Path, job_id: str) -> list[dict[str, Any]]:
    return read_entries(store(project).job_dir(job_id) / JOURNAL_FILE)


def keys(project: Path, job_id: str) -> dict[str, Any]:
    return fold(journal(project, job_id))


def launched_keys(project: Path, job_id: str) -> list[str]:
    return [e["key"] for e in journal(project, job_id) if e.get("e") == "launch"]


def agent_started(project: Path, job_id: str, key: str) -> bool:
    """The key's child job runs its own agent: its supervisor took over from the launcher.
    A kill of the workflow before that point ends the child as never started (a resume then
    launches it again, rightly), so a test that wants the child adopted waits for this."""
    job = keys(project, job_id).get(key)
    if job is None or job.job is None:
        return False
    st = store(project).read_status(job.job)
    return st is not None and st.status == "running" and bool(st.pid)


def wait_ended(project: Path, job_id: str, timeout: float = 180) -> JobStatus:
    s = store(project)
    wait_until(lambda: not current_status(s, job_id).active, timeout=timeout, what=f"{job_id} ends")
    return current_status(s, job_id)


def receipt(project: Path, job_id: str) -> dict[str, Any]:
    data: dict[str, Any] = json.loads((store(project).job_dir(job_id) / RECEIPT_FILE).read_text())
    return data


def result(project: Path, job_id: str) -> Any:
    return json.loads(store(project).read_result(job_id) or "null")
