"""Receipts and keyed resume over a real store (no processes): each refusal is one clear
line, and a resumable child is found (issue 11 items 4 and 11)."""

from __future__ import annotations

from pathlib import Path

import pytest

from specialists.base.errors import UserError
from specialists.features.workflows.journal import KeyState
from specialists.features.workflows.receipt import build_receipt, keyed_resume, write_receipt
from specialists.store.jobs import JobStore, now_ms
from specialists.store.writer import JobWriter, mark_ended
from tests.support.jobs import new_job


@pytest.fixture
def store(tmp_path: Path) -> JobStore:
    return JobStore(tmp_path / ".specialists", news=None)


def _ended(store: JobStore, tmp_path: Path, final: str, session: bool = True, **extra) -> str:  # type: ignore[no-untyped-def]
    record, lock = new_job(store, tmp_path, **extra)
    status = store.read_status(record.id)
    assert status is not None
    if session:
        path = store.job_dir(record.id) / "session.jsonl"
        path.write_text("{}\n")
        status.session_file = str(path)
    writer = JobWriter(store, record.id, patience_s=0)
    mark_ended(status, final, "boom" if final == "error" else None, now_ms())
    writer.write_final(status, final)
    writer.close()
    lock.release()
    return record.id


def _workflow(store: JobStore, tmp_path: Path, children: dict[str, str]) -> str:
    wf = _ended(store, tmp_path, "done", session=False)
    keys = {
        k: KeyState(k, "h", jobs=[job], status="done", agent="oracle")
        for k, job in children.items()
    }
    write_receipt(store.job_dir(wf), build_receipt(store, wf, "done", keys, {}))
    return wf


def test_a_resumable_child_is_found_and_explained(store: JobStore, tmp_path: Path) -> None:
    child = _ended(store, tmp_path, "done")
    wf = _workflow(store, tmp_path, {"oracle": child})
    job, agent, entry = keyed_resume(store, wf, "oracle")
    assert (job, agent) == (child, "oracle")
    assert entry["resumable"] is True and entry["why"] == "done, with its session kept"


def test_keyed_resume_refusals_are_one_line_each(store: JobStore, tmp_path: Path) -> None:
    stopped = _ended(store, tmp_path, "cancelled")
    no_session = _ended(store, tmp_path, "done", session=False)
    fine = _ended(store, tmp_path, "done")
    wf = _workflow(store, tmp_path, {"stopped": stopped, "plain": no_session, "fine": fine})
    bare = _ended(store, tmp_path, "done", session=False)
    with pytest.raises(UserError, match=f"workflow {bare} has no receipt"):
        keyed_resume(store, bare, "fine")
    with pytest.raises(UserError, match="has no key 'missing'"):
        keyed_resume(store, wf, "missing")
    with pytest.raises(UserError, match="a stopped run is final"):
        keyed_resume(store, wf, "stopped")
    with pytest.raises(UserError, match="keeps no session to continue"):
        keyed_resume(store, wf, "plain")
    with pytest.raises(UserError, match="invalid job id"):
        keyed_resume(store, "../etc", "fine")
    _ended(store, tmp_path, "done", thread={"continues": fine})  # continued since
    with pytest.raises(UserError, match="is stale"):
        keyed_resume(store, wf, "fine")


def test_a_damaged_receipt_is_refused(store: JobStore, tmp_path: Path) -> None:
    wf = _workflow(store, tmp_path, {})
    (store.job_dir(wf) / "workflow-receipt.json").write_text('{"version": 99, "children": {}}')
    with pytest.raises(UserError, match="unknown shape"):
        keyed_resume(store, wf, "k")
    (store.job_dir(wf) / "workflow-receipt.json").write_text("not json")
    with pytest.raises(UserError, match="cannot be read"):
        keyed_resume(store, wf, "k")


def test_resume_by_run_id_finds_a_resumable_job_and_refuses_the_rest(
    store: JobStore, tmp_path: Path
) -> None:
    """`resume: "<run id>"` (seed 004) is revalidated as keyed resume is: resumable now, and
    not continued since, by a workflow child or by `specialists run --continue`."""
    from specialists.features.workflows.receipt import run_resume

    fine = _ended(store, tmp_path, "done", specialist="oracle")
    assert run_resume(store, fine) == (fine, "oracle")
    assert run_resume(store, fine[:6]) == (fine, "oracle")  # a unique prefix
    stopped = _ended(store, tmp_path, "cancelled")
    no_session = _ended(store, tmp_path, "done", session=False)
    for job, said in (
        (stopped, "was stopped"),
        (no_session, "keeps no session"),
        ("deadbeef", "no job 'deadbeef'"),
    ):
        with pytest.raises(UserError, match=said):
            run_resume(store, job)
    by_cli = _ended(store, tmp_path, "done", parent_id=fine, resume_session="s")
    with pytest.raises(UserError) as info:
        run_resume(store, fine)
    assert (
        info.value.message
        == f"job {fine} was continued since by job {by_cli}; resume the latest run id"
    )
    assert run_resume(store, by_cli)[0] == by_cli
    other = _ended(store, tmp_path, "done")
    _ended(store, tmp_path, "done", thread={"id": "t-1", "continues": other})
    with pytest.raises(UserError, match="continued since"):
        run_resume(store, other)


def test_a_gone_or_misnamed_child_is_not_resumable_and_show_still_shows_the_rest(
    store: JobStore, tmp_path: Path
) -> None:
    """A child gc collected (or a journal naming no job id) ended a resumed run's engine with
    'FileNotFoundError' (the receipt asked for its status) after all its work, and made
    `workflow show` exit 4 ('invalid job id', exit 2): it is not resumable, said why."""
    import shutil

    from specialists.features.workflows.journal import JOURNAL_FILE
    from specialists.features.workflows.receipt import resumability
    from specialists.features.workflows.views import show_workflow

    kept, gone = _ended(store, tmp_path, "done"), _ended(store, tmp_path, "done")
    shutil.rmtree(store.job_dir(gone))
    assert resumability(store, gone) == (False, f"its job {gone} is gone (collected by gc?)")
    assert resumability(store, "../../etc")[0] is False
    wf = _ended(store, tmp_path, "done", session=False, runner="workflow")
    lines = [
        f'{{"e":"launch","key":"{k}","hash":"h","job":"{j}"}}'
        for k, j in (("a", kept), ("b", gone), ("c", "../../etc"))
    ]
    (store.job_dir(wf) / JOURNAL_FILE).write_text("\n".join(lines) + "\n")
    view = show_workflow(store, wf)
    assert [(c["key"], c["status"]) for c in view["children"]] == [
        ("a", "done"), ("b", "gone"), ("c", "unreadable"),
    ]  # fmt: skip


def test_a_resume_whose_earlier_run_gc_collected_reads_the_chain_up_to_it(
    store: JobStore, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A chain of resumes whose first run was collected ended the engine at once with
    'StoreError: job.json is missing'; the chain is read up to the gone run, and said."""
    import shutil

    from specialists.features.workflows.engine import _prior_entries
    from specialists.features.workflows.journal import JOURNAL_FILE

    first = _ended(store, tmp_path, "done", session=False, runner="workflow")
    second = _ended(store, tmp_path, "done", session=False, runner="workflow",
                    runner_options={"resume_of": first})  # fmt: skip
    (store.job_dir(second) / JOURNAL_FILE).write_text('{"e":"phase","name":"p"}\n')
    shutil.rmtree(store.job_dir(first))
    assert _prior_entries(store, second) == [{"e": "phase", "name": "p"}]
    assert "is gone (collected by gc?)" in capsys.readouterr().out
