"""The `memvault` command line (Typer): thin commands that parse, call the core, render."""

from memvault.cli.app import app, main

__all__ = ["app", "main"]
