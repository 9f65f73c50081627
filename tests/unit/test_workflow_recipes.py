"""The shipped recipes, run on the runtime with fake children: the public API only, found by
name like any workflow, with the shape of result each promises."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

from specialists.workflows.journal import Journal
from specialists.workflows.results import Launch
from specialists.workflows.runtime import Runs
from specialists.workflows.source import find_workflow, list_workflows, load_python
from specialists.workflows.testing import FakeChildren


def _recipe(tmp_path: Path, name: str):  # type: ignore[no-untyped-def]
    source = find_workflow(tmp_path, name)
    assert source.kind == "python" and source.path is not None
    return load_python(Path(source.path))


def test_the_recipes_are_listed(tmp_path: Path) -> None:
    names = [n for n, _ in list_workflows(tmp_path)]
    assert {"parallel_review", "parallel_research"} <= set(names)


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
