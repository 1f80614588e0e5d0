"""A scripted engine for tests: queued replies, recorded calls, same interface as real ones."""

from typing import Any, NamedTuple

from memvault.engines.base import Call, Completion, Engine, EngineError, check_cache_prefix


class FakeCall(NamedTuple):
    """One recorded `complete` call."""

    system: str
    prompt: str
    kwargs: dict[str, Any]


class FakeEngine(Engine):
    """Returns queued replies in order; a queued exception is raised instead.

    Token counts are whitespace word counts, so budgets behave plausibly in tests.
    """

    name = "fake"

    def __init__(self, responses: list[str | Exception] | None = None, *, model: str = "fake") -> None:
        self.responses: list[str | Exception] = list(responses or [])
        self.calls: list[FakeCall] = []
        self.model: str | None = model

    def answer(self, call: Call) -> Completion:
        """Record the call and pop the next reply; EngineError when the queue is empty."""
        system, prompt = call.system, call.prompt
        check_cache_prefix(system, call.cache_prefix)
        kwargs = {"max_tokens": call.max_tokens, "json_schema": call.json_schema, "cache_prefix": call.cache_prefix}
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
