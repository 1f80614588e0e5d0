"""One logging path: every module logs to `logging.getLogger(__name__)`; Prefect shows the lines.

Prefect sends the records of the loggers named in `PREFECT_LOGGING_EXTRA_LOGGERS` to the logs
of the flow or task run they happen in. It reads that setting when it is imported, so whoever
starts a flow (the CLI runner, the demo, the tests' harness) calls `route_to_prefect()` first.
Outside a run the same lines go to the ordinary handlers only.
"""

import logging
import os

# The packages whose loggers reach Prefect's run logs.
LOGGER_PACKAGES = ("tasks", "stores", "memvault", "flows")


def route_to_prefect() -> None:
    """Name memvault's loggers to Prefect (before it is imported); a caller's own setting wins."""
    os.environ.setdefault("PREFECT_LOGGING_EXTRA_LOGGERS", ",".join(LOGGER_PACKAGES))
    # Stage code also runs outside a flow (tests, `memvault lint --fix`): no warning for that.
    os.environ.setdefault("PREFECT_LOGGING_TO_API_WHEN_MISSING_FLOW", "ignore")


def show_info(level: int | str = logging.INFO) -> None:
    """Let memvault's INFO lines through (Python's default is WARNING), as Prefect's run logger does."""
    for name in LOGGER_PACKAGES:
        logger = logging.getLogger(name)
        if logger.level == logging.NOTSET:
            logger.setLevel(level)


def conv_label(short: str, title: str | None) -> str:
    """A conversation as log lines name it: its short id, then its title in quotes when it has one
    (`bfe27afb "Postgres backups on the NAS"`), cut to a line's worth."""
    clean = " ".join((title or "").split())
    if not clean:
        return short
    return f'{short} "{clean[:77] + "…" if len(clean) > 80 else clean}"'
