"""The shipped recipes, run on the runtime with fake children: the public API only, found by
name like any workflow, with the shape of result each promises."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

from specialists.features.workflows.journal import Journal
from specialists.features.workflows.results import Launch, Outcome
from specialists.features.workflows.runtime import Runs
from specialists.features.workflows.source import find_workflow, list_workflows, load_python
from specialists.features.workflows.testing import FakeChildren


def _recipe(tmp_path: Path, name: str):  # type: ignore[no-untyped-def]
    source = find_workflow(tmp_path, name)
    assert source.kind == "python" and source.path is not None
    return load_python(Path(source.path))


def test_the_recipes_are_listed(tmp_path: Path) -> None:
    names = [n for n, _ in list_workflows(tmp_path)]
    assert {"parallel_review", "parallel_research", "review_and_fix", "migrate_by_site"} <= set(
        names
    )


def test_parallel_review_keeps_only_findings_the_verifier_confirms(tmp_path: Path) -> None:
    def answer(launch: Launch) -> str:
        key = launch.options.key
        if key.startswith("review-"):
            return json.dumps(
                {"findings": [{"id": "a", "problem": "x"}, {"id": "b", "problem": "y"}]}
            )
        return json.dumps({"confirmed": ["b"], "refuted": ["a"]})

    children = FakeChildren(answer=answer)
    runs = Runs(children, Journal(tmp_path), concurrency=4)
    main = _recipe(tmp_path, "parallel_review")
    out = asyncio.run(main(runs, {"target": "src/x.py", "dimensions": "tests,security"}))
    assert out["confirmed"] == {
        "tests": [{"id": "b", "problem": "y"}],
        "security": [{"id": "b", "problem": "y"}],
    }
    assert sorted(children.keys) == [
        "review-security", "review-tests", "verify-security", "verify-tests",
    ]  # fmt: skip
    verify = next(launch for _, launch in children.launches if launch.options.key == "verify-tests")
    assert '"problem": "x"' in verify.prompt and verify.options.schema is not None


def test_parallel_research_synthesizes_every_answer(tmp_path: Path) -> None:
    children = FakeChildren(answer=lambda launch: f"notes for {launch.options.key}")
    runs = Runs(children, Journal(tmp_path), concurrency=4)
    main = _recipe(tmp_path, "parallel_research")
    out = asyncio.run(main(runs, {"questions": "Who calls foo?; Why is bar slow?"}))
    assert children.keys[-1] == "synthesis"
    synthesis = children.launches[-1][1].prompt
    assert "notes for research-who-calls-foo" in synthesis
    assert "notes for research-why-is-bar-slow" in synthesis
    assert out == "notes for synthesis"


def test_review_and_fix_stops_when_a_review_is_clean(tmp_path: Path) -> None:
    """Round 1 finds one problem and fixes it under the gate; round 2's review is clean, so
    the loop ends there (no third review) and says it is clean."""

    def answer(launch: Launch) -> str:
        if launch.options.key == "review-1":
            return json.dumps({"findings": [{"id": "f1", "problem": "off by one"}]})
        if launch.options.key == "review-2":
            return json.dumps({"findings": []})
        return "fixed"

    children = FakeChildren(answer=answer)
    runs = Runs(children, Journal(tmp_path), concurrency=2)
    main = _recipe(tmp_path, "review_and_fix")
    out = asyncio.run(main(runs, {"target": "src/x.py", "gate": "pytest -q"}))
    assert children.keys == ["review-1", "fix-1", "review-2"]
    assert out["clean"] is True and out["rounds"] == 2 and out["open"] == []
    fix = children.launches[1][1]
    assert "off by one" in fix.prompt and fix.options.gate is not None


def test_review_and_fix_ends_at_its_round_budget_without_claiming_success(
    tmp_path: Path,
) -> None:
    children = FakeChildren(
        answer=lambda launch: (
            json.dumps({"findings": [{"id": "f", "problem": "still"}]})
            if launch.options.key.startswith("review-")
            else "tried"
        )
    )
    runs = Runs(children, Journal(tmp_path), concurrency=2)
    main = _recipe(tmp_path, "review_and_fix")
    out = asyncio.run(main(runs, {"rounds": "2"}))
    assert children.keys == ["review-1", "fix-1", "review-2", "fix-2"]
    assert out["clean"] is False and out["open"] == [{"id": "f", "problem": "still"}]


def test_migrate_by_site_runs_each_site_in_a_worktree_and_reports_failures(
    tmp_path: Path,
) -> None:
    def answer(launch: Launch) -> Outcome | str:
        if launch.options.key == "migrate-src-b-py":
            return Outcome("error", "", "tests failed")
        return "migrated"

    children = FakeChildren(answer=answer)
    runs = Runs(children, Journal(tmp_path), concurrency=4)
    main = _recipe(tmp_path, "migrate_by_site")
    out = asyncio.run(main(runs, {"sites": "src/a.py, src/b.py", "instructions": "use pathlib"}))
    assert out["migrated"] == ["src/a.py"] and out["failed"] == {"src/b.py": "tests failed"}
    assert all(launch.options.sandbox for _, launch in children.launches)
    assert "Migrate src/a.py only: use pathlib" in children.launches[0][1].prompt
