"""What several benches share: synthetic words, fresh homes, a home over copied samples, and a
scenario measured in a fresh interpreter (so its peak RSS is its own)."""

from __future__ import annotations

import json
import os
import random
import shutil
import socket
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
WORDS = ("backup restic postgres schema migration cluster deploy docker volume index query latency "
         "cache redis tidepool lisbon bakelog homelab kernel route proxy certificate rotate weekly "
         "daily snapshot retention bucket object storage test fixture parser ledger vault article").split()

# The start of a child that ingests sys.argv[2] into the home sys.argv[1] with a real ledger (no
# Prefect); each bench appends its own measuring lines and prints one JSON line last.
INGEST_CHILD = """
import json, resource, sys, time
from pathlib import Path
from memvault.config.settings import load_settings
from stores.ledger import Ledger
from memvault.stages.ingest import ingest_roots
settings = load_settings(Path(sys.argv[1]))
"""


def words(rng: random.Random, n: int) -> str:
    """A sentence of ``n`` words drawn from WORDS."""
    return " ".join(rng.choice(WORDS) for _ in range(n)) + "."


def fresh_home(base: Path, name: str) -> Path:
    """A new memory home ``base/name`` (`memvault init`'s layout)."""
    from memvault.ops.home import init_home

    home = base / name
    init_home(home)
    return home


@contextmanager
def sample_home(prefix: str, samples: list[str]) -> Iterator[tuple[Path, Path]]:
    """A fresh home and a source folder holding copies of ``samples`` (folders of samples/), in a
    temporary folder removed afterwards; yields (home, source)."""
    tmp = Path(tempfile.mkdtemp(prefix=prefix))
    try:
        home, src = fresh_home(tmp, "home"), tmp / "samples"
        for rel in samples:
            shutil.copytree(ROOT / "samples" / rel, src / rel)
        yield home, src
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


@contextmanager
def work_dir(given: Path | None, prefix: str, parent: str | None = None) -> Iterator[Path]:
    """The bench's work folder: ``given`` (kept), or a temporary one (in ``parent`` when named)
    removed afterwards."""
    base = given or Path(tempfile.mkdtemp(prefix=prefix, dir=parent))
    base.mkdir(parents=True, exist_ok=True)
    try:
        yield base
    finally:
        if given is None:
            shutil.rmtree(base, ignore_errors=True)


def print_results(results: dict[str, Any], as_json: bool, width: int = 22) -> None:
    """The figures as indented JSON, or one ``name  row`` line each."""
    if as_json:
        print(json.dumps(results, indent=2))
        return
    for name, row in results.items():
        print(f"{name:{width}} {row}")


def run_child(script: str, *args: str, env: dict[str, str] | None = None) -> dict[str, Any]:
    """Run ``script`` in a fresh interpreter at the repository root; its last stdout line, as JSON."""
    proc = subprocess.run([sys.executable, "-c", script, *args], cwd=ROOT, capture_output=True, text=True,
                          check=False, env={**os.environ, **(env or {})})
    if proc.returncode:
        raise SystemExit(f"scenario failed:\n{proc.stderr}")
    result: dict[str, Any] = json.loads(proc.stdout.strip().splitlines()[-1])
    return result


def free_port() -> int:
    """A TCP port on loopback that nothing listens on (for a server the bench starts)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])
