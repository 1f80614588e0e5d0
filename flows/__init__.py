"""Prefect flows: the nightly pipeline, ad hoc ingest, recall and maintenance. No business logic."""
