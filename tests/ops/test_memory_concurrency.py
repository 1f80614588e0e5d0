"""Recall keeps answering while another process writes the index (as the nightly flow does):
readers see the last committed version, with no errors and no lock held across calls."""

import queue
import shutil
import subprocess
import sys
import threading
from pathlib import Path

from memvault.ops.memory import MemoryService
from memvault.config.settings import load_settings
from stores.location import index_uri
from tests.helpers import ROOT

WRITER = Path(__file__).with_name("index_writer.py")
QUERIES = ["postgres backup retention on the NAS", "tidepool default station", "sourdough starter feeding ratio",
           "Lisbon apartment budget"]


def lines_of(proc: subprocess.Popen) -> "queue.Queue[str]":
    out: queue.Queue[str] = queue.Queue()

    def pump() -> None:
        for line in proc.stdout:
            out.put(line.strip())
        out.put("<eof>")

    threading.Thread(target=pump, daemon=True).start()
    return out


def next_line(lines: "queue.Queue[str]", prefix: str) -> str:
    while True:
        line = lines.get(timeout=180)  # bounded: a stuck writer fails the test instead of hanging it
        assert not line.startswith("error"), line
        assert line != "<eof>", f"writer exited before printing {prefix!r}"
        if line.startswith(prefix):
            return line


def test_recall_while_the_index_is_being_written(doors_home, embedder, spawn, tmp_path: Path) -> None:
    home = tmp_path / "home"
    shutil.copytree(doors_home, home)
    settings = load_settings(home)
    stop = tmp_path / "stop"
    writer = spawn([sys.executable, str(WRITER), index_uri(settings), str(stop), "500"],
                   stdout=subprocess.PIPE, text=True, cwd=ROOT)
    lines = lines_of(writer)
    next_line(lines, "ready")
    next_line(lines, "wrote 1")

    service = MemoryService(settings, embedder)
    errors: list[str] = []
    empty = 0
    writes_seen = 1
    recalls = 0
    # Recall until the writer has committed several more cycles under us (bounded either way).
    while recalls < 200 and writes_seen < 6:
        query = QUERIES[recalls % len(QUERIES)]
        try:
            result = service.recall(query)
            empty += not result["hits"]
            service.search(query, 5)
        except Exception as exc:  # noqa: BLE001 - any failure is what this test looks for
            errors.append(f"{query}: {exc!r}")
        recalls += 1
        while not lines.empty():
            line = lines.get_nowait()
            assert not line.startswith("error"), line
            if line.startswith("wrote "):
                writes_seen = int(line.split()[1])

    stop.touch()
    done = next_line(lines, "done")
    writer.wait(timeout=60)
    assert errors == [] and empty == 0, (errors, empty)
    assert writes_seen >= 6, f"the writer committed only {writes_seen} cycle(s) during {recalls} recalls"
    assert done.endswith("errors=0") and writer.returncode == 0
    # The writer's deletes are committed: readers now see none of its temporary nodes.
    assert not [h for h in service.search("rewritten", 50) if h["id"].startswith("writer-")]
