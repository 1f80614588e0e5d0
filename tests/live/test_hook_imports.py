"""What a hook runs never imports Prefect, by the layering alone (no shim modules).

The stages' code lives in `memvault/stages/` and the Prefect tasks over it in `tasks/`, which
no operation imports (tests/test_boundaries.py). Importing Prefect costs seconds of a drain
that should make a turn recallable in about as long, and of every prompt a hook answers. Each
hook command runs here in its own interpreter under ``python -X importtime``, which lists
every module the process imported.
"""

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from memvault.live import spool
from tests.helpers import SAMPLES, append_turn, child_env, wait_for

ROOT = Path(__file__).resolve().parents[2]
SAMPLE = SAMPLES / "claude-code" / "-Users-sam-src-lisbon-2027" / "691563ff-3759-5e7d-a1c8-46e36e4e06f0.jsonl"
PROBE = """
import json, sys
import memvault.ops.drain, memvault.ops.watch, memvault.ops.reindex
import memvault.stages.{stages}
print(json.dumps(sorted(m for m in sys.modules if m == "prefect" or m.startswith("prefect."))))
"""
STAGES = sorted(p.stem for p in (ROOT / "memvault" / "stages").glob("*.py") if p.stem != "__init__")


def imported(home: Path, *args: str, stdin: str = "", **env: str) -> tuple[subprocess.CompletedProcess, set[str]]:
    """Run ``memvault --home HOME ARGS…`` under ``-X importtime``: the process and the modules it imported."""
    proc = subprocess.run([sys.executable, "-X", "importtime", "-m", "memvault.cli", "--home", str(home), *args],
                          input=stdin, capture_output=True, text=True, timeout=300, cwd=ROOT,
                          env={**child_env(), **env})
    # importtime writes "import time: <self us> | <cumulative us> | <indented module name>" to stderr.
    modules = {line.rsplit("|", 1)[1].strip() for line in proc.stderr.splitlines() if line.startswith("import time:")}
    return proc, modules - {"package"}  # "package" is the header line's last column


def prefect(modules: set[str]) -> list[str]:
    return sorted(m for m in modules if m == "prefect" or m.startswith("prefect."))


def test_drainer_watch_reindex_and_every_stage_load_no_prefect() -> None:
    probe = PROBE.format(stages=", memvault.stages.".join(STAGES))
    proc = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=120, cwd=ROOT)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert json.loads(proc.stdout) == []
    assert {"ingest", "chunk", "cluster", "synthesize", "wikify", "normalize", "changelog", "index"} <= set(STAGES)


@pytest.mark.slow
def test_hook_commands_and_the_drain_import_no_prefect(demo_copy: Path, tmp_path: Path) -> None:
    from memvault.ops.capture import capture
    from memvault.ops.capture_paths import register_agent_folder

    home = demo_copy  # a real home, built by two nightly runs
    transcript = tmp_path / "projects" / SAMPLE.name
    transcript.parent.mkdir(parents=True)
    shutil.copy(SAMPLE, transcript)
    register_agent_folder(home / ".memvault", "claude-code", transcript.parent)
    event = json.dumps({"session_id": SAMPLE.stem, "transcript_path": str(transcript), "cwd": "/Users/sam/src/lisbon-2027",
                        "hook_event_name": "Stop", "permission_mode": "default"})
    state = home / ".memvault"
    found: dict[str, set[str]] = {}
    proc, found["capture"] = imported(home, "capture", stdin=event)
    assert proc.returncode == 0, proc.stderr[-2000:]
    # The drainer capture started stores the turn; then one more turn is drained in the foreground.
    wait_for(lambda: spool.pending(state) == 0 and not spool.drainer_running(state), 240, "the spawned drainer")
    append_turn(transcript, "The ferry to Cacilhas leaves every 20 minutes from Cais do Sodré.")
    capture(home, event, spawn=False)
    proc, found["drain"] = imported(home, "drain")
    assert proc.returncode == 0 and spool.pending(state) == 0, proc.stderr[-2000:]
    # Prompt recall and the index brief answered in the hook's own process (no daemon).
    prompt = json.dumps({"prompt": "when does the postgres backup run?"})
    proc, found["prompt-recall"] = imported(home, "prompt-recall", stdin=prompt, MEMVAULT_HOOKD="off")
    assert proc.returncode == 0 and proc.stdout.startswith("<memory-recall>"), proc.stderr[-2000:]
    proc, found["index-brief"] = imported(home, "index-brief", MEMVAULT_HOOKD="off")
    assert proc.returncode == 0 and proc.stdout.startswith("<memvault-index>"), proc.stderr[-2000:]
    assert all(len(modules) > 20 for modules in found.values()), "importtime listed no modules"
    assert {name: prefect(m) for name, m in found.items() if prefect(m)} == {}
    # The drain ran the ingest and index stages' code, which is what must stay free of Prefect.
    assert {"memvault.stages.ingest", "memvault.stages.index_rows"} <= found["drain"]


def test_the_check_sees_prefect_when_it_is_imported(home: Path) -> None:
    # -X importtime must list Prefect when a command loads it, or the test above could not fail.
    proc, modules = imported(home, "status", PYTHONSTARTUP="")
    assert proc.returncode == 0
    probe = subprocess.run([sys.executable, "-X", "importtime", "-c", "import prefect"], capture_output=True, text=True,
                           timeout=120, cwd=ROOT)
    listed = {line.rsplit("|", 1)[1].strip() for line in probe.stderr.splitlines() if line.startswith("import time:")}
    assert "prefect" in listed and prefect(modules) == []
