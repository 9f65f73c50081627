"""A fake external-job provider (runners/external_job.py's command protocol), for tests.

    python3 fake_provider.py <state dir> dispatch|reattach ID|result ID|cancel ID

Its jobs are JSON files in the state dir; every call is appended to `calls.log` there, so a
test can tell a reattach from a second dispatch. A job's behaviour comes from the provider
options the definition passes (`options:` in its runner block):

    answer      the result text (default "ANSWER: " + the prompt)
    polls       how many reattach calls see it running before it is done (default 1)
    job_id      the id dispatch reports (a hostile one, for the tests of refusals)
    digest      the digest reattach reports (default: the one dispatched)
    fail        a code: the job ends failed with it
    capacity    a blocking job id: dispatch refuses with a capacity conflict
    hold        true: the job keeps running until a file `release-<id>` appears
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path


def main(argv: list[str]) -> int:
    state, verb, rest = Path(argv[1]), argv[2], argv[3:]
    state.mkdir(parents=True, exist_ok=True)
    with (state / "calls.log").open("a") as log:
        log.write(" ".join([verb, *rest]) + "\n")
    if verb == "dispatch":
        request = json.loads(sys.stdin.read())
        options = request.get("options") or {}
        if options.get("capacity"):
            error = {"code": "capacity", "message": "all seats busy"}
            error["blocking_job_id"] = options["capacity"]
            print(json.dumps({"error": error}))
            return 1
        number = len(list(state.glob("pj-*.json"))) + 1
        job_id = options.get("job_id") or f"pj-{number}"
        record = {"request": request, "seen": 0}
        _write(state / f"pj-{number}.json", {**record, "id": job_id})
        print(json.dumps({"job_id": job_id, "url": f"https://provider.test/c/{job_id}"}))
        return 0
    job_id = rest[0] if rest else ""
    found = [p for p in state.glob("pj-*.json") if json.loads(p.read_text())["id"] == job_id]
    if not found:
        print(json.dumps({"error": {"code": "not_found", "message": f"no job {job_id}"}}))
        return 1
    path = found[0]
    job = json.loads(path.read_text())
    options = job["request"].get("options") or {}
    if verb == "reattach":
        job["seen"] += 1
        _write(path, job)
        digest = options.get("digest") or job["request"]["digest"]
        if job.get("cancelled"):
            state_now = "cancelled"
        elif _still_running(state, job_id, job["seen"], options):
            state_now = "running"
        elif options.get("fail"):
            state_now = "failed"
        else:
            state_now = "done"
        reply = {"state": state_now, "digest": digest}
        if state_now == "failed":
            reply["error"] = {"code": options["fail"], "message": "the provider gave up"}
        print(json.dumps(reply))
        return 0
    if verb == "result":
        print(options.get("answer") or "ANSWER: " + job["request"]["prompt"], end="")
        return 0
    if verb == "cancel":
        job["cancelled"] = True
        _write(path, job)
        return 0
    print(f"unknown verb {verb}", file=sys.stderr)
    return 2


def _write(path: Path, job: dict) -> None:
    """Atomically, as a real provider keeps its state: a call killed with the supervisor it
    serves (a test's kill -9) must not leave an empty file for the next call to read."""
    tmp = path.with_name(f".{path.name}.{os.getpid()}")
    tmp.write_text(json.dumps(job))
    os.replace(tmp, path)


def _still_running(state: Path, job_id: str, seen: int, options: dict) -> bool:
    if options.get("hold"):
        return not (state / f"release-{job_id}").exists()
    return seen <= int(options.get("polls", 1))


if __name__ == "__main__":
    sys.exit(main(sys.argv))
