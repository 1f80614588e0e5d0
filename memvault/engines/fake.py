"""A scripted engine for tests: queued replies, recorded calls, same interface as real ones."""

from typing import Any, NamedTuple

from memvault.engines.base import Completion, EngineError, check_cache_prefix


class FakeCall(NamedTuple):
    """One recorded `complete` call."""

    system: str
    prompt: str
    kwargs: dict[str, Any]


class FakeEngine:
    """Returns queued replies in order; a queued exception is raised instead.

    Token counts are whitespace word counts, so budgets behave plausibly in tests.
    """

    name = "fake"

    def __init__(self, responses: list[str | Exception] | None = None, *, model: str = "fake") -> None:
        self.responses: list[str | Exception] = list(responses or [])
        self.calls: list[FakeCall] = []
        self.model: str | None = model

    def complete(
        self,
        system: str,
        prompt: str,
        *,
        max_tokens: int,
        json_schema: dict[str, Any] | None = None,
        cache_prefix: str | None = None,
    ) -> Completion:
        """Record the call and pop the next reply; EngineError when the queue is empty."""
        check_cache_prefix(system, cache_prefix)
        kwargs = {"max_tokens": max_tokens, "json_schema": json_schema, "cache_prefix": cache_prefix}
        self.calls.append(FakeCall(system, prompt, kwargs))
        if not self.responses:
            raise EngineError(f"fake engine has no reply queued for call {len(self.calls)}")
        reply = self.responses.pop(0)
        if isinstance(reply, Exception):
            raise reply
        return Completion(
            text=reply,
            prompt_tokens=len(system.split()) + len(prompt.split()),
            completion_tokens=len(reply.split()),
            seconds=0.0,
        )
