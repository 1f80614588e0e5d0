"""Environment defaults for any process that runs Prefect flows: set before Prefect is imported.

One place for what the CLI, `make run` (through the CLI's runner) and the tests need; a value
already in the environment wins (`setdefault`), so a user's own setting is never overridden.
"""

import os

DEFAULTS: dict[str, str] = {
    # Without these a Prefect server tries to phone home.
    "PREFECT_SERVER_ANALYTICS_ENABLED": "false",
    "DO_NOT_TRACK": "1",
    # A temporary Prefect server needs longer than the default 20 s on a busy 2-core machine.
    "PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS": "120",
}


def apply_prefect_defaults(*, quiet: bool = False) -> None:
    """Set the defaults in ``os.environ``; ``quiet`` keeps Prefect's INFO lines off the terminal
    (for `--json`, whose stdout is the JSON document)."""
    from memvault.logs import route_to_prefect

    for name, value in DEFAULTS.items():
        os.environ.setdefault(name, value)
    route_to_prefect()  # memvault's loggers reach the run logs (read when Prefect is imported)
    if quiet:
        os.environ.setdefault("PREFECT_LOGGING_LEVEL", "WARNING")
