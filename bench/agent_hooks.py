"""The live path's hooks, timed as an agent pays for them, and the prompt-recall threshold.

    python bench/agent_hooks.py --home .demo/home                 # timings (make run builds it)
    python bench/agent_hooks.py --home .demo/home --threshold     # score study only

Figures (medians of ``--reps`` runs, each a fresh process, as a hook runs):

- ``python -c pass`` — the floor of any hook, measured in the same run (the machine is shared).
- ``memvault capture`` — a Stop payload on stdin (the drainer it would start is not started:
  ``--source`` payloads point at a spool-only copy of the home, see below).
- ``memvault prompt-recall`` — direct (no server: the process loads the model and the index)
  and with ``memvault serve`` running (one loopback request).
- capture → searchable — append one assistant turn to a Claude Code transcript, fire the Stop
  hook, and poll until search returns the turn (and `get` shows it). Three rows: with
  ``memvault serve`` running (it drains) polled through its HTTP API (``GET /search``, ``GET
  /get`` every 50 ms: what an agent talking to the server sees), the same polled with cold
  ``memvault search`` + ``memvault get`` processes (each poll a cold start, so the figure
  includes up to one poll's latency), and without a server (the hook starts the detached
  drainer), polled with the cold CLI.

The threshold study prints the best cosine between prompt and hit for prompts about what the home knows and for
prompts it knows nothing about (the bundled samples) — the single threshold prompt-recall used before its
calibrated decision (bench/prompt_precision.py measures that one).
"""

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
import uuid
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench.shared import free_port  # noqa: E402

MEMVAULT = str(Path(sys.executable).parent / "memvault")

RELATED = [
    "how do we back up postgres on the pi?",
    "what port does postgres listen on on pantry?",
    "why did the backup fail in october?",
    "which NOAA station does tidepool use by default?",
    "where does tidepool cache station data?",
    "who reviews tidepool releases?",
    "what ratio do I feed the sourdough starter Bubbles?",
    "what hydration is my standard sourdough loaf?",
    "why was my sourdough crust pale?",
    "when is the Lisbon trip and what is the budget?",
    "what does Pixel need to fly to Portugal?",
    "which argument parser did we pick for the tidepool CLI?",
]
UNRELATED = [
    "write a haiku about autumn leaves",
    "what is the capital of Australia?",
    "explain the difference between TCP and UDP",
    "convert 30 degrees celsius to fahrenheit",
    "how do I reverse a linked list in python?",
    "summarize the plot of Hamlet",
    "what are good stretches for lower back pain?",
    "recommend a science fiction novel",
    "how does photosynthesis work?",
    "what is a monad in haskell?",
    "translate 'good morning' into japanese",
    "how many moons does jupiter have?",
]


def env() -> dict[str, str]:
    return {**os.environ, "HF_HUB_OFFLINE": "1", "TOKENIZERS_PARALLELISM": "false",
            "PREFECT_SERVER_ANALYTICS_ENABLED": "false", "DO_NOT_TRACK": "1"}


def timed(cmd: list[str], stdin: str = "") -> float:
    t = time.perf_counter()
    subprocess.run(cmd, input=stdin, capture_output=True, text=True, env=env(), check=False)
    return time.perf_counter() - t


def median(cmd: list[str], stdin: str, reps: int) -> float:
    return statistics.median(timed(cmd, stdin) for _ in range(reps))


def threshold_study(home: Path) -> dict[str, list[float]]:
    from memvault.ops.memory import MemoryService
    from memvault.config.settings import load_settings

    service = MemoryService(load_settings(home))
    out: dict[str, list[float]] = {}
    for name, prompts in (("related", RELATED), ("unrelated", UNRELATED)):
        out[name] = sorted(round(max((float(h["explain"].get("cos") or 0.0) for h in service.recall(p)["hits"]), default=0.0), 4)
                           for p in prompts)
    return out


def cli_found(home: Path, word: str) -> bool:
    """`memvault search` (a fresh process, as an agent's shell would run it) returns the turn."""
    r = subprocess.run([MEMVAULT, "--home", str(home), "search", word, "--json", "-n", "3"],
                       capture_output=True, text=True, env=env(), check=False)
    if r.returncode != 0 or not json.loads(r.stdout)["hits"]:
        return False
    got = subprocess.run([MEMVAULT, "--home", str(home), "get", json.loads(r.stdout)["hits"][0]["id"]],
                         capture_output=True, text=True, env=env(), check=False)
    return word in got.stdout


def http_found(base: str, word: str) -> bool:
    """The running `memvault serve` returns the turn (`GET /search`, then `GET /get`)."""
    try:
        with urllib.request.urlopen(f"{base}/search?q={word}&limit=3", timeout=30) as r:
            hits = json.loads(r.read())["hits"]
        if not hits:
            return False
        with urllib.request.urlopen(f"{base}/get?ids={hits[0]['id']}", timeout=30) as r:
            return word in r.read().decode()
    except OSError:
        return False  # 503 while a first index is being written, or a refused connection


def capture_to_searchable(home: Path, reps: int, found: Callable[[str], bool]) -> list[float]:
    """Seconds from the Stop hook to ``found(word)`` seeing the new turn, per repetition."""
    src = next((ROOT / "samples" / "claude-code").rglob("*.jsonl"))
    work = Path(tempfile.mkdtemp(prefix="mv-hooks-"))
    transcript = work / src.name
    shutil.copy(src, transcript)
    last = json.loads(src.read_text().splitlines()[-1])
    out = []
    for n in range(reps):
        word = f"zebracorn{uuid.uuid4().hex[:8]}"
        line = {**last, "uuid": str(uuid.uuid4()), "parentUuid": last["uuid"], "type": "assistant",
                "message": {"id": f"msg_{uuid.uuid4().hex}", "role": "assistant", "type": "message",
                            "content": [{"type": "text", "text": f"Noted: the codeword of turn {n} is {word}."}]}}
        last = line
        with transcript.open("a") as fh:
            fh.write(json.dumps(line) + "\n")
        payload = json.dumps({"session_id": line.get("sessionId"), "transcript_path": str(transcript),
                              "cwd": line.get("cwd"), "hook_event_name": "Stop"})
        t = time.perf_counter()
        subprocess.run([MEMVAULT, "--home", str(home), "capture"], input=payload, text=True, env=env(), check=False)
        while time.perf_counter() - t < 300 and not found(word):
            time.sleep(0.05)
        out.append(time.perf_counter() - t)
        # The next turn starts from a drained spool (a detached drainer has exited), so each
        # repetition pays what one hook after a quiet spell pays.
        while spool_busy(home) and time.perf_counter() - t < 300:
            time.sleep(0.05)
    return out


def spool_busy(home: Path) -> bool:
    from memvault.live import spool

    state = home / ".memvault"
    return bool(spool.pending(state)) or (spool.serve_info(state) is None and spool.drainer_running(state))


def hook_figures(scratch: Path, reps: int, fig: dict[str, float | list[float]]) -> None:
    """`python -c pass`, capture, and prompt-recall without a server, into ``fig``."""
    fig["python -c pass"] = median([sys.executable, "-c", "pass"], "", reps)
    # capture with a payload naming no transcript: the spool write and the exit, no drainer.
    stop = json.dumps({"session_id": "x", "transcript_path": str(scratch / "none.jsonl"), "cwd": "/tmp",
                       "hook_event_name": "Stop"})
    spool_only = Path(tempfile.mkdtemp(prefix="mv-spool-")) / "home"
    (spool_only / ".memvault").mkdir(parents=True)
    (spool_only / ".memvault" / "drain.lock").touch()
    holder = subprocess.Popen([sys.executable, "-c", "import fcntl,sys; f=open(sys.argv[1],'a'); "
                               "fcntl.flock(f, fcntl.LOCK_EX); sys.stdin.read()", str(spool_only / ".memvault" / "drain.lock")],
                              stdin=subprocess.PIPE)  # a "running drainer", so capture starts none
    time.sleep(0.3)
    fig["capture"] = median([MEMVAULT, "--home", str(spool_only), "capture"], stop, reps)
    holder.communicate(b"")
    prompt = json.dumps({"prompt": RELATED[0], "cwd": "/tmp"})
    fig["prompt-recall (direct)"] = median([MEMVAULT, "--home", str(scratch), "prompt-recall"], prompt, max(3, reps // 3))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--home", type=Path, required=True, help="A populated home (it is copied, never changed).")
    ap.add_argument("--reps", type=int, default=10)
    ap.add_argument("--searchable-reps", type=int, default=5)
    ap.add_argument("--threshold", action="store_true", help="Only the prompt-recall score study.")
    ap.add_argument("--searchable-only", action="store_true", help="Only the capture -> searchable rows.")
    args = ap.parse_args()
    scratch = Path(tempfile.mkdtemp(prefix="mv-bench-")) / "home"
    shutil.copytree(args.home, scratch, symlinks=True)
    fig: dict[str, float | list[float]] = {}
    if not args.searchable_only:
        study = threshold_study(scratch)
        print(json.dumps({"best_cosine": study}, indent=1))
        if args.threshold:
            return
        hook_figures(scratch, args.reps, fig)
    port = free_port()
    serve = subprocess.Popen([MEMVAULT, "--home", str(scratch), "serve", "--port", str(port)], env=env(),
                             stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        for _ in range(600):
            try:
                urllib.request.urlopen(f"http://127.0.0.1:{port}/prompt-recall?q=warm", timeout=30).read()
                break
            except OSError:
                time.sleep(0.2)
        if not args.searchable_only:
            prompt = json.dumps({"prompt": RELATED[0], "cwd": "/tmp"})
            fig["prompt-recall (serve)"] = median([MEMVAULT, "--home", str(scratch), "prompt-recall"], prompt, args.reps)
        base = f"http://127.0.0.1:{port}"
        fig["capture -> searchable (serve drains, polled over HTTP)"] = capture_to_searchable(
            scratch, args.searchable_reps, lambda w: http_found(base, w))
        fig["capture -> searchable (serve drains, cold CLI poll)"] = capture_to_searchable(
            scratch, args.searchable_reps, lambda w: cli_found(scratch, w))
    finally:
        serve.terminate()
        serve.wait(30)
    fig["capture -> searchable (detached drainer, cold CLI poll)"] = capture_to_searchable(
        scratch, args.searchable_reps, lambda w: cli_found(scratch, w))
    for key, value in fig.items():
        if isinstance(value, list):
            print(f"{key:56s} p50 {statistics.median(value):7.2f} s  ({', '.join(f'{v:.2f}' for v in value)})")
        else:
            print(f"{key:56s} {value * 1000:8.0f} ms")


if __name__ == "__main__":
    main()
