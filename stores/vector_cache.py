"""The home's vector cache: embeddings by (embedder, text hash) in one SQLite file,
``.memvault/vectors.sqlite`` (see memvault/embeddings/cache.py for why).

Derived state like the node index: deleting the file only costs re-embedding. Rows are
keyed by a 20-byte hash of the embedder's name and the text, never the text itself. Writes
are one transaction per batch; a second process writing at the same moment waits (SQLite's
own lock, with a timeout) and a cache that cannot be written is skipped, never an error:
the vectors are still returned to the caller.
"""

import logging
import sqlite3
from pathlib import Path

import numpy as np

from memvault.embeddings import Embedder
from memvault.embeddings.cache import CachedEmbedder

log = logging.getLogger(__name__)
CACHE_FILE = "vectors.sqlite"
_CHUNK = 500  # keys per SELECT (SQLite's variable limit is 32k; this keeps statements small)


class VectorCache:
    """Vectors by key in a SQLite file."""

    def __init__(self, path: Path) -> None:
        self.path = path
        path.parent.mkdir(parents=True, exist_ok=True)
        self.con = sqlite3.connect(path, timeout=30, isolation_level=None, check_same_thread=False)
        self.con.execute("PRAGMA journal_mode=WAL")
        self.con.execute("CREATE TABLE IF NOT EXISTS vectors (key BLOB PRIMARY KEY, dim INTEGER, vec BLOB) WITHOUT ROWID")

    def get_many(self, keys: list[bytes], dim: int) -> dict[bytes, np.ndarray]:
        out: dict[bytes, np.ndarray] = {}
        for start in range(0, len(keys), _CHUNK):
            part = keys[start:start + _CHUNK]
            marks = ",".join("?" * len(part))
            try:
                rows = self.con.execute(f"SELECT key, vec FROM vectors WHERE dim = ? AND key IN ({marks})",
                                        [dim, *part]).fetchall()
            except sqlite3.Error as exc:
                log.warning("vector cache %s unreadable (%s); embedding without it", self.path, exc)
                return out
            for key, blob in rows:
                out[bytes(key)] = np.frombuffer(blob, dtype=np.float32)
        return out

    def put_many(self, items: list[tuple[bytes, np.ndarray]]) -> None:
        if not items:
            return
        try:
            with self.con:
                self.con.execute("BEGIN")
                self.con.executemany("INSERT OR REPLACE INTO vectors VALUES (?, ?, ?)",
                                     [(k, int(v.shape[-1]), np.asarray(v, dtype=np.float32).tobytes()) for k, v in items])
        except sqlite3.Error as exc:
            log.warning("vector cache %s not written (%s); the vectors are used all the same", self.path, exc)

    def count(self) -> int:
        return int(self.con.execute("SELECT count(*) FROM vectors").fetchone()[0])

    def close(self) -> None:
        self.con.close()


def clear_cache(state_dir: Path) -> int:
    """Empty the home's vector cache so no vector of a removed text stays on disk (`forget`,
    `redact --rescan`); returns the vectors dropped.

    Keys are hashes of texts, so a cached vector still confirms that a text was seen (and a
    vector can be inverted towards its text): the cache goes whole rather than guessing
    which texts each stage embedded. ``secure_delete`` and ``VACUUM`` overwrite the freed
    pages; the WAL is truncated. A file SQLite cannot clean is deleted. The next run or
    reindex re-embeds what it needs.
    """
    path = state_dir / CACHE_FILE
    if not path.exists():
        return 0
    try:
        con = sqlite3.connect(path, timeout=30, isolation_level=None)
        try:
            dropped = int(con.execute("SELECT count(*) FROM vectors").fetchone()[0])
            con.execute("PRAGMA secure_delete=ON")
            con.execute("DELETE FROM vectors")
            con.execute("VACUUM")
            con.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        finally:
            con.close()
        return dropped
    except sqlite3.Error as exc:
        log.warning("vector cache %s could not be emptied (%s); deleting it", path, exc)
        for extra in ("", "-wal", "-shm"):
            path.with_name(path.name + extra).unlink(missing_ok=True)
        return 0


class _NoCache:
    """Stands in for a cache file that cannot be opened: every text is a miss."""

    def get_many(self, keys: list[bytes], dim: int) -> dict[bytes, np.ndarray]:
        return {}

    def put_many(self, items: list[tuple[bytes, np.ndarray]]) -> None:
        pass


def cached(embedder: Embedder, state_dir: Path) -> CachedEmbedder:
    """``embedder`` behind the home's vector cache (used bare, with a warning, when the file
    cannot be opened: delete it and the next run writes a new one)."""
    path = state_dir / CACHE_FILE
    try:
        return CachedEmbedder(embedder, VectorCache(path))
    except sqlite3.Error as exc:
        log.warning("vector cache %s cannot be opened (%s); embedding without it — delete the file to start a new one",
                    path, exc)
        return CachedEmbedder(embedder, _NoCache())
