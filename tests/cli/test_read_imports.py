"""The read commands never import torch or sentence-transformers.

Each command runs in its own interpreter against a real home (the demo nightly run's), through
the console-script entry point, and reports the modules loaded when it ends. Importing torch
costs seconds and hundreds of MB, which a hook or a terminal recall must not pay.
"""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[2]
HEAVY = ("torch", "sentence_transformers")
# Browsing reads the ledger and nothing else: it must not pay for the node index either.
INDEX = "lancedb"
# Runs the CLI as the `memvault` script does, then writes the heavy modules loaded to a file
# (stdout belongs to the command).
WRAPPER = """
import json, sys
out, args = sys.argv[1], json.loads(sys.argv[2])
sys.argv = ["memvault", *args]
from memvault.cli import main
code = 0
try:
    main()
except SystemExit as exc:
    code = exc.code or 0
heavy = sorted(m for m in sys.modules if m.split(".")[0] in {heavy!r})
index = any(m.split(".")[0] == {index!r} for m in sys.modules)
with open(out, "w") as f:
    json.dump({{"code": code, "heavy": heavy, "index": index}}, f)
""".format(heavy=set(HEAVY), index=INDEX)


def run_cli(home: Path, tmp_path: Path, *args: str) -> tuple[dict, str]:
    """(exit code and heavy modules loaded, stdout) of ``memvault --home HOME ARGS…``."""
    out = tmp_path / "loaded.json"
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    proc = subprocess.run([sys.executable, "-c", WRAPPER, str(out), json.dumps(["--home", str(home), *args])],
                          capture_output=True, text=True, env=env, timeout=300, cwd=ROOT)
    assert out.is_file(), f"`memvault {' '.join(args)}` died before exit: {proc.stderr[-2000:]}"
    return json.loads(out.read_text()), proc.stdout


def test_read_commands_never_import_torch(demo_copy: Path, tmp_path: Path) -> None:
    found, stdout = run_cli(demo_copy, tmp_path, "search", "backup", "--json")
    hits = json.loads(stdout)["hits"]
    assert hits, "the demo home should find something for 'backup'"
    node = hits[0]["id"]
    found_articles, stdout = run_cli(demo_copy, tmp_path, "articles", "--json")
    title = json.loads(stdout)[0]["title"]
    commands = {
        "search": found,
        "articles": found_articles,
        "recall": run_cli(demo_copy, tmp_path, "recall", "when does the backup run?")[0],
        "timeline": run_cli(demo_copy, tmp_path, "timeline", node)[0],
        "get": run_cli(demo_copy, tmp_path, "get", node)[0],
        "read": run_cli(demo_copy, tmp_path, "read", title)[0],
        "toc": run_cli(demo_copy, tmp_path, "toc", title)[0],
        "links": run_cli(demo_copy, tmp_path, "links", title)[0],
        "status": run_cli(demo_copy, tmp_path, "status")[0],
        "index-brief": run_cli(demo_copy, tmp_path, "index-brief")[0],
    }
    found_conversations, stdout = run_cli(demo_copy, tmp_path, "conversations", "--json")
    browse = {"conversations": found_conversations,
              "show": run_cli(demo_copy, tmp_path, "show", json.loads(stdout)[0]["ref"])[0]}
    commands.update(browse)
    failed = {name: r["code"] for name, r in commands.items() if r["code"] != 0}
    assert not failed, f"commands failed: {failed}"
    heavy = {name: r["heavy"] for name, r in commands.items() if r["heavy"]}
    assert not heavy, f"read commands imported {HEAVY}: {heavy}"
    indexed = [name for name, r in browse.items() if r["index"]]
    assert not indexed, f"browse commands imported {INDEX}: {indexed}"


def test_the_check_sees_a_heavy_import(home: Path, tmp_path: Path) -> None:
    # The wrapper must see torch when something loads it, or the test above could not fail.
    out = tmp_path / "loaded.json"
    code = WRAPPER.replace("from memvault.cli import main", "import torch\nfrom memvault.cli import main")
    subprocess.run([sys.executable, "-c", code, str(out), json.dumps(["--home", str(home), "status"])],
                   capture_output=True, text=True, env={**os.environ, "PYTHONPATH": str(ROOT)}, timeout=300, cwd=ROOT)
    assert "torch" in json.loads(out.read_text())["heavy"]
