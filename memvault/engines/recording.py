"""An engine that records each prompt it sends in the home's self-call log, then answers.

Wrapping at the one place engines are built (``make_engine(..., record_to=…)``) means every
call any stage makes is recorded, whichever engine answers it (memvault.hygiene.selfcalls says why).
"""

from memvault.engines.base import Call, Completion, Engine
from memvault.hygiene.selfcalls import SelfCallLog


class RecordingEngine(Engine):
    """Delegates to ``inner``; records ``system`` and ``prompt`` of every call before making it."""

    def __init__(self, inner: Engine, log: SelfCallLog) -> None:
        self.inner = inner
        self.log = log
        self.name = inner.name
        self.model = inner.model

    def answer(self, call: Call) -> Completion:
        """Record, then answer as the wrapped engine does."""
        # Recorded first: a transcript may be written while the call is still running.
        self.log.record((call.system, call.prompt))
        return self.inner.complete(call.system, call.prompt, max_tokens=call.max_tokens,
                                   json_schema=call.json_schema, cache_prefix=call.cache_prefix)
