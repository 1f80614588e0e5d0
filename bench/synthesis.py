"""Benchmark of the model-backed stages on samples/: units per second per stage, model calls
and tokens per new chunk, and the cost of reruns with nothing new.

Engines: `none`, a scripted fake that always answers validly (the call pattern of a model
whose output is usable), and the real mlx engine on the tiny random-weight llama (gibberish:
every unit falls back or is rejected, then retried until parked). Runs the stages without a
Prefect server (task bodies, as tests/stages/plain_run.py does). By hand, not in CI:

    .venv/bin/python bench/synthesis.py [--runs 4] [--json]
"""

import argparse
import json
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

MODEL_STAGES = ("chunk", "cluster", "synthesize")
UNITS = {"chunk": "conversations", "cluster": "chunks", "synthesize": "chunks_synthesized"}


def summarize(report: dict[str, Any]) -> dict[str, Any]:
    stages = report["stages"]
    out: dict[str, Any] = {"calls": 0, "tokens": 0}
    for name in MODEL_STAGES:
        s = stages.get(name, {})
        units, secs = int(s.get(UNITS[name], 0)), float(s.get("seconds", 0.0))
        out[name] = {"units": units, "seconds": round(secs, 3), "units_per_s": round(units / secs, 2) if secs else None,
                     "calls": s.get("calls", 0), "tokens": s.get("tokens", 0)}
        out["calls"] += s.get("calls", 0)
        out["tokens"] += s.get("tokens", 0)
    out["chunks_new"] = stages.get("chunk", {}).get("chunks_new", 0)
    out["rejected"] = len(report["articles_rejected"])
    out["articles"] = len(report["articles_created"]) + len(report["articles_updated"])
    return out


def bench_engine(label: str, engine: Any, runs: int) -> dict[str, Any]:
    from memvault.ops.home import init_home
    from tests.stages.plain_run import plain_execute

    tmp = Path(tempfile.mkdtemp(prefix=f"memvault-bench-{label}-"))
    try:
        home = tmp / "home"
        init_home(home)
        src = tmp / "samples"
        shutil.copytree(ROOT / "samples", src)
        os.environ["MEMVAULT_ENGINE"] = "none"
        results = []
        for _ in range(runs):
            t0 = time.perf_counter()
            report = plain_execute(str(home), str(src), engine=engine)
            row = summarize(report)
            row["run_seconds"] = round(time.perf_counter() - t0, 2)
            results.append(row)
        first = results[0]
        per_chunk = first["calls"] / first["chunks_new"] if first["chunks_new"] else None
        return {"engine": label, "runs": results,
                "calls_per_new_chunk": round(per_chunk, 2) if per_chunk is not None else None,
                "tokens_per_new_chunk": round(first["tokens"] / first["chunks_new"]) if first["chunks_new"] else None,
                "rerun_calls": [r["calls"] for r in results[1:]]}
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=4, help="runs per engine (the first does the work)")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    from memvault.engines.mlx import MlxEngine
    from tests.helpers import ScriptedEngine
    from tests.tiny_model import build_tiny_llama

    tiny = build_tiny_llama(Path(tempfile.mkdtemp(prefix="memvault-tiny-")))
    mlx = MlxEngine(str(tiny), temperature=0.0, seed=7)
    mlx.load()
    os.environ["MEMVAULT_CHUNK__MAX_OUTPUT_TOKENS"] = "96"
    os.environ["MEMVAULT_CLUSTER__MAX_OUTPUT_TOKENS"] = "96"
    os.environ["MEMVAULT_SYNTHESIZE__MAX_OUTPUT_TOKENS"] = "128"
    out = [bench_engine("none", None, args.runs), bench_engine("scripted-fake", ScriptedEngine(), args.runs),
           bench_engine("mlx-tiny", mlx, args.runs)]
    if args.json:
        print(json.dumps(out, indent=2))
        return
    for e in out:
        print(f"\n== {e['engine']}: {e['calls_per_new_chunk']} calls and {e['tokens_per_new_chunk']} tokens per new "
              f"chunk; reruns with nothing new made {e['rerun_calls']} calls")
        for i, r in enumerate(e["runs"], start=1):
            stages = "  ".join(f"{n} {r[n]['units']}u/{r[n]['seconds']}s={r[n]['units_per_s']}u/s "
                               f"({r[n]['calls']} calls)" for n in MODEL_STAGES)
            print(f"  run {i}: {r['run_seconds']}s  {stages}  articles {r['articles']} rejected {r['rejected']}")


if __name__ == "__main__":
    main()
