"""Run the nightly stages without a Prefect server (the task bodies, plain loggers).

Used by the kill/resume tests, in a subprocess (`python -m tests.stages.plain_run HOME SRC`)
and in process: the same `flows.nightly.execute`, with each Prefect task replaced by its
function, so a crash test costs a Python start and a model load, not a Prefect server.
"""

import sys
from typing import Any


def plain_execute(home: str, src: str, engine: Any = None) -> dict[str, Any]:
    from flows import nightly
    from tasks.stages import RUNS, TASKS

    saved = dict(TASKS)
    TASKS.update(RUNS)  # the stage functions, called as the flow calls their tasks
    try:
        return nightly.execute(nightly.RunOptions(home=home, paths=[src]), engine=engine)
    finally:
        TASKS.clear()
        TASKS.update(saved)


if __name__ == "__main__":
    plain_execute(sys.argv[1], sys.argv[2])
