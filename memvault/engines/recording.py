"""An engine that records each prompt it sends in the home's self-call log, then answers.

Wrapping at the one place engines are built (``make_engine(..., record_to=…)``) means every
call any stage makes is recorded, whichever engine answers it (memvault.selfcalls says why).
"""

from typing import Any

from memvault.engines.base import Completion, Engine
from memvault.selfcalls import SelfCallLog


class RecordingEngine:
    """Delegates to ``inner``; records ``system`` and ``prompt`` of every call before making it."""

    def __init__(self, inner: Engine, log: SelfCallLog) -> None:
        self.inner = inner
        self.log = log
        self.name = inner.name
        self.model = inner.model

    def complete(
        self,
        system: str,
        prompt: str,
        *,
        max_tokens: int,
        json_schema: dict[str, Any] | None = None,
        cache_prefix: str | None = None,
    ) -> Completion:
        """Record, then answer as the wrapped engine does."""
        # Recorded first: a transcript may be written while the call is still running.
        self.log.record((system, prompt))
        return self.inner.complete(system, prompt, max_tokens=max_tokens, json_schema=json_schema,
                                   cache_prefix=cache_prefix)
