"""`Lazy("package.module:attribute")`: a callable that imports its target at its first call,
so a feature can register a hook without loading the module that runs it."""

from __future__ import annotations

import importlib

TYPE_CHECKING = False  # no `typing` at run time: the hooks' fast path registers through this
if TYPE_CHECKING:
    from collections.abc import Callable
    from logging import Logger
    from typing import Any


class Lazy:
    __slots__ = ("_target", "name")
    modules: set[str] = set()  # every module named so far (a fork server imports them first)

    def __init__(self, name: str) -> None:
        self.name = name
        self._target: Callable[..., Any] | None = None
        Lazy.modules.add(name.partition(":")[0])

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        if self._target is None:
            module, _, attribute = self.name.partition(":")
            self._target = getattr(importlib.import_module(module), attribute)
        return self._target(*args, **kwargs)

    def __repr__(self) -> str:
        return f"Lazy({self.name!r})"


def logger(name: str) -> Logger:
    """`logging.getLogger(name)`, imported at its first use: a run that logs nothing never
    loads `logging` (and its traceback, linecache and tokenize: some 3 ms of a start)."""
    return _Logger(name)  # type: ignore[return-value]


class _Logger:
    __slots__ = ("name",)

    def __init__(self, name: str) -> None:
        self.name = name

    def __getattr__(self, attribute: str) -> Any:
        import logging

        return getattr(logging.getLogger(self.name), attribute)
