"""`runs`: what a workflow script is given to launch children, and the rules it keeps.

Every child is `await runs.run(key, agent=..., task=..., ...)`. The key is the child's stable
name: a second use of it in one run is an error, and the journal maps it to the input hash
of its options and to the child job it ran as. Before a child is launched the runtime looks
at the journal it was resumed from:

- the key finished with the same inputs: its result is returned without a launch (cached);
- the key finished with other inputs: an error naming the key, unless the run was started
  with that key (or every key) accepted as changed: a script must produce the same inputs
  for the same keys, and this is how that is enforced;
- the key was launched and never journaled as ended (the engine died): the job is adopted
  (waited for if it still runs, taken if it finished well, re-run if not).

Concurrency is a semaphore over launched-and-running children; a run launches at most
MAX_CHILDREN children and a call takes at most MAX_ITEMS items. A child with a schema whose
answer does not satisfy it is asked once more with the validation error (a continuation of
its session where the runner keeps one, else a fresh run with the error added).
"""

from __future__ import annotations

import asyncio
import dataclasses
import json
import time
from collections.abc import Awaitable, Callable, Iterable, Mapping
from dataclasses import replace
from typing import Any

from specialists.base.errors import UserError
from specialists.features.workflows.graph import NodeKind, Planner, common_label, stage_label
from specialists.features.workflows.journal import (
    Journal,
    KeyState,
    launch_entry,
    output_fields,
)
from specialists.features.workflows.mission import MissionHandle
from specialists.features.workflows.options import (
    MAX_CHILDREN,
    ChildOptions,
    bounded,
    child_options,
    claim_output,
    launch_refusal,
)
from specialists.features.workflows.progress import KeyState as Standing
from specialists.features.workflows.progress import Tally
from specialists.features.workflows.results import (
    ChildFailed,
    Children,
    ChildResult,
    Launch,
    Outcome,
    child_result,
    json_or_none,
    schema_problem,
    schema_retry_note,
)
from specialists.features.workflows.slots import STAGE, Slots
from specialists.store.jobs import now_ms

POLL_S = 0.05  # how often running children are looked at (a stat each, mostly)
Emit = Callable[[dict[str, Any]], None]


class Runs:
    def __init__(
        self,
        children: Children,
        journal: Journal,
        *,
        prior: Mapping[str, KeyState] | None = None,
        accept_changed: frozenset[str] | bool = frozenset(),
        concurrency: int = 1,
        emit: Emit | None = None,
        nested_ok: bool = True,
        max_children: int = MAX_CHILDREN,
        mission: MissionHandle | None = None,
        budget_tokens: int | None = None,
        report: Emit | None = None,
        approve: Callable[[list[str]], None] | None = None,
        ceiling: Callable[[], str | None] | None = None,
    ) -> None:
        """`emit` gets the events the feed shows (phases, launches, ends); `report` the
        progress snapshot (progress.py) each time it changes; `approve` is asked (blocking,
        off the loop) before children of these agents launch (spend/approval.py FanOut);
        `ceiling` before each launch: a spend ceiling the run's tree reached, in words."""
        self._children = children
        self._journal = journal
        self._prior = dict(prior or {})
        self._accept = accept_changed
        self._slots = Slots(concurrency)
        self._emit = emit or (lambda _e: None)
        self._nested_ok = nested_ok
        self._max_children = max_children
        self.mission = mission  # its shared state, when the run is on a mission (mission.py)
        self._budget = budget_tokens
        self._spent = 0  # tokens of this run's ended children
        self._keys: set[str] = set()
        self._outputs: dict[str, str] = {}  # output path (normalized) -> the key writing it
        self._launched = 0
        self._results: dict[str, ChildResult] = {}
        self._running: dict[str, str] = {}  # key -> job id
        self._started = time.monotonic()
        self._progress = Tally(max(1, concurrency))
        self._report = report or (lambda _p: None)
        self._reported: dict[str, Any] | None = None
        self._planner = Planner()
        self._approve = approve
        self._ceiling = ceiling
        self._estimated: set[str] = set()  # keys whose launch was approved with a batch

    # --- the script's API --------------------------------------------------------------

    async def run(self, key: str, **options: Any) -> ChildResult:
        """One child; returns its result, or raises ChildFailed (pass check=False to get a
        failed result back instead)."""
        check = options.pop("check", True)
        return await self._one(child_options({"key": key, **options}), None, check)

    async def all(
        self, items: Iterable[Mapping[str, Any]], *, check: bool = True
    ) -> list[ChildResult]:
        """Every item (a mapping of options with its key) at once, up to the concurrency
        limit; returns when all have ended (a barrier), results in item order."""
        parsed = [child_options(item) for item in bounded(items)]
        seen: set[str] = set()
        outputs = dict(self._outputs)
        for opts in parsed:  # refused before any of them launches
            self._check_new_key(opts.key, seen)
            seen.add(opts.key)
            claim_output(outputs, opts)
        await self._approval(parsed)
        node = self._begin("all", [common_label([o.key for o in parsed])], len(parsed))[0]
        self._progress.lookahead += len(parsed)  # counted before the first one is asked for
        try:
            runs = (self._run(o, node=node, planned=True) for o in parsed)
            results = list(await asyncio.gather(*runs))
        finally:
            self._planner.end(node)
        failed = [r for r in results if not r.ok]
        if check and failed:
            raise ChildFailed(failed)
        return results

    async def pipeline(
        self, items: Iterable[Any], *stages: Callable[..., Any], check: bool = True
    ) -> list[Any]:
        """Each item through `stages` in order, items side by side and no barrier between
        stages: item i's stage 2 starts as soon as its stage 1 is done. A stage gets
        (item, previous) and returns a mapping of child options (run here), a coroutine
        (awaited), or a plain value. Returns each item's last value, in item order."""
        listed = bounded(items)
        if not stages:
            raise UserError("pipeline needs at least one stage")

        labels = [stage_label(stage, n) for n, stage in enumerate(stages, 1)]
        nodes = self._begin("stage", labels, len(listed))
        self._progress.lookahead += len(listed) * len(stages)

        async def through(item: Any) -> Any:
            value: Any = None
            ahead = len(stages)  # this item's stages not begun, counted in the total
            try:
                for depth, stage in enumerate(stages):
                    STAGE.set(depth)  # this item's task only: a later stage gets slots first
                    ahead -= 1
                    self._progress.lookahead -= 1  # its child (if any) is counted by key now
                    got = stage(item, value)
                    if isinstance(got, Mapping):
                        got = self._run(child_options(got), node=nodes[depth])
                    value = await got if isinstance(got, Awaitable) else got
                    if isinstance(value, ChildResult) and not value.ok:
                        if check:
                            raise ChildFailed([value])
                        return value
                return value
            finally:
                self._progress.lookahead -= ahead  # stages it will never reach
                self._report_progress()

        try:
            return list(await asyncio.gather(*(through(i) for i in listed)))
        finally:
            self._planner.end(nodes[-1])

    async def workflow(
        self, key: str, name: str, args: Mapping[str, Any] | None = None
    ) -> ChildResult:
        """A nested workflow as one child (one level deep); its result's data is what the
        nested workflow returned."""
        if not self._nested_ok:
            raise UserError(
                f"nested workflow {key!r}: workflows nest one level deep",
                hint="call runs.run here, or move this part to the outer workflow",
            )
        opts = child_options({"key": key, "agent": f"workflow:{name}", "task": json.dumps(args)})
        return await self._one(opts, (name, dict(args or {})), True)

    async def _one(
        self, opts: ChildOptions, nested: tuple[str, Mapping[str, Any]] | None, check: bool
    ) -> ChildResult:
        """One child as a call of its own (`runs.run`, `runs.workflow`): a node of the shape."""
        self._check_new_key(opts.key)
        node = self._begin("run", [opts.key], 1)[0]
        try:
            result = await self._run(opts, nested, node=node)
        finally:
            self._planner.end(node)
        if check and not result.ok:
            raise ChildFailed([result])
        return result

    def phase(self, name: str) -> None:
        self._progress.phase = str(name)[:200]
        self._journal.append({"e": "phase", "name": self._progress.phase, "ts": now_ms()})
        self._emit({"kind": "phase", "name": self._progress.phase})
        self._report_progress()

    def emit(self, message: object, **fields: Any) -> None:
        text = str(message)[:2000]
        self._journal.append({"e": "log", "message": text, "ts": now_ms()})
        self._emit({"kind": "log", "message": text, **fields})

    log = emit

    def status(self) -> dict[str, Any]:
        done = [r for r in self._results.values() if r.ok]
        return {
            "phase": self._progress.phase,
            "launched": self._launched,
            "running": dict(self._running),
            "done": len(done),
            "failed": len(self._results) - len(done),
            "elapsed_s": round(time.monotonic() - self._started, 3),
        }

    @property
    def results(self) -> dict[str, ChildResult]:
        return dict(self._results)

    def progress(self) -> dict[str, Any]:
        """Done, running and queued of the total, the phase, the concurrency, the spending
        (progress.py): what status.json carries for the views."""
        return self._progress.snapshot()

    # --- progress and shape ------------------------------------------------------------

    def _begin(self, kind: NodeKind, labels: list[str], count: int) -> list[str]:
        """Journal the node(s) of a call beginning now (graph.py); their ids."""
        entries = self._planner.begin(kind, labels, count, self._progress.phase)
        for entry in entries:
            self._journal.append({**entry, "ts": now_ms()})
        return [str(e["id"]) for e in entries]

    def _stand(self, key: str, state: Standing) -> None:
        self._progress.key(key, state)
        self._report_progress()

    def _report_progress(self) -> None:
        snapshot = self._progress.snapshot()
        if snapshot != self._reported:
            self._reported = snapshot
            self._report(snapshot)

    # --- one child ---------------------------------------------------------------------

    def _check_new_key(self, key: str, also: set[str] = frozenset()) -> None:  # type: ignore[assignment]
        if key in self._keys or key in also:
            raise UserError(
                f"duplicate workflow key {key!r}",
                hint="every child needs its own stable key (derive it from the item)",
            )

    async def _run(
        self,
        opts: ChildOptions,
        nested: tuple[str, Mapping[str, Any]] | None = None,
        *,
        node: str | None = None,
        planned: bool = False,
    ) -> ChildResult:
        """One key to its result. `planned`: the key was counted ahead (`runs.all`)."""
        self._check_new_key(opts.key)
        claim_output(self._outputs, opts)
        await self._approval([opts])
        self._keys.add(opts.key)
        if planned:
            self._progress.lookahead -= 1
        self._stand(opts.key, "queued")
        try:
            result = await self._run_key(opts, nested, node)
        except BaseException:
            self._stand(opts.key, "failed")
            raise
        self._stand(opts.key, "done" if result.ok else "failed")
        return result

    async def _run_key(
        self,
        opts: ChildOptions,
        nested: tuple[str, Mapping[str, Any]] | None,
        node: str | None,
    ) -> ChildResult:
        h = opts.input_hash()
        prior = self._prior.get(opts.key)
        if prior is not None and prior.hash != h and prior.done and not self._accepts(opts.key):
            raise UserError(
                f"workflow key {opts.key!r} finished before with different inputs",
                hint="make the script give this key the same agent, task and options, or "
                f"resume with --rerun-changed {opts.key} (or --rerun-changed all)",
            )
        result: ChildResult | None = None
        earlier = None
        if prior is not None and prior.hash == h:
            result, earlier = await self._adopt(opts, prior, node), prior.job
        if result is None:
            result = await self._launch_and_wait(opts, h, nested, node, earlier)
        self._results[opts.key] = result
        return result

    async def _approval(self, batch: list[ChildOptions]) -> None:
        """Children about to launch, estimated once (a batch before its first child): a
        costly fan-out waits here for its owner's approval, or fails."""
        new = [o for o in batch if o.key not in self._estimated and not self._cached(o)]
        self._estimated.update(o.key for o in batch)
        if new and self._approve is not None:
            await asyncio.to_thread(self._approve, [o.agent or "?" for o in new])

    def _cached(self, opts: ChildOptions) -> bool:
        prior = self._prior.get(opts.key)
        return prior is not None and prior.done and prior.hash == opts.input_hash()

    def _accepts(self, key: str) -> bool:
        return self._accept is True or (not isinstance(self._accept, bool) and key in self._accept)

    async def _adopt(
        self, opts: ChildOptions, prior: KeyState, node: str | None
    ) -> ChildResult | None:
        """The earlier run's child of this key, if it finished well or still runs."""
        if prior.done:
            output = prior.output
            if output is None and prior.job:
                output = self._children.read_output(prior.job) or ""
            result = child_result(opts, "done", output or "", None, tuple(prior.jobs), cached=True)
            result = dataclasses.replace(result, output_file=prior.output_file)
            self._journal.append(
                {"e": "cached", "key": opts.key, "job": prior.job, "node": node, "ts": now_ms()}
            )
            self._emit({"kind": "cached", "key": opts.key, "job": prior.job})
            return result
        job = prior.job
        if prior.status is not None or job is None:
            return None  # it failed or was stopped: run it again
        self._stand(opts.key, "running")
        self._emit({"kind": "adopt", "key": opts.key, "job": job})
        outcome = await self._wait(opts.key, job)
        data = None
        if outcome.status == "done" and opts.schema is not None:
            data, problem = schema_problem(opts.schema, outcome.output)
            if problem is not None:  # the engine died before asking again: run the key anew
                self._end(opts, prior.hash, job, Outcome("error", outcome.output, problem))
                return None
        outcome, details = await asyncio.to_thread(self._children.finish, job, opts, outcome)
        written = self._end(opts, prior.hash, job, outcome, details)
        if outcome.status != "done":
            return None
        result = child_result(opts, "done", outcome.output, None, tuple(prior.jobs), data=data)
        return dataclasses.replace(result, output_file=written)

    async def _launch_and_wait(
        self,
        opts: ChildOptions,
        h: str,
        nested: tuple[str, Mapping[str, Any]] | None,
        node: str | None,
        earlier: str | None = None,
    ) -> ChildResult:
        jobs: list[str] = []
        self._stand(opts.key, "queued")  # an adopted key that must run again waits anew
        async with self._slots:
            self._stand(opts.key, "running")
            launch = Launch(opts, opts.task, nested=nested, node=node, earlier=earlier)
            if opts.resume is not None:
                job, _agent = self._children.keyed_resume(opts.resume)
                launch = Launch(opts, opts.task, continue_from=job, node=node)
            outcome, job = await self._attempt(launch, h, 1, jobs)
            data = None
            if outcome.status == "done" and opts.schema is not None:
                data, problem = schema_problem(opts.schema, outcome.output)
                if problem is not None:
                    self._emit({"kind": "schema_retry", "key": opts.key, "problem": problem})
                    outcome, job = await self._attempt(self._retry(opts, job, problem), h, 2, jobs)
                    data, problem = schema_problem(opts.schema, outcome.output)
                    if outcome.status == "done" and problem is not None:
                        why = f"the answer does not satisfy the schema: {problem}"
                        outcome = Outcome("error", outcome.output, why)
            # The gate and acceptance judge the last attempt (its worktree is captured too).
            outcome, details = await asyncio.to_thread(self._children.finish, job, opts, outcome)
            written = self._end(opts, h, job, outcome, details)
            if nested is not None and outcome.status == "done":
                data = json_or_none(outcome.output)
        result = child_result(
            opts, outcome.status, outcome.output, outcome.error, tuple(jobs), data=data
        )
        return dataclasses.replace(result, output_file=written)

    def _retry(self, opts: ChildOptions, job: str, problem: str) -> Launch:
        note = schema_retry_note(opts.schema, problem)
        if self._children.can_continue(job):
            return Launch(opts, note, continue_from=job)
        return Launch(opts, f"{opts.task}\n\n{note}", retry_of=job)

    async def _attempt(
        self, launch: Launch, h: str, attempt: int, jobs: list[str]
    ) -> tuple[Outcome, str]:
        opts = launch.options
        reached = self._ceiling() if self._ceiling is not None else None
        refusal = launch_refusal(
            opts.key, self._launched, self._max_children, self._spent, self._budget, reached
        )
        if refusal is not None:
            raise refusal
        self._launched += 1

        def created(job_id: str, resolved: str) -> None:  # journaled before the child starts
            self._journal.append(launch_entry(launch, h, job_id, attempt, resolved))

        job = self._children.launch(replace(launch, attempt=attempt), created)
        jobs.append(job)
        self._emit({"kind": "launch", "key": opts.key, "job": job, "attempt": attempt})
        return await self._wait(opts.key, job), job

    async def _wait(self, key: str, job: str) -> Outcome:
        self._running[key] = job
        try:
            while True:
                outcome = self._children.outcome(job)
                spent = self._children.spent(job)
                if spent is not None:
                    self._progress.spent(job, spent)
                    self._report_progress()
                if outcome is not None:
                    self._spent += outcome.tokens
                    return outcome
                await asyncio.sleep(POLL_S)
        except asyncio.CancelledError:
            self._children.stop(job)  # the workflow is stopping: so are its children
            raise
        finally:
            self._running.pop(key, None)

    def _end(
        self,
        opts: ChildOptions,
        h: str,
        job: str,
        outcome: Outcome,
        details: Mapping[str, Any] | None = None,
    ) -> str | None:
        """Journal the key's end; the output file written for it, if any."""
        details = dict(details or {})
        written = details.pop("output_file", None)
        entry: dict[str, Any] = {
            "e": "end",
            "key": opts.key,
            "hash": h,
            "job": job,
            "status": outcome.status,
            # A child a resume adopted has no launch entry in this run's journal: its end
            # names who ran it (`workflow show`).
            "agent": opts.agent,
            "context": opts.context,
            "ts": now_ms(),
        }
        if outcome.status == "done":
            entry.update(output_fields(outcome.output, f"{job}/result.txt"))
        if outcome.error:
            entry["error"] = outcome.error[:2000]
        if details:
            entry["acceptance"] = details
        if written:
            entry["output_file"] = written
        self._journal.append(entry)
        # Counted before it is told: a view that reads the end finds the progress with it.
        self._stand(opts.key, "done" if outcome.status == "done" else "failed")
        self._emit({"kind": "end", "key": opts.key, "job": job, "status": outcome.status})
        return written if isinstance(written, str) else None
