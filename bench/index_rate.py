"""Indexing rate of `memvault run` (no model) and `memvault reindex` on a real corpus.

Corpus, built at run time in a temporary folder (nothing is copied into the repository):
the LoCoMo dev conversations (``--locomo``, default ../shared/eval/locomo/locomo_dev.json
beside the checkout; CC BY-NC 4.0, evaluation only; Maharana et al. 2024) turned into Claude Code JSONL sessions — one file
per LoCoMo session, the first speaker as the user, the second as the assistant, each turn a
line with its session's date — plus every transcript sample of ``--formats`` (default
../shared/formats beside the checkout: MIT / Apache-2.0 fixtures and reconstructed files, see
its README).

Drives the CLI of the Python given (``--python``: another worktree's venv measures that
tree's code, e.g. main's for "before"), in a fresh home: `init`, the corpus as a source,
`run --engine none --json` (wall and CPU seconds of the process and its children,
`embedded_texts`, seconds per stage, nodes in the index), then `reindex --json`. Figures are from one run on a shared machine: compare ratios of one
invocation, not absolute rates across runs.

    python bench/index_rate.py --python OTHER/.venv/bin/python --conversations conv-26
    python bench/index_rate.py --conversations conv-26
"""

import argparse
import json
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

SHARED = Path(__file__).resolve().parents[2] / "shared"  # ../shared beside the checkout


def _when(stamp: str) -> datetime:
    """LoCoMo's session dates ("1:56 pm on 8 May, 2023") as a datetime (noon if unreadable)."""
    for fmt in ("%I:%M %p on %d %B, %Y", "%I:%M %p on %d %b, %Y"):
        try:
            return datetime.strptime(stamp.strip(), fmt)
        except ValueError:
            pass
    return datetime(2023, 1, 1, 12)


def locomo_sessions(sample: dict[str, Any], out: Path) -> int:
    """Write one Claude Code session file per LoCoMo session of ``sample``; returns turns."""
    conv = sample["conversation"]
    first = conv["speaker_a"]
    turns = 0
    n = 1
    while f"session_{n}" in conv:
        start = _when(conv.get(f"session_{n}_date_time", ""))
        sid = f"{sample['sample_id']}-s{n}"
        lines, parent = [], None
        for i, t in enumerate(conv[f"session_{n}"]):
            role = "user" if t["speaker"] == first else "assistant"
            text = t["text"] + (f" [shares a photo: {t['blip_caption']}]" if t.get("blip_caption") else "")
            message: dict[str, Any] = {"role": role, "content": text if role == "user" else [{"type": "text", "text": text}]}
            if role == "assistant":
                message["id"] = f"msg_{sid}_{i}"
            stamp = (start + timedelta(seconds=30 * i)).strftime("%Y-%m-%dT%H:%M:%SZ")
            lines.append(json.dumps({"type": role, "sessionId": sid, "uuid": f"{sid}-{i}", "parentUuid": parent,
                                     "timestamp": stamp, "cwd": f"/locomo/{sample['sample_id']}", "message": message}))
            parent = f"{sid}-{i}"
            turns += 1
        (out / f"{sid}.jsonl").write_text("\n".join(lines) + "\n", encoding="utf-8")
        n += 1
    return turns


def build_corpus(where: Path, ids: list[str], locomo: Path, formats: Path) -> dict[str, int]:
    data = json.loads(locomo.read_text(encoding="utf-8"))
    cc = where / "claude-code" / "locomo"
    cc.mkdir(parents=True)
    turns = sum(locomo_sessions(s, cc) for s in data if not ids or s["sample_id"] in ids)
    sources = {"claude-code": where / "claude-code"}
    for kind, folder in (("claude-code", "claude_code"), ("codex", "codex"), ("pi", "pi"), ("chatgpt", "chatgpt"),
                         ("claude-ai", "claude_ai")):
        dest = where / kind / "samples"
        shutil.copytree(formats / folder, dest, ignore=shutil.ignore_patterns("*.md", "LICENSE*"))
        sources[kind] = where / kind
    return {"locomo_turns": turns, "sources": len(sources)}


def _cpu() -> float:
    used = resource.getrusage(resource.RUSAGE_CHILDREN)
    return used.ru_utime + used.ru_stime


def cli(python: str, home: Path, *args: str) -> tuple[dict[str, Any], float, float]:
    """The command's JSON answer, wall seconds and CPU seconds (it and its children)."""
    # A loaded machine can take more than Prefect's default 20 s to start its ephemeral server.
    env = {"PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS": "600", **os.environ, "MEMVAULT_HOME": str(home),
           "HF_HUB_OFFLINE": "1", "TOKENIZERS_PARALLELISM": "false"}
    t0, c0 = time.perf_counter(), _cpu()
    # cwd: the home, so `-m` imports the memvault installed in that venv, not this checkout's.
    done = subprocess.run([python, "-m", "memvault.cli", "--home", str(home), *args], env=env, cwd=home.parent,
                          capture_output=True, text=True)
    wall, cpu = time.perf_counter() - t0, _cpu() - c0
    if done.returncode != 0:
        sys.exit(f"{' '.join(args)} failed ({done.returncode}):\n{done.stderr[-3000:]}")
    return json.loads(done.stdout), wall, cpu


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--python", default=sys.executable, help="the venv Python whose memvault to measure")
    ap.add_argument("--conversations", nargs="*", default=[], help="LoCoMo sample ids (default: all five)")
    ap.add_argument("--reindex", type=int, default=1, help="reindex passes after the run")
    ap.add_argument("--model", help="embeddings.model of the home (default: the bundled default)")
    ap.add_argument("--locomo", type=Path, default=SHARED / "eval" / "locomo" / "locomo_dev.json",
                    help="LoCoMo's locomo_dev.json (default: ../shared/eval/locomo beside the checkout)")
    ap.add_argument("--formats", type=Path, default=SHARED / "formats",
                    help="the transcript samples folder (default: ../shared/formats beside the checkout)")
    args = ap.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="memvault-index-rate-") as tmp:
        root = Path(tmp)
        corpus = build_corpus(root / "corpus", args.conversations, args.locomo, args.formats)
        home = root / "home"
        cli(args.python, home, "init", "--json")
        with (home / "memvault.toml").open("a", encoding="utf-8") as fh:
            if args.model:
                fh.write(f'\n[embeddings]\nmodel = "{args.model}"\n')
            for kind in ("claude-code", "codex", "pi", "chatgpt", "claude-ai"):
                fh.write(f'\n[[sources]]\nkind = "{kind}"\npath = "{root / "corpus" / kind}"\n')
        report, wall, cpu = cli(args.python, home, "run", "--engine", "none", "--json")
        status, _, _ = cli(args.python, home, "status", "--json")
        row: dict[str, Any] = {**corpus, "python": args.python, "model": args.model, "run_wall_s": round(wall, 1), "run_cpu_s": round(cpu, 1),
                               "nodes": status["nodes"], "messages": status["messages"],
                               "embedded_texts": report.get("embedded_texts"),
                               "embedding_cache_hits": report.get("embedding_cache_hits"),
                               "run_nodes_per_s": round(status["nodes"] / wall, 1),
                               "run_nodes_per_cpu_s": round(status["nodes"] / cpu, 2),
                               "stage_s": {k: (v or {}).get("seconds") for k, v in report.get("stages", {}).items()}}
        print(json.dumps(row), file=sys.stderr, flush=True)  # the run's figures, before the reindex passes
        for n in range(args.reindex):
            again, wall, _ = cli(args.python, home, "reindex", "--json")
            row[f"reindex{n + 1}_wall_s"] = round(wall, 1)
            row[f"reindex{n + 1}_nodes_per_s"] = round(again["nodes"] / wall, 1)
        print(json.dumps(row, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
