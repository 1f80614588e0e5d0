"""Stores behind narrow interfaces: the ledger (DuckDB), the node index (LanceDB), the vault (Markdown + git).

Stages never write SQL or touch LanceDB directly; they call these stores. Nothing here
imports prefect, flows or tasks.
"""
