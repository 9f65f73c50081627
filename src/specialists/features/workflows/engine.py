"""The workflow job's agent process: `python -m specialists.features.workflows.engine <job_dir>`.

The supervisor runs this like any agent (workflows/runner.py): it owns status.json and
events.jsonl; the engine owns the journal and the receipt. Progress goes to stdout as one
JSON object per line (`{"wf": "event", ...}`), the runner turns each into a notice, and the
result is written to workflow-result.json and announced by the last line (`{"wf": "result",
"file": ...}`), or the last line gives the error (`{"wf": "error", "message": ...}`).
SIGTERM (a stop, a timeout) cancels the script: every running child is asked to stop, the
journal says so, and the receipt is written before the engine exits.
"""

from __future__ import annotations

import asyncio
import json
import logging
import signal
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from specialists.base.errors import SpecialistsError, UserError, bound_tracebacks, exception_text
from specialists.features.spend.approval import FanOut, owner_keys, settings_of
from specialists.features.workflows.children import JobChildren
from specialists.features.workflows.journal import JOURNAL_FILE, Journal, fold, read_entries
from specialists.features.workflows.mission import mission_of
from specialists.features.workflows.receipt import build_receipt, spend_summary, write_receipt
from specialists.features.workflows.results import to_jsonable
from specialists.features.workflows.runtime import Runs
from specialists.features.workflows.source import Source, load_document, load_python
from specialists.store.atomic import write_atomic
from specialists.store.ids import is_job_id
from specialists.store.jobs import JobStore
from specialists.store.news import NEWS
from specialists.store.records import JobRecord
from specialists.supervise import forks

RESULT_FILE = "workflow-result.json"


def say(wf: str, **fields: Any) -> None:
    sys.stdout.write(json.dumps({"wf": wf, **fields}, ensure_ascii=False, default=str) + "\n")
    sys.stdout.flush()


def main(argv: list[str]) -> int:
    bound_tracebacks()  # a script may raise the recursion limit and recurse a million deep
    logging.basicConfig(level=logging.WARNING, stream=sys.stderr)
    job_dir = Path(argv[0])
    forks.serve_here()  # its children's supervisors fork from it (from this, the main thread)
    store = JobStore(job_dir.parent.parent, news=NEWS)
    record = store.read_record(job_dir.name)
    options = record.runner_options
    journal = Journal(job_dir)
    prior_entries = _prior_entries(store, options.get("resume_of"))
    prior = fold(prior_entries)
    rerun = options.get("rerun_changed") or []
    stopping = threading.Event()
    runs = Runs(
        JobChildren(store.root, record),
        journal,
        prior=prior,
        accept_changed=True if rerun is True else frozenset(rerun),
        concurrency=int(options.get("concurrency") or 1),
        emit=lambda e: say("event", **e),
        nested_ok=int(options.get("depth", 0)) < 1,
        mission=mission_of(store.root, options),
        budget_tokens=options.get("budget_tokens"),
        report=lambda p: say("progress", **p),
        approve=_fan_out(store, record, journal, stopping),
        ceiling=_ceiling(store, record.id),
    )
    journal.append({"e": "start", "workflow": record.prompt, "resume_of": options.get("resume_of")})
    say("event", kind="start", concurrency=runs.progress()["concurrency"])
    say("progress", **runs.progress())
    status, code = "done", 0
    try:
        value = asyncio.run(_run(runs, record, stopping))
        text = json.dumps(to_jsonable(value), indent=1, ensure_ascii=False)
        write_atomic(job_dir / RESULT_FILE, text.encode("utf-8"))  # too big for a line
        say("result", file=RESULT_FILE)
    except asyncio.CancelledError:
        status, code = "cancelled", 1
        say("error", message="the workflow was stopped; its running children were asked to stop")
    except SpecialistsError as exc:
        status, code = "error", 1
        say("error", message=exc.one_line())
    except Exception as exc:  # the script's own bug: one line here, the traceback in stderr.log
        status, code = "error", 1
        logging.getLogger("specialists.features.workflows").exception("the workflow script failed")
        say("error", message=f"the workflow script raised {exception_text(exc)}{_where(exc)}")
    finally:
        journal.append({"e": "finish", "status": status})
        entries = read_entries(job_dir / JOURNAL_FILE)
        keys = fold(entries)
        merged = {**{k: v for k, v in prior.items() if k in runs.results}, **keys}
        spend = spend_summary(entries, runs.progress()["children"])
        receipt = build_receipt(store, record.id, status, merged, _lineage(merged), spend)
        write_receipt(job_dir, receipt)
    return code


async def _run(runs: Runs, record: JobRecord, stopping: threading.Event) -> Any:
    task = asyncio.ensure_future(_script(runs, record))
    loop = asyncio.get_running_loop()

    def stop() -> None:
        stopping.set()  # a wait for an approval ends too
        task.cancel()

    loop.add_signal_handler(signal.SIGTERM, stop)
    loop.add_signal_handler(signal.SIGINT, stop)
    return await task


def _ceiling(store: JobStore, job_id: str) -> Callable[[], str | None] | None:
    """A spend ceiling over the run reached, counted before each launch (spend/tally.py);
    None when no ceiling covers it (its supervisor wrote its ceilings before this started)."""
    status = store.read_status(job_id)
    if status is None or not status.ceilings:
        return None
    from specialists.features.spend.tally import reached

    return lambda: reached(store, job_id)


def _fan_out(
    store: JobStore, record: JobRecord, journal: Journal, stopping: threading.Event
) -> Callable[[list[str]], None] | None:
    """The approval children wait for when config asks for one ([spend], spend/approval.py);
    its estimates and answers go to the journal (workflow show puts them beside the actual
    spend)."""
    settings = settings_of(store.root.parent)
    if settings.approve_over_cost is None and settings.approve_over_tokens is None:
        return None
    fan_out = FanOut(
        store,
        record.id,
        settings,
        to=owner_keys(store, record.id),
        note=lambda entry: journal.append({**entry, "ts": int(time.time() * 1000)}),
        cancelled=stopping.is_set,
    )
    return fan_out.check


async def _script(runs: Runs, record: JobRecord) -> Any:
    options = record.runner_options
    source = Source.from_dict(dict(options.get("source") or {}))
    args = dict(options.get("args") or {})
    if source.kind == "python":
        if source.path is None:
            raise UserError("a Python workflow must be a file in the project")
        main = load_python(Path(source.path))
        return await main(runs, args)
    from specialists.features.workflows.declarative import run_document

    return await run_document(runs, load_document(source), args)


def _prior_entries(store: JobStore, resume_of: object) -> list[dict[str, Any]]:
    """The journal being resumed, with what its own resume carried (a chain of resumes). An
    earlier run of the chain that gc collected ends it: the keys only it had finished run
    again (a log line says so), as they would had it never run."""
    if not isinstance(resume_of, str):
        return []
    entries: list[dict[str, Any]] = []
    seen: set[str] = set()
    job_id: object = resume_of
    while isinstance(job_id, str) and job_id not in seen:
        seen.add(job_id)
        if not is_job_id(job_id) or not store.job_dir(job_id).is_dir():
            say("event", kind="log", message=f"the earlier run {job_id[:40]!r} this one "
                "resumes is gone (collected by gc?): keys only it finished run again")  # fmt: skip
            break
        entries = read_entries(store.job_dir(job_id) / JOURNAL_FILE) + entries
        job_id = store.read_record(job_id).runner_options.get("resume_of")
    return entries


def _lineage(keys: dict[str, Any]) -> dict[str, list[dict[str, Any]]]:
    return {k: [{"continues": s.resumed_from}] for k, s in keys.items() if s.resumed_from}


def _where(exc: BaseException) -> str:
    """The innermost line of the workflow's own file: the traceback walked by its links (a
    million deep is a moment), no frame formatted."""
    found = ""
    tb = exc.__traceback__
    while tb is not None:
        name = tb.tb_frame.f_code.co_filename
        if "specialists_workflow" in name or "/workflows/" in name:
            found = f" (at {Path(name).name} line {tb.tb_lineno})"
        tb = tb.tb_next
    return found
