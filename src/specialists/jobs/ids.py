"""Job ids: short, strict, validated before they touch a path."""

from __future__ import annotations

import os
import re

from specialists.errors import UserError

ID_LENGTH = 8
_ID_RE = re.compile(r"[0-9a-f]{8}")
_PREFIX_RE = re.compile(r"[0-9a-f]{1,8}")


def new_job_id() -> str:
    # os.urandom, not `secrets`: same randomness, without importing hashlib and OpenSSL
    # (about 10 ms) on every run.
    return os.urandom(ID_LENGTH // 2).hex()


def is_job_id(text: str) -> bool:
    return _ID_RE.fullmatch(text) is not None


def check_job_ref(ref: str) -> str:
    """A full id or a prefix of one; anything else (paths, dots, spaces) is refused."""
    ref = ref.strip().lower()
    if not _PREFIX_RE.fullmatch(ref):
        raise UserError(
            f"invalid job id {ref[:40]!r}",
            hint="job ids are 8 hex characters; a unique prefix works too",
        )
    return ref
