"""What crosses to a node and back (executors/travel.py): paths rewritten as whole paths
only, JSON lines kept valid, and only the chosen variables of our environment sent."""

from __future__ import annotations

import json

from hypothesis import given
from hypothesis import strategies as st

from specialists.executors.travel import PathMap, remote_env

PATHS = PathMap.of(
    [("/home/me/proj", "/node/work/j1"), ("/home/me/proj/.specialists/jobs/j1", "/node/jobs/j1")]
)


def test_the_longest_path_wins_and_a_longer_name_is_left_alone():
    assert (
        PATHS.to_node("/home/me/proj/.specialists/jobs/j1/session.jsonl")
        == "/node/jobs/j1/session.jsonl"
    )
    assert PATHS.to_node("/home/me/proj/src/a.py") == "/node/work/j1/src/a.py"
    assert PATHS.to_node("/home/me/project2/a.py") == "/home/me/project2/a.py"
    assert PATHS.line_to_local(b"cd /node/work/j1 && ls") == b"cd /home/me/proj && ls"


def test_a_line_back_stays_the_same_json_with_our_paths():
    line = json.dumps({"path": "/node/work/j1/a.py", "text": "in /node/work/j1x"}).encode()
    back = json.loads(PATHS.line_to_local(line))
    assert back == {"path": "/home/me/proj/a.py", "text": "in /node/work/j1x"}


@given(st.text(max_size=60))
def test_any_json_line_stays_valid_json(text):
    line = json.dumps({"t": text + " /node/work/j1/" + text}).encode()
    json.loads(PATHS.line_to_local(line))


def test_only_the_jobs_additions_and_the_forwarded_patterns_travel():
    ours = {
        "PATH": "/usr/bin",
        "HOME": "/home/me",
        "OPENAI_API_KEY": "k",
        "OTHER": "x",
        "GONE": "1",
    }
    job = {**ours, "SPECIALISTS_JOB_DIR": "/home/me/proj/.specialists/jobs/j1", "MODE": "rpc"}
    del job["GONE"]
    env = remote_env(job, ours, ["*_API_KEY"], PATHS)
    assert env.set == {
        "OPENAI_API_KEY": "k",
        "SPECIALISTS_JOB_DIR": "/node/jobs/j1",
        "MODE": "rpc",
    }
    assert env.unset == ("GONE",)
