"""The read commands never import torch or sentence-transformers.

Each command runs in its own interpreter against a real home (the demo nightly run's), through
the console-script entry point, and reports the modules loaded when it ends. Importing torch
costs seconds and hundreds of MB, which a hook or a terminal recall must not pay. The node
queries (recall, search, timeline, get) also leave out GitPython and LanceDB's REST client
(`stores.lance_client`), which they never use, and what a query never needs: markdown-it and
PyYAML (no article is parsed), the checks of the `overrides` package that lancedb's classes
would run at definition (`stores.lance_overrides`).
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
UNUSED_BY_QUERIES = ("git", "lance_namespace_urllib3_client.api", "markdown_it", "yaml", "overrides.overrides",
                     "overrides.signature")
# Browsing reads the ledger and nothing else: it must not pay for the node index either.
INDEX = ("lancedb",)
WATCHED = HEAVY + UNUSED_BY_QUERIES + INDEX
# Runs the CLI as the `memvault` script does, then writes the heavy modules loaded to a file
# (stdout belongs to the command).
WRAPPER = """
import json, sys
out, args = sys.argv[1], json.loads(sys.argv[2])
sys.argv = ["memvault", *args]
from memvault.cli import main
from memvault.cli.context import quick_exit
quick_exit.enabled = False  # this wrapper goes on after main to report the modules
code = 0
try:
    main()
except SystemExit as exc:
    code = exc.code or 0
watched = sorted(m for m in sys.modules if any(m == w or m.startswith(w + ".") for w in {watched!r}))
with open(out, "w") as f:
    json.dump({{"code": code, "watched": watched}}, f)
""".format(watched=WATCHED)


def _loaded(result: dict, prefixes: tuple[str, ...]) -> list[str]:
    return [m for m in result["watched"] if any(m == p or m.startswith(p + ".") for p in prefixes)]


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
    heavy = {name: _loaded(r, HEAVY) for name, r in commands.items() if _loaded(r, HEAVY)}
    assert not heavy, f"read commands imported {HEAVY}: {heavy}"
    unused = {name: _loaded(commands[name], UNUSED_BY_QUERIES) for name in ("recall", "search", "timeline", "get")
              if _loaded(commands[name], UNUSED_BY_QUERIES)}
    assert not unused, f"node queries imported {UNUSED_BY_QUERIES}: {unused}"
    indexed = [name for name, r in browse.items() if _loaded(r, INDEX)]
    assert not indexed, f"browse commands imported {INDEX}: {indexed}"


def test_the_check_sees_a_heavy_import(home: Path, tmp_path: Path) -> None:
    # The wrapper must see torch when something loads it, or the test above could not fail.
    out = tmp_path / "loaded.json"
    code = WRAPPER.replace("from memvault.cli import main", "import torch\nfrom memvault.cli import main")
    subprocess.run([sys.executable, "-c", code, str(out), json.dumps(["--home", str(home), "status"])],
                   capture_output=True, text=True, env={**os.environ, "PYTHONPATH": str(ROOT)}, timeout=300, cwd=ROOT)
    assert "torch" in json.loads(out.read_text())["watched"]


# `main` as the console script runs it, with an exit handler that leaves a mark: a read-only
# query ends with os._exit after flushing (no interpreter teardown), anything else as usual.
TEARDOWN = """
import atexit, json, sys
mark, args = sys.argv[1], json.loads(sys.argv[2])
atexit.register(lambda: open(mark, "w").write("torn down"))
sys.argv = ["memvault", *args]
from memvault.cli import main
main()
"""


def _ends(home: Path, tmp_path: Path, *args: str) -> tuple[int, str, bool]:
    mark = tmp_path / f"mark-{len(list(tmp_path.iterdir()))}"
    proc = subprocess.run([sys.executable, "-c", TEARDOWN, str(mark), json.dumps(["--home", str(home), *args])],
                          capture_output=True, text=True, env={**os.environ, "PYTHONPATH": str(ROOT)}, timeout=300,
                          cwd=ROOT)
    return proc.returncode, proc.stdout, mark.exists()


def test_a_read_query_ends_without_teardown_and_says_everything_first(demo_copy: Path, tmp_path: Path) -> None:
    code, out, torn = _ends(demo_copy, tmp_path, "search", "backup", "--json")
    assert code == 0 and json.loads(out)["hits"] and not torn
    code, out, torn = _ends(demo_copy, tmp_path, "recall", "   ")  # misuse keeps its exit code
    assert code == 2 and not torn
    code, out, torn = _ends(demo_copy, tmp_path, "status", "--json")  # not a query: a normal exit
    assert code == 0 and json.loads(out) and torn
