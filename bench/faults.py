"""Crash campaign: kill a nightly run at random moments and at every failpoint, rerun it, and
check that it ends in the same state as one uninterrupted run.

    .venv/bin/python bench/faults.py [--kills 10] [--seed 1] [--no-failpoints] [--samples DIR] [--json]

`--samples` defaults to the bundled Claude Code sessions (a run of about a minute on
a quiet 2-core machine); `--samples samples` takes every bundled transcript.

One uninterrupted run over the samples (engine `none`, no Prefect server: the stage bodies
through `flows.nightly.execute`, as tests/stages/plain_run.py does) gives the reference. Then
each trial starts from a fresh home: a run in its own process group, killed with SIGKILL at a
random moment within the reference run's duration (or stopped by `MEMVAULT_FAILPOINT`, see
memvault/failpoints.py), then one rerun. A trial converges when the rerun succeeds and its end
state equals the reference: the same article files byte for byte, the same conversations,
messages and chunks in the ledger, no chunk synthesized twice, no open intent, the same index
nodes, a clean git status with nothing left in memvault's pending-commit journal, and no
writer lock held. It prints kills tried / converged and every divergence.
"""

import argparse
import json
import os
import random
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
# `ingest:N` fires only after the N-th ingest batch commit, which small corpora never reach.
FAILPOINTS = ("chunk:1", "cluster:1", "synthesize:1", "index:1", "changelog:commit")


def plain_execute(home: str, src: str) -> dict[str, Any]:
    """The nightly stages without a Prefect server (each task replaced by its function)."""
    from flows import nightly
    from tasks.stages import RUNS, TASKS

    TASKS.update(RUNS)  # type: ignore[arg-type]  # the stage functions, called as the tasks are
    return nightly.execute(nightly.RunOptions(home=home, paths=[src]))


def env(**extra: str) -> dict[str, str]:
    return {**os.environ, "MEMVAULT_ENGINE": "none", "PYTHONPATH": str(ROOT), "HF_HUB_OFFLINE": "1",
            "PREFECT_SERVER_ANALYTICS_ENABLED": "false", "DO_NOT_TRACK": "1", **extra}


def child(home: Path, src: Path, **extra: str) -> subprocess.Popen[bytes]:
    return subprocess.Popen([sys.executable, str(Path(__file__).resolve()), "--child", str(home), str(src)],
                            cwd=ROOT, env=env(**extra), stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                            start_new_session=True)


def fresh(base: Path, samples: Path) -> tuple[Path, Path]:
    from memvault.ops.home import init_home

    base.mkdir(parents=True)
    home = base / "home"
    init_home(home)
    src = base / "src"
    shutil.copytree(samples, src)
    return home, src


def end_state(home: Path) -> dict[str, Any]:
    """What must be identical after a kill and a rerun (run ids and times excluded)."""
    from memvault.embeddings import DIM, MODEL_NAME
    from memvault.config.settings import load_settings
    from stores.ledger import Ledger
    from stores.location import index_uri
    from stores.nodes import NodeIndex

    settings = load_settings(home)
    ledger = Ledger(settings.ledger_path, read_only=True)
    try:
        counts = ledger.counts()
        synthesized = ledger.con.execute("SELECT count(*), count(DISTINCT chunk_id) FROM synthesized_bucket_chunks").fetchone() or (0, 0)
        intents = len(ledger.intents())
    finally:
        ledger.close()
    nodes = NodeIndex(index_uri(settings), MODEL_NAME, DIM, create=False)
    status = subprocess.run(["git", "-C", str(home), "status", "--porcelain"], capture_output=True, text=True).stdout
    return {
        "articles": {p.name: p.read_text(encoding="utf-8") for p in sorted((home / "articles").glob("*.md"))},
        "ledger": counts, "synthesized_rows": synthesized[0], "synthesized_distinct": synthesized[1],
        "intents": intents, "nodes": sorted({r["id"] for r in nodes.nodes.search().select(["id"]).limit(10_000_000).to_list()}),
        "git_status": status, "pending_journal": (home / ".memvault" / "vault-pending.json").exists(),
    }


def differences(state: dict[str, Any], reference: dict[str, Any]) -> list[str]:
    out = [f"{k} differs" for k in reference if k != "articles" and state[k] != reference[k]]
    if state["articles"] != reference["articles"]:
        names = set(state["articles"]) ^ set(reference["articles"])
        changed = [n for n in reference["articles"] if state["articles"].get(n) not in (None, reference["articles"][n])]
        out.append(f"articles differ (missing/extra {sorted(names)}, changed {changed})")
    if state["synthesized_rows"] != state["synthesized_distinct"]:
        out.append("a chunk was synthesized twice")
    return out


def trial(base: Path, samples: Path, reference: dict[str, Any], *, delay: float | None = None,
          failpoint: str | None = None) -> dict[str, Any]:
    """One killed run and its rerun; returns what happened."""
    home, src = fresh(base, samples)
    extra = {"MEMVAULT_FAILPOINT": failpoint} if failpoint else {}
    proc = child(home, src, **extra)
    if delay is not None:
        try:
            proc.wait(timeout=delay)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
    out, _ = proc.communicate(timeout=900)
    killed = proc.returncode != 0
    rerun = subprocess.run([sys.executable, str(Path(__file__).resolve()), "--child", str(home), str(src)], cwd=ROOT,
                           env=env(), capture_output=True, text=True, timeout=900)
    result: dict[str, Any] = {"kind": failpoint or f"sigkill@{delay:.1f}s", "killed": killed,
                              "rerun_exit": rerun.returncode}
    if rerun.returncode != 0:
        result["problems"] = [f"rerun failed: {rerun.stdout[-400:]}{rerun.stderr[-800:]}"]
    else:
        result["problems"] = differences(end_state(home), reference)
    result["converged"] = not result["problems"]
    shutil.rmtree(base, ignore_errors=True)
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--kills", type=int, default=10, help="random SIGKILL trials")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--no-failpoints", action="store_true", help="skip the failpoint trials")
    parser.add_argument("--samples", type=Path, default=ROOT / "samples" / "claude-code",
                        help="transcripts to ingest (a folder)")
    parser.add_argument("--json", action="store_true")
    parser.add_argument("--child", nargs=2, metavar=("HOME", "SRC"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        plain_execute(*args.child)
        return
    os.environ.update(env())
    rng = random.Random(args.seed)
    work = Path(tempfile.mkdtemp(prefix="memvault-faults-"))
    try:
        home, src = fresh(work / "reference", args.samples)
        t0 = time.perf_counter()
        ref = subprocess.run([sys.executable, str(Path(__file__).resolve()), "--child", str(home), str(src)],
                             cwd=ROOT, env=env(), capture_output=True, text=True, timeout=900)
        duration = time.perf_counter() - t0
        if ref.returncode != 0:
            sys.exit(f"the uninterrupted run failed:\n{ref.stdout[-2000:]}{ref.stderr[-2000:]}")
        reference = end_state(home)
        trials: list[tuple[str, str | float]] = [] if args.no_failpoints else [("fp", p) for p in FAILPOINTS]
        # Random moments over the whole run, the process start (model load) included.
        trials += [("kill", rng.uniform(0.5, duration)) for _ in range(args.kills)]
        results = []
        for n, (kind, value) in enumerate(trials):
            r = trial(work / f"t{n}", args.samples, reference,
                      failpoint=value if isinstance(value, str) else None,
                      delay=value if isinstance(value, float) else None)
            results.append(r)
            if not args.json:
                print(f"{r['kind']:<20} killed={r['killed']!s:<5} converged={r['converged']!s:<5} "
                      + "; ".join(r["problems"]), flush=True)
        killed = [r for r in results if r["killed"]]
        summary = {"reference_seconds": round(duration, 1), "articles": len(reference["articles"]),
                   "nodes": len(reference["nodes"]), "trials": len(results), "kills_tried": len(killed),
                   "converged": sum(r["converged"] for r in killed),
                   "runs_finished_before_the_kill": len(results) - len(killed), "results": results}
        if args.json:
            print(json.dumps(summary, indent=2))
        else:
            print(f"reference run {duration:.1f}s, {summary['articles']} articles, {summary['nodes']} nodes")
            print(f"kills tried / converged: {summary['kills_tried']} / {summary['converged']} "
                  f"({summary['runs_finished_before_the_kill']} run(s) finished before their kill moment)")
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
