"""base/lazy.py `logger`: the logger of that name, found when first used."""

from __future__ import annotations

import logging

from specialists.base.lazy import logger


def test_a_lazy_logger_logs_as_the_named_logger(caplog):
    log = logger("specialists.test-lazy")
    with caplog.at_level(logging.INFO, logger="specialists.test-lazy"):
        log.info("told %s", "once")
        log.debug("not shown")
    assert [(r.name, r.getMessage()) for r in caplog.records] == [
        ("specialists.test-lazy", "told once")
    ]
    assert log.isEnabledFor(logging.CRITICAL)
