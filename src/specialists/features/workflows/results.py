"""What a child's run comes to, and the one seam the runtime launches children through.

`Children` is the seam: `launch` creates and starts one child job (calling `on_created`
with its id before the child starts, so the journal names it first), `outcome` says how a
job ended (None while it runs), `stop` asks it to stop. children.py is the real one over the
job store; testing.py has a fake that runs on the event loop without processes.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Protocol

from specialists.base.errors import UserError
from specialists.base.reader import Invalid, load_json
from specialists.features.workflows.options import ChildOptions, Resume


@dataclass(frozen=True)
class Outcome:
    status: str  # done | error | cancelled
    output: str = ""
    error: str | None = None
    tokens: int = 0  # input + output tokens the child's job spent (a workflow's budget)


@dataclass(frozen=True)
class Launch:
    """One child job to make: the options, and what this attempt adds to them."""

    options: ChildOptions
    prompt: str  # the task as sent (a retry's prompt says what was wrong)
    continue_from: str | None = None  # a job whose session this attempt continues
    retry_of: str | None = None  # a fresh retry of this job (it works where that one did)
    nested: tuple[str, Mapping[str, Any]] | None = None  # (workflow, args): a nested workflow
    node: str | None = None  # the call it belongs to, in the workflow's shape (graph.py)
    # the key's job of an earlier run that ended without an answer (its supervisor died): an
    # external job whose provider job still runs is reattached, not dispatched again
    earlier: str | None = None
    attempt: int = 1  # of its key, in this run: with the run and the key, its start key


class Children(Protocol):
    def launch(self, launch: Launch, on_created: Callable[[str, str], None]) -> str:
        """Create and start the child; `on_created(job_id, resolved_context)` runs between
        the two. Raises UserError for a child that cannot be launched (nothing is left)."""

    def outcome(self, job_id: str) -> Outcome | None: ...

    def spent(self, job_id: str) -> dict[str, Any] | None:
        """What the job has spent so far, its children included (store/rollup.py), as last
        read by `outcome`; None before that."""

    def stop(self, job_id: str) -> None: ...

    def can_continue(self, job_id: str) -> bool:
        """The job keeps an agent session a follow-up can continue."""

    def keyed_resume(self, resume: Resume) -> tuple[str, str]:
        """(job id to continue, its agent): from the named workflow's receipt, or the run id
        given; revalidated now (resumable, and not continued since)."""

    def read_output(self, job_id: str) -> str | None: ...

    def finish(
        self, job_id: str, options: ChildOptions, outcome: Outcome
    ) -> tuple[Outcome, Mapping[str, Any] | None]:
        """After the child's last attempt: capture its worktree, run its gate and judge its
        acceptance. A rejected child comes back as an error with the reason; the details
        (the acceptance outcome, the handoff capture) go to the journal."""


class ChildFailed(UserError):
    """A child (or several) did not finish well; the script may catch it."""

    def __init__(self, results: list[ChildResult]) -> None:
        self.results = results
        first = results[0]
        more = f" (and {len(results) - 1} more)" if len(results) > 1 else ""
        super().__init__(
            f"child {first.key!r} {first.status}: {first.error or 'no reason given'}{more}",
            hint=f"`specialists feed {first.job_id}` shows what it did" if first.job_id else None,
        )


@dataclass(frozen=True)
class ChildResult:
    key: str
    status: str  # done | error | cancelled
    output: str = ""
    error: str | None = None
    job_id: str | None = None
    jobs: tuple[str, ...] = ()  # every job of the key (retries, continuations)
    data: Any = None  # the parsed answer, when the child had a schema
    cached: bool = False  # finished in an earlier run with the same inputs; not re-run
    output_file: str | None = None  # where its answer was written (the `output` option)

    @property
    def ok(self) -> bool:
        return self.status == "done"

    @property
    def run_id(self) -> str | None:
        """Seed 004's name for the child's latest job: what `resume=` continues next."""
        return self.job_id

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"key": self.key, "status": self.status, "job": self.job_id}
        if self.data is not None:
            out["data"] = self.data
        else:
            out["output"] = self.output
        if self.error:
            out["error"] = self.error
        if self.cached:
            out["cached"] = True
        if self.output_file:
            out["output_file"] = self.output_file
        return out


def to_jsonable(value: Any) -> Any:
    """A script's return value with every ChildResult replaced by its JSON form."""
    if isinstance(value, ChildResult):
        return value.to_json()
    if isinstance(value, Mapping):
        return {str(k): to_jsonable(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [to_jsonable(v) for v in value]
    if value is None or isinstance(value, str | int | float | bool):
        return value
    return str(value)


MAX_ANSWER_DEPTH = 100  # far deeper than any schema's data; far from Python's stack limit


def schema_problem(schema: Mapping[str, Any], answer: str) -> tuple[Any, str | None]:
    """(the parsed answer, None) when `answer` is JSON satisfying `schema`, else (None, why)."""
    text = answer.strip()
    if text.startswith("```") and text.endswith("```") and "\n" in text:
        text = text.split("\n", 1)[1]
        text = text[: text.rfind("```")]
    try:  # an agent's text: nesting bounded before the validator walks it
        data = load_json(text, "JSON", max_nodes=None, max_depth=MAX_ANSWER_DEPTH)
    except Invalid as exc:
        return None, f"the answer is not JSON ({exc.problem})"
    from jsonschema import validators

    validator = validators.validator_for(schema)(schema)
    errors = sorted(validator.iter_errors(data), key=lambda e: list(e.path))
    if errors:
        e = errors[0]
        at = "/".join(str(p) for p in e.path) or "the top"
        return None, f"{e.message} (at {at})"
    return data, None


def child_result(
    opts: ChildOptions,
    status: str,
    output: str,
    error: str | None,
    jobs: tuple[str, ...],
    *,
    data: Any = None,
    cached: bool = False,
) -> ChildResult:
    if data is None and status == "done" and opts.schema is not None:
        data, _ = schema_problem(opts.schema, output)
    return ChildResult(
        opts.key, status, output, error, jobs[-1] if jobs else None, jobs, data, cached
    )


def json_or_none(text: str) -> Any:
    try:
        return load_json(text, "JSON", max_nodes=None, max_depth=MAX_ANSWER_DEPTH)
    except Invalid:
        return None


def schema_retry_note(schema: Any, problem: str) -> str:
    """What a child whose answer failed its schema is asked once more."""
    return (
        f"Your final answer did not satisfy the required JSON schema: {problem}. Answer "
        "again with one JSON value that satisfies this schema, and nothing else:\n"
        + json.dumps(schema)
    )
