"""Plain helpers shared by the tests: paths, transcript and node-row builders, stage contexts,
the scripted fake model, the CLI in process, ports and child processes.

Fixtures live in the conftest.py files and build on these; test files import from here, never
from a conftest (pytest imports conftests itself, under names a test should not rely on).
"""

import json
import os
import re
import shutil
import socket
import subprocess
import sys
from datetime import datetime, timedelta
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import numpy as np
import pytest

from memvault.engines import Completion, FakeEngine

ROOT = Path(__file__).resolve().parent.parent
SAMPLES = ROOT / "samples"
FIXTURES = ROOT / "tests" / "fixtures"
FORMATS = FIXTURES / "formats"
MEMVAULT = str(Path(sys.executable).parent / "memvault")

# Three conversations: two on the home-lab backups, one on tidepool (small and fast to embed).
SUBSET = ("claude-code/-Users-sam-src-homelab",
          "claude-code/-Users-sam-src-tidepool/3261b8ab-5e67-5336-a1ad-f00b145dadd3.jsonl")


def run_flow(home: Path, **options: Any) -> dict[str, Any]:
    """A real nightly flow run on ``home``; returns the report.

    The engine is `none` unless the test names one: a run never depends on what
    ``MEMVAULT_ENGINE`` happens to hold, or on a model server that happens to listen.
    """
    from flows.nightly import RunOptions, nightly

    options.setdefault("engine", "none")
    return nightly(RunOptions(home=str(home), **options))


def cli(*args: str) -> Any:
    """The real command line, in process; exceptions propagate (a crash is not an exit code)."""
    from typer.testing import CliRunner

    from memvault.cli import app

    return CliRunner().invoke(app, list(args), catch_exceptions=False)


def check_golden(path: Path, actual: str) -> None:
    """Compare ``actual`` with the golden file at ``path``.

    Set UPDATE_GOLDEN=1 to rewrite the golden files after a deliberate change (then review them).
    """
    if os.environ.get("UPDATE_GOLDEN") == "1":
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(actual, encoding="utf-8")
    assert path.exists(), f"missing golden file {path}: run with UPDATE_GOLDEN=1 and review it"
    assert actual == path.read_text(encoding="utf-8"), f"{path.name} differs from its golden file"


def copy_subset(dest: Path) -> Path:
    """Copy the SUBSET of the samples into ``dest`` (same relative paths); returns ``dest``."""
    for rel in SUBSET:
        src = SAMPLES / rel
        target = dest / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        if src.is_dir():
            shutil.copytree(src, target)
        else:
            shutil.copyfile(src, target)
    return dest


def stage_ctx(home: Path, run_id: str = "run-test-1", touched: dict[str, str] | None = None) -> SimpleNamespace:
    """What the wikify and normalize stages read from their StageContext."""
    from stores.vault import Vault

    return SimpleNamespace(vault=Vault(home), run_id=run_id, touched_articles=dict(touched or {}), talk_notes=0,
                           ledger=None)


def cc_raw_line(**fields: Any) -> str:
    """One Claude Code transcript line of exactly ``fields`` over a fixed session, cwd and time."""
    base = {"sessionId": "S1", "cwd": "/w", "timestamp": "2026-01-01T00:00:00Z"}
    return json.dumps({**base, **fields}) + "\n"


def cc_line(session: str, n: int, role: str, text: str, parent: str | None = None) -> str:
    """One Claude Code transcript line (user or assistant), newline-terminated."""
    content: Any = text if role == "user" else [{"type": "text", "text": text}]
    message = {"role": role, "content": content}
    if role == "assistant":
        message["id"] = f"msg_{session}_{n}"
    obj = {"type": role, "sessionId": session, "uuid": f"{session}-u{n}", "parentUuid": parent,
           "timestamp": f"2025-01-01T10:{n // 60 % 60:02d}:{n % 60:02d}Z", "cwd": "/w", "message": message}
    return json.dumps(obj) + "\n"


def cc_session(session: str, texts: list[str]) -> str:
    """A linear Claude Code session alternating user and assistant lines."""
    lines, parent = [], None
    for n, text in enumerate(texts):
        lines.append(cc_line(session, n, "user" if n % 2 == 0 else "assistant", text, parent))
        parent = f"{session}-u{n}"
    return "".join(lines)


def write_topics(home: Path, *topics: str) -> None:
    """Replace the entries of the home's Meta/Topics_to_Ignore.md with ``topics``."""
    page = home / "Meta" / "Topics_to_Ignore.md"
    body = page.read_text().split("<!--")[0].split("\n- ")[0].rstrip() + "\n\n"
    page.write_text(body + "".join(f"- {t}: private\n" for t in topics))


def synthetic_rows(n: int, rng: np.random.Generator, start: int = 0, dim: int = 16) -> list[dict]:
    """``n`` node-index rows (ids n<start>…, ``dim``-wide vectors) in 8 clusters, 10 to a document."""
    centers = rng.standard_normal((8, dim))
    now = datetime(2025, 1, 1)
    rows = []
    for i in range(start, start + n):
        v = centers[i % 8] + 0.3 * rng.standard_normal(dim)
        rows.append({"id": f"n{i}", "doc": f"d{i // 10}", "doc_kind": "article", "path": f"/d{i // 10}#p{i}",
                     "parent": f"n{(i // 10) * 10}" if i % 10 else None, "kind": "paragraph", "title": f"t{i}",
                     "text": f"word{i % 8} topic{i % 5} note {i}", "ref": None, "ord": i % 10,
                     "vector": (v / np.linalg.norm(v)).astype(np.float32).tolist(), "pending": False,
                     "content_hash": str(i), "created_at": now + timedelta(minutes=i), "updated_at": now,
                     "importance": 0.5, "access": 0})
    return rows


def check_explain_adds_up(s: Any) -> None:
    """A scored hit's explain adds up: relevance, gathered bonuses, priors, total, and the base
    from its terms."""
    e = s.explain
    relevance = max(float(e["base"]), float(e["propagation"])) + float(e.get("kin_support") or 0.0)
    priors = sum(float(v) for k, v in e.items() if k.endswith("_prior") or k.endswith("_bonus"))
    assert e["relevance"] == pytest.approx(relevance, abs=1e-12)
    assert abs(float(e["total"]) - (relevance + priors)) < 1e-9
    assert s.score == e["total"]
    terms = sum(float(v) for k, v in e.items() if k.endswith("_term"))
    assert abs(float(e["base"]) - terms * float(e["tier"])) < 1e-9 or float(e["base"]) == 0.0


class ScriptedEngine(FakeEngine):
    """A fake model that answers every stage's prompt with valid JSON derived from the prompt."""

    name = "fake"

    def __init__(self, bucket: str = "Scripted Topic") -> None:
        super().__init__([])
        self.bucket = bucket

    def complete(self, system: str, prompt: str, *, max_tokens: int, json_schema: dict | None = None,
                 cache_prefix: str | None = None) -> Completion:
        if "Task: split one conversation" in prompt:
            last = re.search(r"Messages m1 to (m\d+)", prompt).group(1)
            reply: Any = {"chunks": [{"start": "m1", "end": last, "label": "scripted topic"}]}
        elif "Task: sort conversation chunks" in prompt:
            ids = re.findall(r"--- chunk (c\d+)", prompt)
            if f"- {self.bucket}:" in prompt:
                reply = {"assignments": [{"chunk": c, "buckets": [self.bucket]} for c in ids]}
            else:
                reply = {"assignments": [{"chunk": c, "buckets": [], "new_bucket": {
                    "name": self.bucket, "description": "Everything the scripted model sees."}} for c in ids]}
        else:
            ids = re.search(r"using only these ids: (.+)", prompt).group(1).split(", ")
            reply = {"lead": f"**{self.bucket}** collects scripted notes.[^{ids[0]}]",
                     "edits": [{"section": "Notes", "action": "append",
                                "text": f"A scripted statement drawn from conversation {i}.[^{i}]"} for i in ids]}
        self.responses.append(json.dumps(reply))
        return super().complete(system, prompt, max_tokens=max_tokens, json_schema=json_schema,
                                cache_prefix=cache_prefix)


def free_port() -> int:
    """A loopback port nobody listens on right now."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def child_env() -> dict[str, str]:
    """The environment of a memvault child process: this one's, offline and unbuffered."""
    env = dict(os.environ)
    env.update(HF_HUB_OFFLINE="1", TOKENIZERS_PARALLELISM="false", PYTHONUNBUFFERED="1")
    return env


def stop(proc: subprocess.Popen, timeout: float = 10) -> None:
    """End ``proc`` if it still runs: SIGTERM, wait ``timeout`` s, then SIGKILL and reap it."""
    if proc.poll() is not None:
        return
    proc.terminate()
    try:
        proc.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait(timeout=timeout)


def wait_for(predicate: Any, timeout: float, what: str, every: float = 0.1) -> None:
    """Poll ``predicate`` until it is true; fail naming ``what`` after ``timeout`` seconds."""
    import time

    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return
        time.sleep(every)
    raise AssertionError(f"timed out waiting for {what}")


def append_turn(transcript: Path, text: str) -> None:
    """Append one assistant turn to a Claude Code transcript, as the next line Claude Code writes."""
    import uuid

    last = json.loads(transcript.read_text().splitlines()[-1])
    line = {**last, "uuid": str(uuid.uuid4()), "parentUuid": last["uuid"], "type": "assistant",
            "message": {"id": f"msg_{uuid.uuid4().hex}", "role": "assistant", "type": "message",
                        "content": [{"type": "text", "text": text}]}}
    with transcript.open("a") as fh:
        fh.write(json.dumps(line) + "\n")
