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


@migration(1, "initial schema")
def _initial(con: duckdb.DuckDBPyConnection) -> None:
    con.execute("""
        CREATE TABLE sources (
            path TEXT PRIMARY KEY, kind TEXT NOT NULL, size BIGINT, mtime DOUBLE,
            prefix_hash TEXT, byte_offset BIGINT, state JSON, updated_at TIMESTAMP
        )""")
    con.execute("""
        CREATE TABLE conversations (
            id TEXT PRIMARY KEY, source TEXT NOT NULL, native_id TEXT NOT NULL, agent_id TEXT,
            parent_id TEXT, title TEXT, project TEXT, started_at TIMESTAMP, updated_at TIMESTAMP,
            leaf_native_id TEXT, ingested_at TIMESTAMP, changed_at TIMESTAMP,
            chunked_at TIMESTAMP, indexed_at TIMESTAMP
        )""")
    con.execute("""
        CREATE TABLE messages (
            conversation_id TEXT NOT NULL, native_id TEXT NOT NULL, parent_native_id TEXT,
            seq BIGINT NOT NULL, role TEXT NOT NULL, kind TEXT NOT NULL, text TEXT NOT NULL,
            timestamp TIMESTAMP, low_value BOOLEAN DEFAULT FALSE,
            PRIMARY KEY (conversation_id, native_id)
        )""")
    con.execute("""
        CREATE TABLE chunks (
            id TEXT PRIMARY KEY, conversation_id TEXT NOT NULL, message_ids TEXT[] NOT NULL,
            label TEXT, text TEXT NOT NULL, vector FLOAT[], created_at TIMESTAMP,
            run_id TEXT
        )""")
    con.execute("""
        CREATE TABLE buckets (
            name TEXT PRIMARY KEY, description TEXT, centroid FLOAT[], size INTEGER DEFAULT 0,
            created_at TIMESTAMP, forgotten BOOLEAN DEFAULT FALSE
        )""")
    con.execute("""
        CREATE TABLE chunk_buckets (
            chunk_id TEXT NOT NULL, bucket TEXT NOT NULL, similarity DOUBLE, run_id TEXT,
            PRIMARY KEY (chunk_id, bucket)
        )""")
    con.execute("""
        CREATE TABLE synthesized_bucket_chunks (
            bucket TEXT NOT NULL, chunk_id TEXT NOT NULL, run_id TEXT, article_hash TEXT,
            synthesized_at TIMESTAMP, PRIMARY KEY (bucket, chunk_id)
        )""")
    # A journal of article writes: the intent is recorded before the file is written, so a
    # crash between the two is resolved on the next run by comparing the file's hash.
    con.execute("""
        CREATE TABLE synthesis_intents (
            bucket TEXT PRIMARY KEY, chunk_ids TEXT[] NOT NULL, article_hash TEXT NOT NULL,
            run_id TEXT, created_at TIMESTAMP
        )""")
    con.execute("""
        CREATE TABLE unit_attempts (
            stage TEXT NOT NULL, unit TEXT NOT NULL, attempts INTEGER DEFAULT 0, parked BOOLEAN DEFAULT FALSE,
            reason TEXT, updated_at TIMESTAMP, PRIMARY KEY (stage, unit)
        )""")
    con.execute("""
        CREATE TABLE runs (
            id TEXT PRIMARY KEY, started_at TIMESTAMP, finished_at TIMESTAMP, status TEXT,
            engine TEXT, report JSON
        )""")
    con.execute("""
        CREATE TABLE stage_results (
            run_id TEXT NOT NULL, stage TEXT NOT NULL, status TEXT, seconds DOUBLE,
            calls INTEGER DEFAULT 0, tokens INTEGER DEFAULT 0, counts JSON,
            PRIMARY KEY (run_id, stage)
        )""")
