"""Numbered ledger migrations, registered by decorator and applied in order on open."""

from collections.abc import Callable

import duckdb

Migration = Callable[[duckdb.DuckDBPyConnection], None]
MIGRATIONS: list[tuple[int, str, Migration]] = []


def migration(version: int, name: str) -> Callable[[Migration], Migration]:
    """Register ``fn`` as migration ``version``; versions must be added in increasing order."""

    def register(fn: Migration) -> Migration:
        assert not MIGRATIONS or MIGRATIONS[-1][0] < version, "migrations must be numbered upwards"
        MIGRATIONS.append((version, name, fn))
        return fn

    return register


# The whole first schema, as shipped: one CREATE TABLE per table, run in this order.
_INITIAL_TABLES = (
    """
        CREATE TABLE sources (
            path TEXT PRIMARY KEY, kind TEXT NOT NULL, size BIGINT, mtime DOUBLE,
            prefix_hash TEXT, byte_offset BIGINT, state JSON, updated_at TIMESTAMP
        )""",
    """
        CREATE TABLE conversations (
            id TEXT PRIMARY KEY, source TEXT NOT NULL, native_id TEXT NOT NULL, agent_id TEXT,
            parent_id TEXT, title TEXT, project TEXT, started_at TIMESTAMP, updated_at TIMESTAMP,
            leaf_native_id TEXT, ingested_at TIMESTAMP, changed_at TIMESTAMP,
            chunked_at TIMESTAMP, indexed_at TIMESTAMP
        )""",
    """
        CREATE TABLE messages (
            conversation_id TEXT NOT NULL, native_id TEXT NOT NULL, parent_native_id TEXT,
            seq BIGINT NOT NULL, role TEXT NOT NULL, kind TEXT NOT NULL, text TEXT NOT NULL,
            timestamp TIMESTAMP, low_value BOOLEAN DEFAULT FALSE,
            PRIMARY KEY (conversation_id, native_id)
        )""",
    """
        CREATE TABLE chunks (
            id TEXT PRIMARY KEY, conversation_id TEXT NOT NULL, message_ids TEXT[] NOT NULL,
            label TEXT, text TEXT NOT NULL, vector FLOAT[], created_at TIMESTAMP,
            run_id TEXT
        )""",
    """
        CREATE TABLE buckets (
            name TEXT PRIMARY KEY, description TEXT, centroid FLOAT[], size INTEGER DEFAULT 0,
            created_at TIMESTAMP, forgotten BOOLEAN DEFAULT FALSE
        )""",
    """
        CREATE TABLE chunk_buckets (
            chunk_id TEXT NOT NULL, bucket TEXT NOT NULL, similarity DOUBLE, run_id TEXT,
            PRIMARY KEY (chunk_id, bucket)
        )""",
    """
        CREATE TABLE synthesized_bucket_chunks (
            bucket TEXT NOT NULL, chunk_id TEXT NOT NULL, run_id TEXT, article_hash TEXT,
            synthesized_at TIMESTAMP, PRIMARY KEY (bucket, chunk_id)
        )""",
    # A journal of article writes: the intent is recorded before the file is written, so a
    # crash between the two is resolved on the next run by comparing the file's hash.
    """
        CREATE TABLE synthesis_intents (
            bucket TEXT PRIMARY KEY, chunk_ids TEXT[] NOT NULL, article_hash TEXT NOT NULL,
            run_id TEXT, created_at TIMESTAMP
        )""",
    """
        CREATE TABLE unit_attempts (
            stage TEXT NOT NULL, unit TEXT NOT NULL, attempts INTEGER DEFAULT 0, parked BOOLEAN DEFAULT FALSE,
            reason TEXT, updated_at TIMESTAMP, PRIMARY KEY (stage, unit)
        )""",
    """
        CREATE TABLE runs (
            id TEXT PRIMARY KEY, started_at TIMESTAMP, finished_at TIMESTAMP, status TEXT,
            engine TEXT, report JSON
        )""",
    """
        CREATE TABLE stage_results (
            run_id TEXT NOT NULL, stage TEXT NOT NULL, status TEXT, seconds DOUBLE,
            calls INTEGER DEFAULT 0, tokens INTEGER DEFAULT 0, counts JSON,
            PRIMARY KEY (run_id, stage)
        )""",
)


@migration(1, "initial schema")
def _initial(con: duckdb.DuckDBPyConnection) -> None:
    for ddl in _INITIAL_TABLES:
        con.execute(ddl)


@migration(2, "ignored conversations and ledger key/value state")
def _ignored(con: duckdb.DuckDBPyConnection) -> None:
    # Conversations on a topic of Meta/Topics_to_Ignore.md: kept, never chunked or indexed.
    con.execute("ALTER TABLE conversations ADD COLUMN ignored BOOLEAN DEFAULT FALSE")
    con.execute("UPDATE conversations SET ignored = FALSE")
    # Small named values the pipeline remembers between runs (e.g. the ignore list's hash).
    con.execute("CREATE TABLE ledger_state (key TEXT PRIMARY KEY, value TEXT, updated_at TIMESTAMP)")


@migration(3, "model-backed stages: prompt hashes per unit, bucket proposals, pending Buckets.md additions")
def _model_stages(con: duckdb.DuckDBPyConnection) -> None:
    # Which prompt (template + Meta pages, hashed) and which path made each unit's result:
    # the prompt hash is part of a unit's cache key (docs/pipeline.md, "Prompts").
    con.execute("""
        CREATE TABLE unit_results (
            stage TEXT NOT NULL, unit TEXT NOT NULL, prompt_hash TEXT, method TEXT, reason TEXT,
            run_id TEXT, recorded_at TIMESTAMP, PRIMARY KEY (stage, unit)
        )""")
    # New buckets proposed by the model, one row per supporting chunk, until they have enough.
    con.execute("""
        CREATE TABLE bucket_proposals (
            name TEXT NOT NULL, chunk_id TEXT NOT NULL, description TEXT, run_id TEXT,
            created_at TIMESTAMP, PRIMARY KEY (name, chunk_id)
        )""")
    # Buckets created in the ledger but not yet appended to Meta/Buckets.md: written in the
    # same transaction as the buckets, cleared once the page is written (crash safety).
    con.execute("""
        CREATE TABLE pending_bucket_pages (
            name TEXT PRIMARY KEY, description TEXT, run_id TEXT, created_at TIMESTAMP
        )""")


@migration(4, "editorial: a stable file stem per bucket, tombstones of forgotten conversations")
def _editorial(con: duckdb.DuckDBPyConnection) -> None:
    from memvault.markdown.names import title_to_stem, unique_stem

    # Two bucket titles can sanitize to one file stem ("C# Tips", "C Tips"): the second gets
    # `_2`, and the choice is stored so it never flips between runs.
    con.execute("ALTER TABLE buckets ADD COLUMN stem TEXT")
    taken: set[str] = set()
    for (name,) in con.execute("SELECT name FROM buckets ORDER BY created_at, name").fetchall():
        stem = unique_stem(title_to_stem(name), taken)
        taken.add(stem)
        con.execute("UPDATE buckets SET stem = ? WHERE name = ?", [stem, name])
    # `memvault forget --conversation`: the id stays here so a later ingest never brings it back.
    # No title or text is kept, only the key and where it came from.
    con.execute("""
        CREATE TABLE forgotten_conversations (
            id TEXT PRIMARY KEY, source TEXT, forgotten_at TIMESTAMP
        )""")


@migration(5, "ingest errors kept until their file changes")
def _ingest_errors(con: duckdb.DuckDBPyConnection) -> None:
    # A file's problems are found by the run that reads it; later runs skip the unchanged file
    # but must still say it is broken, so the problems are kept beside its watermark.
    con.execute("""
        CREATE TABLE ingest_errors (
            path TEXT NOT NULL, seq INTEGER NOT NULL, file TEXT NOT NULL, line INTEGER, error TEXT NOT NULL,
            recorded_at TIMESTAMP, PRIMARY KEY (path, seq)
        )""")


@migration(6, "parked units remember the input they failed on")
def _parked_input(con: duckdb.DuckDBPyConnection) -> None:
    # A rejection that cannot change until its input changes (the no-model path is
    # deterministic) is parked at once with a hash of that input, and unparked only when the
    # hash changes: no nightly retry, no nightly Talk note, no commit with nothing new.
    con.execute("ALTER TABLE unit_attempts ADD COLUMN input_hash TEXT")
