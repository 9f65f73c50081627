"""Who a commit of ours is by, when git cannot say (CI, containers, a fresh machine).

A sandbox job's work is committed when the job ends (R-S3), and a squash into a sandboxed
parent commits too. Without `user.name`/`user.email` (and no usable host name) git refuses
to commit, and the work would stay uncommitted while the job ends `done`. So each role git
cannot name (author, committer) gets a fallback identity through the environment, which
takes precedence over nothing else: a configured identity is always used as it is. The
outcome says when the fallback signed a commit, so the person sees it where they look.
"""

from __future__ import annotations

from collections.abc import Callable

FALLBACK_NAME = "specialists"
FALLBACK_EMAIL = "specialists@localhost"
FALLBACK = f"{FALLBACK_NAME} <{FALLBACK_EMAIL}>"
_ROLES = ("AUTHOR", "COMMITTER")


def fallback_env(knows: Callable[[str], bool]) -> dict[str, str]:
    """Environment for the roles git cannot name here; {} when it can name both.
    `knows("GIT_AUTHOR_IDENT")` runs `git var` for that role and says whether it succeeded."""
    env: dict[str, str] = {}
    for role in _ROLES:
        if not knows(f"GIT_{role}_IDENT"):
            env[f"GIT_{role}_NAME"] = FALLBACK_NAME
            env[f"GIT_{role}_EMAIL"] = FALLBACK_EMAIL
    return env
