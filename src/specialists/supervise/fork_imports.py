"""What a fork server imports once for every child it forks (forks.py): the supervisor's
modules at its start, those each child reports it imported on top (before any later fork),
and a native job's SDK; each batch then frozen out of the collector's sight."""

from __future__ import annotations

import contextlib
import gc
import importlib
import logging
import os
import sys

log = logging.getLogger("specialists.forks")

_SDKS = {"anthropic": "anthropic"}  # a native provider's api -> its SDK (else openai)
_MAX_TELL = 256 * 1024


def tell_modules(fd: int, known: frozenset[str]) -> None:
    """Send the server the modules this supervisor (or keeper) imported that it lacks."""
    names = "\n".join(m for m in sys.modules if m not in known).encode()[:_MAX_TELL]
    with contextlib.suppress(OSError):
        os.write(fd, names)


def learn_modules(fd: int, learning: dict[int, bytes]) -> None:
    """Read a child's modules; once it has closed its pipe, import them here, so every
    child forked after it starts with them."""
    try:
        chunk = os.read(fd, _MAX_TELL)
    except OSError:
        chunk = b""
    if chunk:
        learning[fd] = (learning[fd] + chunk)[:_MAX_TELL]
        return
    os.close(fd)
    import_fresh([n for n in learning.pop(fd).decode(errors="replace").split("\n") if n])


def warm(runner: str, model: str) -> None:
    """Import a native job's SDK (and make its TLS context) here, once, so that every
    later child shares it."""
    from specialists.native.providers.registry import BUILTINS

    provider = BUILTINS.get(model.partition("/")[0]) if runner == "native" else None
    if provider is None or provider.api == "replay":
        return
    sdk = _SDKS.get(provider.api, "openai")
    if sdk not in sys.modules and import_fresh([sdk]):
        from specialists.native.providers.common import tls_context

        tls_context()
        freeze()


def import_fresh(names: list[str]) -> bool:
    """Import `names` that are not yet (a module only a live job can import is skipped),
    then freeze: whether any was new."""
    fresh = [n for n in names if n not in sys.modules and "__main__" not in n]
    for name in fresh:
        try:
            importlib.import_module(name)
        except Exception as exc:  # noqa: BLE001 - whatever a module raises, it is skipped
            log.debug("fork server: %s not imported: %s", name, exc)
    if fresh:
        freeze()
    return bool(fresh)


def freeze() -> None:
    """Move every object so far out of the collector's sight: a collection in a child then
    never writes to (and so never copies) the pages it shares with us."""
    gc.collect()
    gc.freeze()
