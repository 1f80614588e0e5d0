"""Failpoints: deterministic crash points for resume tests, zero-cost when unset.

``MEMVAULT_FAILPOINT=<stage>:<n>`` hard-exits the process (``os._exit``, as a kill would:
no cleanup, no finally blocks) right after the n-th unit of that stage is written;
``<stage>:commit`` exits between writing the vault and committing it.
"""

import os

EXIT_CODE = 86


def failpoint(stage: str, point: int | str) -> None:
    """Exit hard when ``MEMVAULT_FAILPOINT`` names this stage and point."""
    spec = os.environ.get("MEMVAULT_FAILPOINT")
    if spec and spec == f"{stage}:{point}":
        os._exit(EXIT_CODE)
