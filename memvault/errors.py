"""One small error hierarchy; every message says what happened and what to do next."""


class MemvaultError(Exception):
    """Base class for failures the CLI reports with exit code 1.

    A message may quote the input that was wrong (a field's value, a query parameter): its
    secrets are redacted here, once, so no door (CLI, JSON, HTTP, MCP, logs) prints them.
    """

    exit_code = 1

    def __init__(self, *args: object) -> None:
        from memvault.hygiene.redact import redact_message  # here: memvault.hygiene.redact imports this module

        super().__init__(*(redact_message(a) if isinstance(a, str) else a for a in args))


class NoHomeError(MemvaultError):
    """The memory home does not exist yet."""

    def __init__(self, home: object) -> None:
        super().__init__(f"no memory home at {home} — run `memvault init`")


class LockedError(MemvaultError):
    """Another memvault process holds the writer lock."""


class LedgerBusy(LockedError):
    """Another process holds the ledger, so DuckDB will not open it here (DuckDB lets no
    second process in beside a writer, and no writer in beside readers)."""

    def __init__(self, home: object, holder: dict[str, object] | None) -> None:
        self.holder = holder
        if holder:
            message = (f"another memvault process (pid {holder.get('pid', '?')}, {holder.get('command', '?')}, "
                       f"since {holder.get('since', '?')}) is writing to {home} — wait for it to finish and try again")
        else:
            message = (f"the ledger of {home} is open in another process — wait for it to finish "
                       "(`memvault status` shows what runs) and try again")
        super().__init__(message)


class ConfigError(MemvaultError):
    """memvault.toml or an environment variable holds an invalid value."""


class IndexMismatchError(MemvaultError):
    """The node index was built with another embedding model."""


class EmbedderMismatchError(IndexMismatchError):
    """The live index holds vectors of ``stored``, the settings name ``configured``: readers
    may still use it through full text (or the stored embedder, when it is a bundled one)."""

    def __init__(self, message: str, stored: str | None, configured: str) -> None:
        super().__init__(message)
        self.stored, self.configured = stored, configured


class EmbeddingServerError(MemvaultError):
    """The configured embeddings server (``embeddings.url``) failed: down, refusing, or
    answering something that is not the vectors asked for. Never swallowed as a pending
    batch: a rebuild stops with nothing half-written, a run stops its index stage."""


class VaultStateError(MemvaultError):
    """The vault's git repository is not in a state memvault may commit to (wrong branch,
    detached HEAD, a merge or rebase in progress, a stale index lock)."""


class LedgerDamagedError(MemvaultError):
    """The ledger file cannot be read (a corrupt block, not a busy file)."""


class UsageError(MemvaultError):
    """The user asked for something that cannot be done as asked (exit 2)."""

    exit_code = 2


class NotFoundError(MemvaultError):
    """An article, node or conversation named by the user does not exist."""


class AmbiguousIdError(MemvaultError):
    """A short id names more than one conversation (the message lists them)."""


class DiskFullError(MemvaultError):
    """A write failed because the disk (or the user's quota) is full."""


def disk_full(exc: BaseException, path: object = None) -> DiskFullError | None:
    """The clear error for a failure that means "no space left"; None otherwise.

    An OSError says so by its errno (ENOSPC, EDQUOT); DuckDB's and LanceDB's own IO errors are
    not OSErrors and say it in their message (`Could not write file "…": No space left on
    device`), which names the file.
    """
    import errno
    import os
    import re

    if isinstance(exc, OSError) and exc.errno in (errno.ENOSPC, errno.EDQUOT):
        where = exc.filename or path or "the memory home"
    elif isinstance(exc, OSError) and exc.errno is not None:
        return None
    elif any(os.strerror(code) in str(exc) for code in (errno.ENOSPC, errno.EDQUOT)):
        named = re.search(r"""file ["']([^"']+)["']""", str(exc))
        where = named.group(1) if named else path or "the memory home"
    else:
        return None
    return DiskFullError(f"disk full: {where} — free some space and run the command again")
