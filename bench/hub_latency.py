"""Capture on a client → searchable on the hub, over real HTTP on loopback.

Builds a fresh hub home (`memvault init`, `memvault serve --token-file`) and a client home with
a `[hub]` table, then N times: writes one new Claude Code session (a public transcript fixture
from ../shared/formats/claude_code, its sessionId replaced by a fresh one) and runs the real
Stop hook (`memvault capture`, which starts the pusher). Each capture's latency is the time
from the hook's start until the hub lists the new conversation and its spool is empty (the
drain that ingests a file also indexes it before it removes the entry), i.e. until the new
session is searchable. At the end a search on the hub must find the sessions.

    .venv/bin/python bench/hub_latency.py [--captures 20] [--formats ../shared/formats/claude_code] [--json]

Timing belongs here, never in tests: the figure is a median of one run on this machine.
"""

import argparse
import json
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

import httpx

ROOT = Path(__file__).resolve().parent.parent
MEMVAULT = str(Path(sys.executable).parent / "memvault")
DEFAULT_FORMATS = ROOT.parent / "shared" / "formats" / "claude_code"
sys.path.insert(0, str(ROOT))

from bench.shared import free_port  # noqa: E402


def sessions(folder: Path) -> list[list[dict[str, Any]]]:
    """The fixture transcripts with a sessionId on their lines (those a Stop hook would name)."""
    out = []
    for path in sorted(folder.glob("*.jsonl")):
        lines = []
        for raw in path.read_text(encoding="utf-8").splitlines():
            try:
                obj = json.loads(raw)
            except ValueError:
                continue
            if isinstance(obj, dict):
                lines.append(obj)
        if any("sessionId" in o for o in lines):
            out.append(lines)
    if not out:
        raise SystemExit(f"no Claude Code transcripts with a sessionId under {folder}")
    return out


def fresh_session(template: list[dict[str, Any]], target: Path) -> str:
    sid = str(uuid.uuid4())
    with target.open("w", encoding="utf-8") as fh:
        for obj in template:
            fh.write(json.dumps({**obj, "sessionId": sid} if "sessionId" in obj else obj) + "\n")
    return sid


def _acked(client: Path) -> dict[str, Any]:
    try:
        data = json.loads((client / ".memvault" / "hub-acked.json").read_text())
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def _load() -> float:
    import os

    return round(os.getloadavg()[0], 1)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--captures", type=int, default=20)
    ap.add_argument("--formats", type=Path, default=DEFAULT_FORMATS)
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    templates = sessions(args.formats)
    tmp = Path(tempfile.mkdtemp(prefix="memvault-hub-bench-"))
    env = {"HF_HUB_OFFLINE": "1", "TOKENIZERS_PARALLELISM": "false", "PATH": "/usr/bin:/bin",
           "HOME": str(tmp)}
    hub_home, client = tmp / "hub", tmp / "laptop"
    subprocess.run([MEMVAULT, "--home", str(hub_home), "init"], check=True, capture_output=True, env=env)
    port, token = free_port(), tmp / "hub.token"
    log = (tmp / "hub.log").open("w")
    server = subprocess.Popen([MEMVAULT, "--home", str(hub_home), "serve", "--port", str(port), "--token-file", str(token)],
                              stdout=subprocess.DEVNULL, stderr=log, env=env)
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 120
        while True:
            try:
                httpx.get(f"{url}/health", timeout=2)
                break
            except httpx.TransportError:
                if time.monotonic() > deadline or server.poll() is not None:
                    raise SystemExit(f"the hub did not start: {(tmp / 'hub.log').read_text()}") from None
                time.sleep(0.2)
        (client / ".memvault").mkdir(parents=True)
        copy = client / "hub.token"
        shutil.copy(token, copy)
        copy.chmod(0o600)
        (client / "memvault.toml").write_text(f'[hub]\nurl = "{url}"\ntoken_file = "{copy}"\nmachine = "laptop"\n')
        api = httpx.Client(base_url=url, timeout=30, headers={"Authorization": f"Bearer {token.read_text().strip()}"})
        work = tmp / "transcripts"
        work.mkdir()
        # One capture first, outside the figure: the hub's drainer loads its model on the first drain.
        latencies: list[float] = []
        pushed: list[float] = []  # hook start → the hub acknowledged the bytes (the client's part)
        for n in range(args.captures + 1):
            target = work / f"session-{n}.jsonl"
            sid = fresh_session(templates[n % len(templates)], target)
            payload = json.dumps({"session_id": sid, "transcript_path": str(target), "hook_event_name": "Stop"})
            started = time.monotonic()
            subprocess.run([MEMVAULT, "--home", str(client), "capture"], input=payload, text=True, check=True, env=env)
            acked_at = None
            while True:
                if acked_at is None and str(target) in _acked(client):
                    acked_at = time.monotonic() - started
                listed = api.get("/conversations", params={"limit": 0}).json()
                if len(listed) >= n + 1 and api.get("/v1/status").json()["spool"] == 0:
                    break
                if time.monotonic() - started > 120:
                    raise SystemExit(f"capture {n} not searchable after 120 s; see {tmp / 'hub.log'}")
                time.sleep(0.02)
            if n:
                latencies.append(time.monotonic() - started)
                pushed.append(acked_at if acked_at is not None else latencies[-1])
        hits = api.post("/v1/search", json={"query": "session", "limit": 20}).json()["hits"]
        result = {"captures": len(latencies), "median_s": round(statistics.median(latencies), 3),
                  "p90_s": round(sorted(latencies)[int(0.9 * (len(latencies) - 1))], 3),
                  "max_s": round(max(latencies), 3), "min_s": round(min(latencies), 3),
                  "pushed_median_s": round(statistics.median(pushed), 3),
                  "search_hits": len(hits), "data": str(args.formats), "load_average": _load()}
        print(json.dumps(result) if args.json else
              f"{result['captures']} captures: median {result['median_s']} s, p90 {result['p90_s']} s, "
              f"min {result['min_s']} s, max {result['max_s']} s (acknowledged by the hub: median "
              f"{result['pushed_median_s']} s); search on the hub: {len(hits)} hits; load average {result['load_average']}")
    finally:
        server.terminate()
        server.wait(timeout=30)
        log.close()
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
