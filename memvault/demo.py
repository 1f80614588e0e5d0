"""`make run`: a demo memory home, the bundled samples, the full nightly flow, and a recall.

Usage: python -m memvault.demo --samples samples [--query TEXT]
(MEMVAULT_HOME names the demo home; the Makefile points it at ./.demo/home.)
"""

import argparse
import time
from pathlib import Path

from memvault.cli.output import console


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--samples", type=Path, default=Path("samples"))
    parser.add_argument("--query", default="When does the Postgres backup to the NAS run, and how long is it kept?")
    args = parser.parse_args()

    from memvault.cli.runner import print_report, run_pipeline
    from memvault.ops.home import init_home
    from memvault.ops.memory import MemoryService
    from memvault.config.settings import load_settings

    settings = load_settings()
    t0 = time.perf_counter()
    init_home(settings.home)
    console.print(f"[bold]1. memory home[/bold] {settings.home}")
    console.print(f"[bold]2. nightly flow[/bold] over {args.samples.resolve()}")
    report = run_pipeline(settings.home, paths=[str(args.samples.resolve())])
    print_report(report)
    service = MemoryService(settings)
    console.print("[bold]3. articles[/bold]")
    for a in service.list_articles():
        console.print(f"  {a['title']}: {a['words']} words, {a['citations']} citations ({a['path']})", highlight=False)
    console.print(f"[bold]4. recall[/bold] {args.query!r}")
    result = service.recall(args.query, max_nodes=4)
    print(result["block"])
    console.print(f"done in {time.perf_counter() - t0:.1f}s — try: MEMVAULT_HOME={settings.home} "
                  f".venv/bin/memvault recall 'tidepool release'", highlight=False)


if __name__ == "__main__":
    main()
