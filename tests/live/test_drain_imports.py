"""The live path's writers never import Prefect.

A hook's detached drainer, `memvault watch` and `memvault reindex` use the ingest and index
stages' pure parts (`tasks/ingest_files.py`, `tasks/index_rows.py`), not the stage modules with
their Prefect tasks: importing Prefect costs seconds of a drain that should make a turn
recallable in about as long.
"""

import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PROBE = """
import json, sys
import memvault.ops.drain, memvault.ops.watch, memvault.ops.reindex
print(json.dumps(sorted(m for m in sys.modules if m == "prefect" or m.startswith("prefect."))))
"""


def test_drainer_watch_and_reindex_load_no_prefect() -> None:
    proc = subprocess.run([sys.executable, "-c", PROBE], capture_output=True, text=True, timeout=120, cwd=ROOT)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert json.loads(proc.stdout) == []


def test_stage_modules_still_export_the_pure_names() -> None:
    # Callers of the stages (flows, tests, benches) keep importing from the stage modules.
    import tasks.index as index
    import tasks.index_rows as index_rows
    import tasks.ingest as ingest
    import tasks.ingest_files as ingest_files

    assert ingest.run_ingest is ingest_files.run_ingest and ingest.discover is ingest_files.discover
    assert index.rows_for is index_rows.rows_for and index.write_index is index_rows.write_index
