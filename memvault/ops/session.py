"""A writing session: the writer lock, then the stores opened under it, closed in reverse.

Every operation that changes a memory home — the nightly run, init, forget, rescan, backup,
reindex, lint --fix, maintenance — enters :func:`writing` and works through the
:class:`Session` it yields. The lock and the store handles are therefore owned in one
place: a Python or MCP caller of an operation cannot skip the lock, and no ledger handle
outlives the block (DuckDB lets no other process in while one is open read-write).

Stores open on first use: `lint --fix` never opens the ledger, and `init` does not create
one before the first run.
"""

from collections.abc import Iterator
from contextlib import ExitStack, contextmanager

from memvault.lock import writer_lock
from memvault.config.settings import Settings
from stores.ledger import Ledger
from stores.nodes import NodeIndex
from stores.vault import Vault


class Session:
    """The stores of one writing operation; only :func:`writing` makes one."""

    def __init__(self, settings: Settings, stack: ExitStack) -> None:
        self.settings = settings
        self.vault = Vault(settings.home)
        self._stack = stack
        self._ledger: Ledger | None = None

    @property
    def ledger(self) -> Ledger:
        """The ledger, read-write (opened and migrated on first use, closed with the session)."""
        if self._ledger is None:
            self._ledger = self._stack.enter_context(Ledger.open(self.settings))
        return self._ledger

    def has_ledger(self) -> bool:
        """Whether anything was ever ingested (a new home has no ledger file yet)."""
        return self._ledger is not None or self.settings.ledger_path.exists()

    def checkpoint_ledger(self) -> bool:
        """Fold DuckDB's write-ahead log into the ledger file and close it, so the file alone
        is complete (backup copies it next); False when there is no ledger yet. A later
        ``ledger`` opens it again."""
        if not self.has_ledger():
            return False
        self.ledger.checkpoint()
        self.ledger.close()
        self._ledger = None
        return True

    def nodes(self) -> NodeIndex | None:
        """The live node index, or None before the first run has built one."""
        return NodeIndex.open_existing(self.settings) if NodeIndex.exists(self.settings) else None


@contextmanager
def writing(settings: Settings, command: str) -> Iterator[Session]:
    """Hold the writer lock (waiting up to ``lock_timeout_s``, then
    :class:`~memvault.errors.LockedError` naming the holder) for the block; the stores the
    block opened are closed before the lock is let go. ``command`` is what the lock's note
    shows to a process that finds the home busy."""
    with writer_lock(settings.state_dir, command, settings.lock_timeout_s), ExitStack() as stack:
        yield Session(settings, stack)
