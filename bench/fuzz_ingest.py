"""Ingest fuzz bench (run by hand): fuzzed inputs tried / crashed / good files lost (goals 0).

    .venv/bin/python bench/fuzz_ingest.py [--cases 200] [--seed 1] [--json]

Each case is one fuzzed file (tests/ingest/fuzz_inputs.py) beside a good session, ingested in
its own run with a real ledger (no Prefect): a run that raises is a crash, a run that ends
without the good session stored lost a good file, a run still going after 60 s hung.
"""

import argparse
import json
import random
import signal
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))


def main() -> None:
    from memvault.ops.home import init_home
    from memvault.config.settings import load_settings
    from stores.ledger import Ledger
    from memvault.stages.ingest import ingest_roots
    from tests.helpers import cc_session
    from tests.stages.fuzz_inputs import fuzz_case

    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--cases", type=int, default=200)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--json", action="store_true", help="print the figures as JSON")
    args = parser.parse_args()

    def hung(*_: object) -> None:
        raise TimeoutError("hung")

    signal.signal(signal.SIGALRM, hung)
    rng = random.Random(args.seed)
    figures: dict[str, float] = {"tried": 0, "crashed": 0, "hung": 0, "good_files_lost": 0, "reported_problems": 0}
    crashes: list[str] = []
    started = time.perf_counter()
    with tempfile.TemporaryDirectory() as tmp:
        for n in range(args.cases):
            case = Path(tmp) / f"case{n}"
            home, src = case / "home", case / "src"
            src.mkdir(parents=True)
            init_home(home)
            name = fuzz_case(rng, src, n)
            (src / "good.jsonl").write_text(cc_session(f"good{n}", ["How do I back up postgres?", "pg_dump."]))
            settings = load_settings(home)
            ledger = Ledger(settings.ledger_path)
            figures["tried"] += 1
            signal.alarm(60)
            try:
                result = ingest_roots(ledger, settings, [("auto", src)])
                figures["reported_problems"] += len(result.errors)
                stored = {r[0] for r in ledger.con.execute("SELECT native_id FROM conversations").fetchall()}
                figures["good_files_lost"] += f"good{n}" not in stored
            except TimeoutError:
                figures["hung"] += 1
                crashes.append(f"{name}: hung")
            except Exception as exc:  # the bench counts what the test forbids
                figures["crashed"] += 1
                crashes.append(f"{name}: {type(exc).__name__}: {exc}"[:200])
            finally:
                signal.alarm(0)
                ledger.close()
    figures["seconds"] = round(time.perf_counter() - started, 1)
    if args.json:
        print(json.dumps({**figures, "crashes": crashes}, indent=2))
    else:
        print(", ".join(f"{k} {v}" for k, v in figures.items()))
        for line in crashes:
            print("  " + line)


if __name__ == "__main__":
    main()
