"""Helper process of the concurrency test: writes the node index over and over, as the nightly
index stage does (upserts, an FTS rebuild, deletes), until a stop file appears.

Usage: python index_writer.py INDEX_URI STOP_FILE MAX_ITERATIONS
Prints `ready`, then `wrote N` after each full cycle, then `done N errors=E`.
"""

import sys
from pathlib import Path

from memvault.embeddings import DIM, INT8_NAME
from stores.nodes import NodeIndex


def main(uri: str, stop: Path, max_iterations: int) -> int:
    index = NodeIndex(uri, INT8_NAME, DIM, create=False)  # the default embedder built the test home
    template = index.get([r["id"] for r in index.recent(25)], with_vectors=True)
    done = errors = 0
    print("ready", flush=True)
    while not stop.exists() and done < max_iterations:
        try:
            copies = [{**row, "id": f"writer-{done:05d}-{n:03d}", "text": f"{row['text']} (rewritten {done})"}
                      for n, row in enumerate(template)]
            index.upsert(copies)     # new nodes
            index.upsert(template)   # rewrite existing nodes in place (merge_insert)
            index.ensure_fts()       # replace the full-text index under the readers
            index.delete([c["id"] for c in copies])
            done += 1
            print(f"wrote {done}", flush=True)
        except Exception as exc:  # noqa: BLE001 - reported to the test, which fails on any
            errors += 1
            print(f"error {exc!r}", flush=True)
    print(f"done {done} errors={errors}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1], Path(sys.argv[2]), int(sys.argv[3])))
