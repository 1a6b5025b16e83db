"""The process's logging as it was before a block, put back after it (:func:`kept_logging`).

``serve`` configures logging for the process it runs in (``logging.config.dictConfig`` of
:func:`template_engine.service.access_log.log_config`, ``logging.captureWarnings``), and so does uvicorn's
``Config``.  Run in a test's process (``CliRunner().invoke(main, ["serve", ...])``), that set-up outlived the
test: the ``template_engine`` logger stayed at INFO with a handler writing to the runner's captured stderr, a
``BytesIO`` nothing read any more, so every later request's access line was kept in memory (and in pytest's
log capture) for the rest of the worker's run.  tests/conftest.py puts logging back after every test.
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Iterator
from typing import Any

#: The loggers :func:`template_engine.service.access_log.log_config` configures ("" is the root).
CONFIGURED = ("", "uvicorn", "uvicorn.error", "uvicorn.access", "template_engine")


def _state() -> dict[str, Any]:
    loggers: dict[str, Any] = {}
    for name in CONFIGURED:
        logger = logging.getLogger(name or None)
        loggers[name] = (logger.level, list(logger.handlers), logger.propagate, logger.disabled)
    captured = getattr(logging, "_warnings_showwarning", None) is not None
    return {"loggers": loggers, "warnings": captured}


@contextlib.contextmanager
def kept_logging() -> Iterator[None]:
    """Run the block, then give the configured loggers back their levels, handlers, ``propagate`` and
    ``disabled`` of before it, and Python's warnings back to where they went."""
    before = _state()
    try:
        yield
    finally:
        for name, (level, handlers, propagate, disabled) in before["loggers"].items():
            logger = logging.getLogger(name or None)
            logger.setLevel(level)
            logger.handlers[:] = handlers
            logger.propagate = propagate
            logger.disabled = disabled
        logging.captureWarnings(before["warnings"])
