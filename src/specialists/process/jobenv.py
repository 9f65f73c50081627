"""What every process of a job carries in its environment.

- The job's mark (jobs/proctree.py: MARK_ENV), so nothing of the job outlives it.
- SPECIALISTS_JOB_ID and, when the job tracks a bead, SPECIALISTS_BEAD_ID.
- Git trailers: every commit made inside the job carries `Specialists-Job: <id>` (and
  `Specialists-Bead: <id>`). The environment points git at a job-scoped hooks directory
  (`core.hooksPath` through GIT_CONFIG_PARAMETERS, the variable `git -c` uses, so it wins over
  the repository's own setting and reaches every git the agent runs). Each hook there first
  runs the repository's own hook of the same name, with the user's git settings as they were,
  and stops if it fails; `prepare-commit-msg`, which git runs even for `--no-verify`, then adds
  the trailers (once: an amend does not repeat them).

Why not GIT_CONFIG_COUNT/KEY/VALUE: Codex drops variables whose names contain KEY from the
shell commands it runs, and git refuses a count whose key is missing. Why not a `git` shim on
PATH: an agent's shell may rebuild PATH; the environment variable survives that.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from pathlib import Path

from specialists.store.proctree import MARK_ENV, job_mark

JOB_ID_ENV = "SPECIALISTS_JOB_ID"
BEAD_ID_ENV = "SPECIALISTS_BEAD_ID"
GIT_PARAMETERS_ENV = "GIT_CONFIG_PARAMETERS"
# The user's own GIT_CONFIG_PARAMETERS ("" if none), restored for the repository's hooks.
SAVED_GIT_PARAMETERS_ENV = "SPECIALISTS_GIT_CONFIG_PARAMETERS"
HOOKS_DIR = "git-hooks"
JOB_FILE = "job.json"
_JOB_FILE_MAX = 4 << 20

# Every hook name git runs from core.hooksPath (githooks(5), git 2.39).
GIT_HOOKS = (
    "applypatch-msg",
    "pre-applypatch",
    "post-applypatch",
    "pre-commit",
    "pre-merge-commit",
    "prepare-commit-msg",
    "commit-msg",
    "post-commit",
    "pre-rebase",
    "post-checkout",
    "post-merge",
    "pre-push",
    "pre-receive",
    "update",
    "proc-receive",
    "post-receive",
    "post-update",
    "reference-transaction",
    "push-to-checkout",
    "pre-auto-gc",
    "post-rewrite",
    "sendemail-validate",
    "post-index-change",
)

CHAIN_HOOK = """\
#!/bin/sh
# specialists: a job's git hook (process/jobenv.py). Runs the repository's own hook of this
# name first, with the user's git settings, then adds the job's trailers to a commit message.
name=${0##*/}
ours=$(cd "${0%/*}" && pwd -P)
GIT_CONFIG_PARAMETERS=$SPECIALISTS_GIT_CONFIG_PARAMETERS
export GIT_CONFIG_PARAMETERS
theirs=$(git rev-parse --git-path hooks 2>/dev/null)
if [ -n "$theirs" ] && [ -x "$theirs/$name" ] && [ "$(cd "$theirs" && pwd -P)" != "$ours" ]; then
    "$theirs/$name" "$@" || exit $?
fi
if [ "$name" = prepare-commit-msg ] && [ -n "$SPECIALISTS_JOB_ID" ] && [ -f "$1" ]; then
    message=$1
    set -- --trailer "Specialists-Job: $SPECIALISTS_JOB_ID"
    if [ -n "$SPECIALISTS_BEAD_ID" ]; then
        set -- "$@" --trailer "Specialists-Bead: $SPECIALISTS_BEAD_ID"
    fi
    git interpret-trailers --in-place --if-exists addIfDifferent "$@" "$message" || exit $?
fi
exit 0
"""


def agent_env(
    job_dir: Path,
    overrides: Mapping[str, str] | None = None,
    extra: Mapping[str, str] | None = None,
) -> dict[str, str]:
    """An agent's environment: ours, the job's overrides, `extra`, and what the job adds."""
    env = dict(os.environ)
    env.update(overrides or {})
    env.update(extra or {})
    env[MARK_ENV] = job_mark(job_dir)
    env[JOB_ID_ENV] = job_dir.name
    bead = _bead_of(job_dir)
    if bead:
        env[BEAD_ID_ENV] = bead
    else:
        env.pop(BEAD_ID_ENV, None)  # an outer job's bead is not this job's
    hooks = ensure_hooks(job_dir)
    if hooks is not None:
        env.update(git_hooks_env(env, hooks))
    return env


def git_hooks_env(env: Mapping[str, str], hooks: Path) -> dict[str, str]:
    """GIT_CONFIG_PARAMETERS with core.hooksPath=`hooks` after the user's own (the last one
    wins), and the user's own kept for their hooks ("" when they had none: the same to git).
    Inside another job's agent, the user's own are the ones that job saved."""
    before = env.get(SAVED_GIT_PARAMETERS_ENV, env.get(GIT_PARAMETERS_ENV, ""))
    ours = _sq(f"core.hooksPath={hooks}")
    return {
        SAVED_GIT_PARAMETERS_ENV: before,
        GIT_PARAMETERS_ENV: f"{before} {ours}" if before else ours,
    }


def ensure_hooks(job_dir: Path) -> Path | None:
    """<job>/git-hooks with every hook name chaining to the repository's hooks; None if the
    directory cannot be made (the job runs without trailers rather than not at all)."""
    hooks = job_dir / HOOKS_DIR
    chain = hooks / "chain"
    if chain.is_file():
        return hooks
    try:
        hooks.mkdir(mode=0o700, exist_ok=True)
        tmp = hooks / ".chain.tmp"
        tmp.write_text(CHAIN_HOOK)
        tmp.chmod(0o700)
        tmp.replace(chain)
        for name in GIT_HOOKS:
            link = hooks / name
            if not link.is_symlink():
                link.symlink_to("chain")
    except OSError:
        return None
    return hooks


def _sq(text: str) -> str:
    """Git's single-quote form (sq_quote): 'text', with ' written as '\\''."""
    return "'" + text.replace("'", "'\\''") + "'"


def _bead_of(job_dir: Path) -> str | None:
    try:
        with open(job_dir / JOB_FILE, "rb") as f:
            record = json.loads(f.read(_JOB_FILE_MAX))
    except (OSError, ValueError):
        return None
    bead = record.get("bead_id") if isinstance(record, dict) else None
    return bead if isinstance(bead, str) and bead.isprintable() and "\n" not in bead else None
