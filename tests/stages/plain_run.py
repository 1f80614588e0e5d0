"""Run the nightly stages without a Prefect server (the task bodies, plain loggers).

Used by the kill/resume tests, in a subprocess (`python -m tests.stages.plain_run HOME SRC`)
and in process: the same `flows.nightly.execute`, with each Prefect task replaced by its
function, so a crash test costs a Python start and a model load, not a Prefect server.
"""

import logging
import sys
from typing import Any


def plain_execute(home: str, src: str, engine: Any = None) -> dict[str, Any]:
    import importlib

    from flows import nightly

    logger = logging.getLogger("memvault.test")
    for name in ("ingest", "chunk", "cluster", "synthesize", "wikify", "normalize", "changelog", "index"):
        module = importlib.import_module(f"tasks.{name}")
        if hasattr(module, "get_run_logger"):  # a task that still asks Prefect for its run logger
            module.get_run_logger = lambda: logger
    saved = dict(nightly.TASKS), nightly.changelog
    nightly.TASKS.update({k: getattr(v, "fn", v) for k, v in nightly.TASKS.items()})
    nightly.changelog = getattr(nightly.changelog, "fn", nightly.changelog)
    try:
        return nightly.execute(nightly.RunOptions(home=home, paths=[src]), engine=engine)
    finally:
        nightly.TASKS.clear()
        nightly.TASKS.update(saved[0])
        nightly.changelog = saved[1]


if __name__ == "__main__":
    plain_execute(sys.argv[1], sys.argv[2])
