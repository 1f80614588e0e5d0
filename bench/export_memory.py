"""Export memory benchmark (run by hand, not by CI): peak RSS of ingesting a large zipped export.

    .venv/bin/python bench/export_memory.py [--json] [--dir DIR] [--mb 1024] [--small-mb 10]

Writes a synthetic ChatGPT export (``conversations.json`` inside a ``.zip``, as ChatGPT hands
it out, plus the HTML and account files beside it) of about ``--mb`` MB of JSON, and a small
one of ``--small-mb`` MB as the baseline, into a temporary folder under /tmp (removed after
unless ``--dir`` is given; never commit it). Each is ingested in a fresh subprocess that
drives ``memvault.stages.ingest.ingest_roots`` with a real ledger (no Prefect), which reports its peak RSS
(``ru_maxrss``) — while ingesting, and for the whole process, which includes the ledger's
checkpoint when it is closed — seconds, and what it stored; then the big one is ingested again unchanged
and touched (re-read, nothing new).

Goal (issue 16): peak RSS of the 1 GB export bounded — within 1.5× of the small export's —
where loading the export whole (``json.loads``) would need several times its size.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import sys
import time
import zipfile
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench.shared import INGEST_CHILD, WORDS, fresh_home, print_results, run_child, words, work_dir  # noqa: E402


def conversation(rng: random.Random, n: int) -> dict[str, Any]:
    """One ChatGPT conversation as the export writes it: a mapping tree with a hidden system
    root, user and assistant turns, now and then a code call and its output, and a regenerated
    (abandoned) answer."""
    start = 1_700_000_000.0 + n * 600
    mapping: dict[str, Any] = {"client-created-root": {"id": "client-created-root", "message": None,
                                                       "parent": None, "children": []}}
    parent = "client-created-root"

    def add(node: str, role: str, content: dict[str, Any], t: float, hidden: bool = False) -> None:
        nonlocal parent
        mapping[parent]["children"].append(node)
        mapping[node] = {"id": node, "parent": parent, "children": [], "message": {
            "id": node, "author": {"role": role, "name": None, "metadata": {}}, "create_time": t,
            "update_time": None, "content": content, "status": "finished_successfully", "end_turn": True,
            "weight": 1.0, "metadata": {"is_visually_hidden_from_conversation": hidden} if hidden else {},
            "recipient": "all", "channel": None}}
        parent = node

    add(f"{n}-sys", "system", {"content_type": "text", "parts": [""]}, start, hidden=True)
    for t in range(rng.randint(4, 16)):
        t0 = start + t * 30
        add(f"{n}-u{t}", "user", {"content_type": "text", "parts": [words(rng, rng.randint(8, 80))]}, t0)
        if t % 5 == 3:
            add(f"{n}-c{t}", "assistant", {"content_type": "code", "language": "python",
                                           "text": f"print(sorted({rng.sample(WORDS, 4)}))"}, t0 + 1)
            add(f"{n}-o{t}", "tool", {"content_type": "execution_output", "text": str(sorted(rng.sample(WORDS, 4)))},
                t0 + 2)
        if t % 7 == 2:  # an answer the user regenerated: a sibling off the thread
            mapping[parent]["children"].append(f"{n}-r{t}")
            mapping[f"{n}-r{t}"] = {"id": f"{n}-r{t}", "parent": parent, "children": [], "message": None}
        add(f"{n}-a{t}", "assistant", {"content_type": "text", "parts": [words(rng, rng.randint(40, 400))]}, t0 + 5)
    return {"title": f"{rng.choice(WORDS)} {rng.choice(WORDS)} {n}", "create_time": start,
            "update_time": start + 600, "mapping": mapping, "moderation_results": [], "current_node": parent,
            "plugin_ids": None, "conversation_id": f"bench-{n:07d}", "id": f"bench-{n:07d}",
            "default_model_slug": "gpt-4o", "is_archived": False}


def write_export(path: Path, target_mb: int, seed: int) -> dict[str, Any]:
    """A zipped export of about ``target_mb`` MB of JSON, written as a stream (never whole in memory)."""
    rng = random.Random(seed)
    target, written, n = target_mb << 20, 0, 0
    with zipfile.ZipFile(path, "w", compression=zipfile.ZIP_DEFLATED, compresslevel=1) as archive:
        archive.writestr("user.json", json.dumps({"id": "user-bench", "email": "bench@example.org"}))
        archive.writestr("chat.html", "<html><body>bench export</body></html>")
        with archive.open("conversations.json", "w", force_zip64=True) as member:
            member.write(b"[")
            while written < target:
                data = (b", " if n else b"") + json.dumps(conversation(rng, n)).encode()
                member.write(data)
                written += len(data)
                n += 1
            member.write(b"]")
    return {"conversations": n, "json_mb": round(written / 2**20, 1), "zip_mb": round(path.stat().st_size / 2**20, 1)}


_CHILD = INGEST_CHILD + """
with Ledger.open(settings) as ledger:
    t0 = time.perf_counter()
    r = ingest_roots(ledger, settings, [("auto", Path(sys.argv[2]))])
    seconds = time.perf_counter() - t0
    ingest_rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # before the ledger's closing checkpoint
    counts = ledger.counts()
print(json.dumps({"seconds": round(seconds, 1), "conversations_new": r.conversations_new,
                  "peak_rss_ingest_mb": round(ingest_rss, 1),
                  "messages_new": r.messages_new, "files_changed": r.files_changed, "errors": len(r.errors),
                  "slices": r.slices, "ledger_conversations": counts.conversations,
                  "peak_rss_mb": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1)}))
"""


def measure(home: Path, src: Path) -> dict[str, Any]:
    """One ingest in a fresh interpreter, so the peak RSS is that ingest's alone."""
    return run_child(_CHILD, str(home), str(src),
                     env={"PREFECT_SERVER_ANALYTICS_ENABLED": "false", "DO_NOT_TRACK": "1", "HF_HUB_OFFLINE": "1"})


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--json", action="store_true", help="print the figures as JSON")
    parser.add_argument("--dir", type=Path, help="work folder (default: a temporary one under /tmp, removed after)")
    parser.add_argument("--mb", type=int, default=1024, help="JSON size of the big export, in MB")
    parser.add_argument("--small-mb", type=int, default=10, help="JSON size of the baseline export, in MB")
    args = parser.parse_args()
    results: dict[str, Any] = {}
    with work_dir(args.dir, "memvault-export-bench-", "/tmp") as base:
        t0 = time.perf_counter()
        small, big = base / "small-export.zip", base / "big-export.zip"
        results["small_export"] = write_export(small, args.small_mb, 1)
        results["big_export"] = write_export(big, args.mb, 2)
        results["generate_seconds"] = round(time.perf_counter() - t0, 1)
        small_home, big_home = fresh_home(base, "home-small"), fresh_home(base, "home-big")
        results["small_first"] = measure(small_home, small)
        results["big_first"] = measure(big_home, big)
        results["big_rerun_unchanged"] = measure(big_home, big)
        os.utime(big)
        results["big_rerun_touched"] = measure(big_home, big)
        results["load_average"] = [round(x, 2) for x in os.getloadavg()]
        ratio = results["big_first"]["peak_rss_mb"] / results["small_first"]["peak_rss_mb"]
        results["goals"] = {"rss_ratio": round(ratio, 2), "rss_big<=1.5x_small": ratio <= 1.5,
                            "touched_rerun_adds_nothing": results["big_rerun_touched"]["messages_new"] == 0}
    print_results(results, args.json)


if __name__ == "__main__":
    main()
