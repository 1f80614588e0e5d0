"""Running the pipeline from the terminal: a real Prefect flow run, with its report printed."""

import os
from typing import Any

from memvault.cli.output import console


def run_pipeline(home: Any, *, only: list[str] | None = None, from_stage: str | None = None,
                 until_stage: str | None = None, paths: list[str] | None = None, engine: str | None = None,
                 model: str | None = None, quiet: bool = False) -> dict[str, Any]:
    """Run the nightly flow (or a slice); validation errors surface before Prefect starts."""
    os.environ.setdefault("PREFECT_SERVER_ANALYTICS_ENABLED", "false")
    os.environ.setdefault("DO_NOT_TRACK", "1")
    # A temporary Prefect server needs longer than the default 20 s on a busy 2-core machine.
    os.environ.setdefault("PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS", "120")
    from memvault.home import require_home
    from memvault.settings import load_settings
    from tasks.pipeline import select_stages

    settings = load_settings(home)
    require_home(settings.home)
    select_stages(only, from_stage, until_stage)  # misuse → UsageError before a server starts
    if quiet:
        os.environ.setdefault("PREFECT_LOGGING_LEVEL", "WARNING")
    from flows.nightly import RunOptions, nightly

    options = RunOptions(home=str(settings.home), only=only, from_stage=from_stage, until_stage=until_stage,
                         paths=paths or [], engine=engine, model=model)
    return nightly(options)


def print_report(report: dict[str, Any]) -> None:
    console.print(f"run {report['run_id']}: [bold]{report['status']}[/bold] (engine {report['engine']})")
    for name, s in report["stages"].items():
        counts = ", ".join(f"{k} {v}" for k, v in s.items()
                           if k not in ("status", "seconds") and not isinstance(v, (dict, list)) and v is not None)
        console.print(f"  {name:<10} {s.get('status'):<10} {s.get('seconds', 0):6.1f}s  {counts}", highlight=False)
    for key in ("articles_created", "articles_updated"):
        if report[key]:
            console.print(f"  {key.replace('_', ' ')}: {', '.join(report[key])}")
    for r in report["articles_rejected"]:
        console.print(f"  rejected {r['article']}: {'; '.join(r['reasons'])}")
    for e in report["stages"].get("ingest", {}).get("errors", [])[:20]:
        console.print(f"  [yellow]{e['file']}:{e.get('line') or '-'}[/yellow]: {e['error']}", highlight=False)
