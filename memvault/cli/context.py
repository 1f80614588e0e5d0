"""What a command gets from the global options: the settings of its home, the memory service."""

from typing import TYPE_CHECKING, Any

import typer

if TYPE_CHECKING:  # heavy: imported inside the helpers, when a command runs
    from memvault.ops.memory import MemoryService
    from memvault.config.settings import Settings


def settings_of(ctx: typer.Context, **overrides: Any) -> "Settings":
    """The settings of the home named by `--home` / MEMVAULT_HOME (``overrides`` are flags)."""
    from memvault.config.settings import load_settings

    return load_settings(ctx.obj.get("home"), **overrides)


def home_settings(ctx: typer.Context) -> "Settings":
    """As :func:`settings_of`, for a command that needs an initialised home (NoHomeError if not)."""
    from memvault.ops.home import require_home

    settings = settings_of(ctx)
    if not settings.hub.url:  # a hub client's home holds only its settings and its spool
        require_home(settings.home)
    return settings


def service_of(ctx: typer.Context) -> "MemoryService":
    """The read-only memory service (recall, search, articles) over the home; a command is one
    process that embeds at most a query, hence the query embedder."""
    from memvault.embeddings.select import query_embedder
    from memvault.ops.memory import MemoryService

    settings = home_settings(ctx)
    service = MemoryService(settings, query_embedder(settings))
    quick_exit.allowed = quick_exit.enabled  # a read-only query: nothing to tear down at exit
    return service


class _QuickExit:
    """Whether this process may end without the interpreter's teardown (``main`` asks).

    A read-only query (recall, search, timeline, get, and the article reads) writes nothing
    that needs closing: the access log is appended with one ``os.write``. Tearing the
    interpreter down after it costs ~0.3 s here (lancedb's runtime, onnxruntime, every module's
    objects), a third of a cold recall, so ``main`` flushes stdout and stderr and calls
    ``os._exit``. ``enabled`` is for a caller that runs ``main`` in process and goes on after it.
    """

    enabled = True
    allowed = False


quick_exit = _QuickExit()

