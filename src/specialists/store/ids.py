"""Job ids: short, strict, validated before they touch a path."""

from __future__ import annotations

import os

from specialists.base.errors import UserError

ID_LENGTH = 8
_HEX = frozenset("0123456789abcdef")  # a set, not a regex: the hooks check ids without `re`


def new_job_id() -> str:
    # os.urandom, not `secrets`: same randomness, without importing hashlib and OpenSSL
    # (about 10 ms) on every run.
    return os.urandom(ID_LENGTH // 2).hex()


def is_job_id(text: str) -> bool:
    return len(text) == ID_LENGTH and _HEX.issuperset(text)


def check_job_ref(ref: str) -> str:
    """A full id or a prefix of one; anything else (paths, dots, spaces) is refused."""
    ref = ref.strip().lower()
    if not 1 <= len(ref) <= ID_LENGTH or not _HEX.issuperset(ref):
        raise UserError(
            f"invalid job id {ref[:40]!r}",
            hint="job ids are 8 hex characters; a unique prefix works too",
        )
    return ref
