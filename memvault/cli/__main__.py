"""``python -m memvault.cli``: what the detached drainer runs (the same as `memvault`)."""

from memvault.cli import main

main()
