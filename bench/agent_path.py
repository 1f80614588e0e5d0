"""What an agent pays for memory at the moment it asks: cold CLI recall, its peak RSS, and warm
recall through `memvault serve` (query embedding included), on real homes.

Homes: ``demo`` (the home `make run` builds, ./.demo/home by default) and ``<N>k`` (a home of
N thousand synthetic nodes: `memvault.ops.home.init_home`, then the node index written
directly through the store API with `bench/recall_latency.py`'s generator, as that bench
does; `--keep DIR` builds it once and reuses it). Per home, in one run, each figure the
median of ``--reps`` (≥ 10) repetitions:

- ``pass_s``: ``python -c pass`` — the interpreter's own start, the floor of any CLI call;
- ``cold_recall_s``: ``memvault --home H recall "<query>"`` in a fresh process (a different
  query each time), and ``cold_ratio`` = cold_recall_s / pass_s; ``*_cpu_s``: the same
  processes' CPU seconds (user + system), which a loaded machine inflates far less than wall;
- ``cold_rss_mb``: the peak RSS of those processes (``wait4``'s rusage per child), median
  and max;
- ``warm_p50_ms``/``warm_p95_ms``: ``GET /recall?q=`` against one running ``memvault serve``
  (HTTP round trip, query embedding, recall), after a warm-up query;
- ``imports_s``: cumulative import time of the main modules in one cold recall
  (``python -X importtime``).

    .venv/bin/python bench/agent_path.py [--homes demo,100k] [--demo-home .demo/home]
        [--reps 10] [--keep DIR] [--json]

Hook timings (capture, prompt-recall, capture → searchable) belong in this bench too; they
are added by the live-capture work where marked ``HOOKS`` below.
"""

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench.shared import free_port  # noqa: E402

EXE = str(Path(sys.executable).with_name("memvault"))
QUERIES = ("when does the postgres backup run?", "tidepool release checklist", "what did we decide about retention",
           "how is the raspberry pi configured", "which port does the database listen on",
           "notes about the homelab README", "why did the nightly run fail", "what is the stanza name",
           "differential backups on weekdays", "who reviewed the release", "timer schedule for backups",
           "what broke in the last deploy")
ENV = {**os.environ, "PREFECT_SERVER_ANALYTICS_ENABLED": "false", "DO_NOT_TRACK": "1", "HF_HUB_OFFLINE": "1",
       "TOKENIZERS_PARALLELISM": "false", "MEMVAULT_ENGINE": "none"}


def timed_child(argv: list[str]) -> tuple[float, float, float, int]:
    """(wall s, CPU s, peak RSS MB, exit code) of one child process, its output discarded."""
    t0 = time.perf_counter()
    proc = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=ENV, cwd=ROOT)
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - t0
    proc.returncode = os.waitstatus_to_exitcode(status)
    return wall, usage.ru_utime + usage.ru_stime, usage.ru_maxrss / 1024, proc.returncode


def build_synthetic_home(n: int, where: Path) -> Path:
    """A memory home whose node index holds ~``n`` synthetic nodes (recall_latency's data)."""
    from bench.recall_latency import NODES_PER_DOC, Corpus, make_docs, synthetic_edges

    from memvault.embeddings import DIM, MODEL_NAME
    from memvault.ops.home import init_home
    from memvault.config.settings import load_settings
    from stores.location import index_uri
    from stores.nodes import NodeIndex

    home = where / "home"
    if (where / "built.json").is_file():
        return home
    shutil.rmtree(where, ignore_errors=True)
    init_home(home)
    settings = load_settings(home)
    nodes = NodeIndex(index_uri(settings), MODEL_NAME, DIM)
    n_docs = max(1, n // NODES_PER_DOC)
    corpus = Corpus(n_clusters=max(32, int(np.sqrt(n_docs) * 4)))
    from datetime import datetime

    chunk = max(1, 50_000 // NODES_PER_DOC)
    for first in range(0, n_docs, chunk):
        rows, clusters = make_docs(corpus, first, min(chunk, n_docs - first), datetime(2025, 1, 1))
        synthetic_edges(rows, clusters, corpus.rng)
        nodes.upsert(rows)
        print(f"  {n}: {first * NODES_PER_DOC + len(rows)} nodes written", file=sys.stderr, flush=True)
    nodes.ensure_indexes(settings.index.ann_threshold)
    (where / "built.json").write_text(json.dumps({"nodes": nodes.count()}))
    return home


def warm_recall(home: Path, reps: int) -> dict[str, float]:
    """p50/p95 ms of GET /recall through one running `memvault serve`."""
    import httpx

    port = free_port()
    server = subprocess.Popen([EXE, "--home", str(home), "serve", "--port", str(port)], stdout=subprocess.DEVNULL,
                              stderr=subprocess.DEVNULL, env=ENV, cwd=ROOT)
    try:
        url = f"http://127.0.0.1:{port}"
        deadline = time.monotonic() + 120
        while True:
            try:
                if httpx.get(f"{url}/health", timeout=2).status_code == 200:
                    break
            except httpx.TransportError:
                pass
            if time.monotonic() > deadline or server.poll() is not None:
                raise RuntimeError("memvault serve did not come up")
            time.sleep(0.2)
        with httpx.Client(base_url=url, timeout=30) as client:
            client.get("/recall", params={"q": "warm-up query"}).raise_for_status()
            times = []
            for i in range(max(reps, 20)):
                q = f"{QUERIES[i % len(QUERIES)]} {i}"  # distinct text: no cache can answer it
                t0 = time.perf_counter()
                client.get("/recall", params={"q": q}).raise_for_status()
                times.append((time.perf_counter() - t0) * 1000)
        return {"warm_p50_ms": round(float(np.median(times)), 1), "warm_p95_ms": round(float(np.percentile(times, 95)), 1)}
    finally:
        server.terminate()
        server.wait(timeout=30)


NAMED_IMPORTS = ("memvault.cli", "memvault.config.settings", "memvault.ops.memory", "stores.nodes", "lancedb", "lance_namespace",
                 "pyarrow", "onnxruntime", "tokenizers", "typer", "rich", "pydantic")


def import_profile(home: Path) -> dict[str, float]:
    """Cumulative import s of the named modules in one cold `memvault recall` (nested: lancedb
    is inside stores.nodes, inside memvault.ops.memory)."""
    code = f"import sys; sys.argv = ['memvault', '--home', {str(home)!r}, 'recall', 'profile query']\n" \
           "from memvault.cli import main\ntry:\n    main()\nexcept SystemExit:\n    pass"
    err = subprocess.run([sys.executable, "-X", "importtime", "-c", code], capture_output=True, text=True,
                         env=ENV, cwd=ROOT).stderr
    found: dict[str, float] = {}
    for line in err.splitlines():
        if line.startswith("import time:") and line.count("|") == 2:
            _, cumulative, name = line.split("|")
            if name.strip() in NAMED_IMPORTS and cumulative.strip().isdigit():
                found.setdefault(name.strip(), round(int(cumulative) / 1e6, 3))
    return found


def measure_home(home: Path, reps: int) -> dict[str, Any]:
    passes, pass_cpu, walls, cpus, rss = [], [], [], [], []
    for i in range(reps):
        # Interleaved, so load on the shared machine hits both alike.
        wall, cpu, _, _ = timed_child([sys.executable, "-c", "pass"])
        passes.append(wall)
        pass_cpu.append(cpu)
        wall, cpu, peak, code = timed_child([EXE, "--home", str(home), "recall", QUERIES[i % len(QUERIES)]])
        if code != 0:
            raise RuntimeError(f"memvault recall exited {code} on {home}")
        walls.append(wall)
        cpus.append(cpu)
        rss.append(peak)
    out: dict[str, Any] = {
        "pass_s": round(float(np.median(passes)), 3),
        "cold_recall_s": round(float(np.median(walls)), 3),
        "cold_ratio": round(float(np.median(walls) / np.median(passes)), 1),
        # CPU seconds do not grow with other processes' load the way wall time does.
        "pass_cpu_s": round(float(np.median(pass_cpu)), 3),
        "cold_recall_cpu_s": round(float(np.median(cpus)), 3),
        "cold_rss_mb": round(float(np.median(rss)), 1),
        "cold_rss_max_mb": round(float(max(rss)), 1),
    }
    out.update(warm_recall(home, reps))
    out["imports_s"] = import_profile(home)
    # HOOKS: capture, prompt-recall (with and without `memvault serve`) and capture → searchable
    # wall times go here (same home, same medians), added with the live-capture commands.
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--homes", default="demo,100k", help="demo and/or <N>k synthetic homes, comma-separated")
    ap.add_argument("--demo-home", type=Path, default=ROOT / ".demo" / "home")
    ap.add_argument("--reps", type=int, default=10, help="repetitions per figure (≥ 10 for the README)")
    ap.add_argument("--keep", type=Path, default=None, metavar="DIR", help="build synthetic homes once into DIR/<N>")
    ap.add_argument("--json", action="store_true")
    ap.add_argument("--build", nargs=2, default=None, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.build:
        build_synthetic_home(int(args.build[0]), Path(args.build[1]))
        return 0
    results: dict[str, Any] = {}
    with tempfile.TemporaryDirectory(prefix="mv-agent-") as tmp:
        for name in [h.strip() for h in args.homes.split(",") if h.strip()]:
            if name == "demo":
                if not (args.demo_home / "memvault.toml").is_file():
                    raise SystemExit(f"no demo home at {args.demo_home}: run `make run` first")
                home = args.demo_home
            elif name.endswith("k") and name[:-1].isdigit():
                n = int(name[:-1]) * 1000
                where = (args.keep or Path(tmp)) / str(n)
                # Built in a child: a forked child's peak RSS counts the parent's pages until
                # it execs, so a parent holding the 100k build would inflate every figure.
                subprocess.run([sys.executable, __file__, "--build", str(n), str(where)], check=True, env=ENV, cwd=ROOT)
                home = where / "home"
            else:
                raise SystemExit(f"unknown home {name!r}: use demo or <N>k, e.g. 100k")
            results[name] = measure_home(home, args.reps)
            print(f"{name}: {results[name]}", file=sys.stderr, flush=True)
    print(json.dumps(results, indent=None if args.json else 2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
