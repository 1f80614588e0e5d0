"""memvault: a local-first memory of your conversations with AI assistants."""

__version__ = "0.1.0"
