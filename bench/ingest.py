"""Ingest benchmark (run by hand, not by CI): throughput, no-change reruns and peak memory.

    .venv/bin/python bench/ingest.py [--json] [--dir DIR] [--sessions 1000] [--big-mb 500]

Generates 1,000 Claude Code sessions (~100 MB) and one 500 MB session (plus a 5 MB one as the
memory baseline) in a temporary folder, then measures each scenario in a fresh subprocess
that drives ``memvault.stages.ingest.ingest_roots`` with a real ledger (no Prefect):

* first ingest of the sessions: MB/s, messages/s, peak RSS
* a no-change rerun: seconds (goal ≤ 2% of the first)
* first ingest of the 5 MB and the 500 MB session: MB/s and peak RSS (goal: 500 MB within
  1.5× of 5 MB), and a no-change rerun of the big one

Goals (issue 3): ≥ 20 MB/s; rerun ≤ 2% of first; RSS(500 MB) ≤ 1.5 × RSS(5 MB).
"""

from __future__ import annotations

import argparse
import json
import os
import random
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench.shared import INGEST_CHILD, WORDS, fresh_home, print_results, run_child, words, work_dir  # noqa: E402


def _session_lines(rng: random.Random, session: str, target: int) -> list[str]:
    """Lines of one realistic Claude Code session (user, assistant, tool call and result)."""
    lines, parent, n, size = [], None, 0, 0
    while size < target:
        n += 1
        uuid = f"{session}-{n:07d}"
        stamp = f"2025-03-{1 + n // 86400 % 28:02d}T{n // 3600 % 24:02d}:{n // 60 % 60:02d}:{n % 60:02d}Z"
        common = {"sessionId": session, "uuid": uuid, "parentUuid": parent, "timestamp": stamp, "cwd": "/src/app",
                  "version": "1.0.0", "userType": "external", "isSidechain": False}
        turn = n % 4
        obj: dict[str, Any]
        if turn == 1:
            obj = {"type": "user", **common, "message": {"role": "user", "content": words(rng, rng.randint(8, 60))}}
        elif turn == 2:
            obj = {"type": "assistant", **common, "message": {
                "id": f"msg_{uuid}", "role": "assistant", "model": "claude-sonnet",
                "content": [{"type": "text", "text": words(rng, rng.randint(40, 220))},
                            {"type": "tool_use", "id": f"toolu_{uuid}", "name": "Bash",
                             "input": {"command": f"grep -rn {rng.choice(WORDS)} src/", "description": "search"}}]}}
        elif turn == 3:
            output = "\n".join(f"src/{rng.choice(WORDS)}.py:{i}: {words(rng, 8)}" for i in range(rng.randint(3, 30)))
            obj = {"type": "user", **common, "toolUseResult": {"stdout": output[:200]}, "message": {
                "role": "user", "content": [{"type": "tool_result", "tool_use_id": f"toolu_{session}-{n - 1:07d}",
                                             "content": output}]}}
        else:
            obj = {"type": "assistant", **common, "message": {
                "id": f"msg_{uuid}", "role": "assistant", "model": "claude-sonnet",
                "content": [{"type": "text", "text": words(rng, rng.randint(20, 120))}]}}
        line = json.dumps(obj) + "\n"
        lines.append(line)
        size += len(line)
        parent = uuid
    return lines


def write_session(path: Path, session: str, target: int, seed: int) -> None:
    """Write a session of about ``target`` bytes, in blocks so generation stays small in memory."""
    rng = random.Random(seed)
    with path.open("w") as fh:
        written, part = 0, 0
        while written < target:
            block = _session_lines(rng, f"{session}", min(8 << 20, target - written))
            # Later blocks continue the same session: renumber so uuids stay unique.
            if part:
                block = [b.replace(f'"{session}-', f'"{session}-p{part}-') for b in block]
            fh.writelines(block)
            written += sum(len(b) for b in block)
            part += 1


def generate(base: Path, sessions: int, big_mb: int) -> dict[str, Path]:
    many = base / "sessions"
    many.mkdir(parents=True, exist_ok=True)
    for i in range(sessions):
        project = many / f"-Users-bench-src-p{i % 40}"
        project.mkdir(exist_ok=True)
        write_session(project / f"s{i:05d}.jsonl", f"s{i:05d}", 100 * 1024 + (i % 7) * 1024, i)
    small, big = base / "small", base / "big"
    small.mkdir(exist_ok=True)
    big.mkdir(exist_ok=True)
    write_session(small / "five.jsonl", "five", 5 << 20, 5)
    write_session(big / "huge.jsonl", "huge", big_mb << 20, 500)
    return {"sessions": many, "small": small, "big": big}


def _du(path: Path) -> int:
    return sum(p.stat().st_size for p in path.rglob("*.jsonl")) if path.is_dir() else path.stat().st_size


_CHILD = INGEST_CHILD + """
with Ledger.open(settings) as ledger:
    t0 = time.perf_counter()
    cpu0 = sum(resource.getrusage(resource.RUSAGE_SELF)[:2])
    r = ingest_roots(ledger, settings, [("claude-code", Path(sys.argv[2]))])
    seconds = time.perf_counter() - t0
print(json.dumps({"seconds": seconds, "bytes_read": r.bytes_read, "messages_new": r.messages_new,
                  "files_seen": r.files_seen, "errors": len(r.errors),
                  "cpu_seconds": sum(resource.getrusage(resource.RUSAGE_SELF)[:2]) - cpu0,
                  "peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}))
"""


def measure(home: Path, src: Path) -> dict[str, Any]:
    """One scenario in a fresh interpreter, so peak RSS belongs to it alone."""
    out = run_child(_CHILD, str(home), str(src))
    mb = _du(src) / 2**20
    out["input_mb"] = round(mb, 1)
    if out["bytes_read"]:
        out["mb_per_s"] = round(out["bytes_read"] / 2**20 / out["seconds"], 1)
        out["messages_per_s"] = round(out["messages_new"] / out["seconds"])
        # Wall time on a shared machine depends on the load; MB per CPU-second does not.
        out["mb_per_cpu_s"] = round(out["bytes_read"] / 2**20 / max(out["cpu_seconds"], 1e-9), 1)
    out["cpu_seconds"] = round(out["cpu_seconds"], 3)
    out["seconds"] = round(out["seconds"], 3)
    out["peak_rss_mb"] = round(out["peak_rss_mb"], 1)
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--json", action="store_true", help="print the figures as JSON")
    parser.add_argument("--dir", type=Path, help="work folder (default: a temporary one, removed after)")
    parser.add_argument("--sessions", type=int, default=1000)
    parser.add_argument("--big-mb", type=int, default=500)
    args = parser.parse_args()
    with work_dir(args.dir, "memvault-bench-") as base:
        t0 = time.perf_counter()
        src = generate(base / "src", args.sessions, args.big_mb)
        gen = time.perf_counter() - t0
        many_home, small_home, big_home = (fresh_home(base, n) for n in ("home-many", "home-small", "home-big"))
        results: dict[str, Any] = {
            "generate_seconds": round(gen, 1),
            "sessions_first": measure(many_home, src["sessions"]),
            "sessions_rerun": measure(many_home, src["sessions"]),
            "small_first": measure(small_home, src["small"]),
            "big_first": measure(big_home, src["big"]),
            "big_rerun": measure(big_home, src["big"]),
        }
        first, rerun = results["sessions_first"], results["sessions_rerun"]
        results["load_average"] = list(os.getloadavg())
        results["goals"] = {
            "mb_per_s_sessions>=20": first.get("mb_per_s", 0) >= 20,
            "mb_per_s_big>=20": results["big_first"].get("mb_per_s", 0) >= 20,
            "rerun<=2%_of_first": rerun["seconds"] <= 0.02 * first["seconds"],
            "rerun_ratio": round(rerun["seconds"] / first["seconds"], 4),
            "rss_big<=1.5x_small": results["big_first"]["peak_rss_mb"] <= 1.5 * results["small_first"]["peak_rss_mb"],
            "rss_ratio": round(results["big_first"]["peak_rss_mb"] / results["small_first"]["peak_rss_mb"], 2),
        }
    print_results(results, args.json, 16)


if __name__ == "__main__":
    main()
