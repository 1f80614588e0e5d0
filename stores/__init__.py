"""Stores behind narrow interfaces: the ledger (DuckDB), the node index (LanceDB, and where it
lives: `location`), the vault (Markdown + git, and its Meta/Buckets.md page: `meta`).

The only modules that import duckdb, lancedb or git. Stages and operations never write SQL
or touch LanceDB or git directly; they call these stores, which return typed rows
(`rows`). Nothing here imports prefect, flows or tasks.
"""

from stores.lance_client import defer_rest_client
from stores.lance_overrides import skip_override_checks

# Before anything here imports lancedb: its unused REST client costs half its import time, and
# its `overrides` checks at class definition a quarter of the rest.
defer_rest_client()
skip_override_checks()
