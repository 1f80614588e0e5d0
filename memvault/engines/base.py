"""The model-engine interface, its result type, and validated structured output.

Stages talk to a model only through `Engine.complete`; `structured` turns a reply into a
pydantic model, retrying once with the validation error, and never raises on bad output.
"""

import json
import logging
import re
from typing import Any, Generic, NamedTuple, TypeVar

from pydantic import BaseModel, Field, ValidationError

from memvault.errors import MemvaultError

log = logging.getLogger(__name__)

M = TypeVar("M", bound=BaseModel)

# How much of a bad reply and of its validation error the retry prompt shows the model.
_SHOWN_REPLY_CHARS = 1500
_SHOWN_ERROR_CHARS = 1500
_FENCE = re.compile(r"```[ \t]*[A-Za-z0-9_-]*[ \t]*\n(.*?)```", re.DOTALL)


class EngineError(MemvaultError):
    """A model engine could not answer (not configured, not loadable, server down)."""


class Completion(BaseModel):
    """One model reply and what it cost."""

    text: str = Field(description="The reply text, as generated.")
    prompt_tokens: int = Field(description="Tokens in the prompt (estimated when the engine cannot tell).")
    completion_tokens: int = Field(description="Tokens generated.")
    seconds: float = Field(description="Wall time of the call.")


class Call(NamedTuple):
    """One `complete` call as the engine received it."""

    system: str
    prompt: str
    max_tokens: int
    json_schema: dict[str, Any] | None = None
    cache_prefix: str | None = None


class Engine:
    """A text-in, text-out model: an engine subclasses this and implements `answer`.

    `cache_prefix`, when given, must be a leading part of `system` that many calls share
    (the Meta context); engines that can reuse a prefilled KV cache for it do, others ignore
    it. It never changes what the model sees, only how fast it sees it.
    """

    name: str
    model: str | None

    def complete(
        self,
        system: str,
        prompt: str,
        *,
        max_tokens: int,
        json_schema: dict[str, Any] | None = None,
        cache_prefix: str | None = None,
    ) -> Completion:
        """Answer `prompt` under `system`; raise EngineError when the engine cannot answer."""
        return self.answer(Call(system, prompt, max_tokens, json_schema, cache_prefix))

    def answer(self, call: Call) -> Completion:
        """What `complete` does for this engine."""
        raise NotImplementedError


def check_cache_prefix(system: str, cache_prefix: str | None) -> None:
    """Reject a `cache_prefix` that is not a prefix of `system` (a caller bug, not bad output)."""
    if cache_prefix is not None and not system.startswith(cache_prefix):
        raise ValueError("cache_prefix must be a leading part of the system prompt")


class Structured(NamedTuple, Generic[M]):
    """What `structured` returns: the value (or None), every completion made, why it gave up."""

    value: M | None
    completions: list[Completion]
    reason: str | None


def _candidates(text: str) -> list[str]:
    """Texts worth parsing, best first: fenced blocks, then the whole reply."""
    return [m.group(1) for m in _FENCE.finditer(text)] + [text]


def extract_json(text: str) -> object:
    """Return the first JSON object or array in `text` (code fences stripped).

    Raises ValueError when there is none.
    """
    decoder = json.JSONDecoder()
    for candidate in _candidates(text):
        for match in re.finditer(r"[\[{]", candidate):
            try:
                value, _ = decoder.raw_decode(candidate, match.start())
            except json.JSONDecodeError:
                continue
            return value
    raise ValueError("no JSON object or array found in the reply")


def parse_reply(text: str, model_cls: type[M]) -> M:
    """Parse and validate a reply; raise ValueError (incl. ValidationError) when it does not fit."""
    return model_cls.model_validate(extract_json(text))


def _describe(error: Exception) -> str:
    return str(error)[:_SHOWN_ERROR_CHARS]


def _retry_prompt(prompt: str, reply: str, error: str) -> str:
    shown = reply if len(reply) <= _SHOWN_REPLY_CHARS else reply[:_SHOWN_REPLY_CHARS] + " …"
    return (
        f"{prompt}\n\n"
        "Your previous reply could not be used.\n"
        f"Previous reply:\n{shown}\n\n"
        f"Validation error:\n{error}\n\n"
        "Reply again with only the corrected JSON, no prose and no code fences."
    )


def structured(
    engine: Engine,
    system: str,
    prompt: str,
    model_cls: type[M],
    max_tokens: int,
    *,
    cache_prefix: str | None = None,
) -> Structured[M]:
    """Ask for JSON matching `model_cls`; retry once showing the error; then give up.

    Bad model output never raises: the result is `(None, completions, reason)`.
    An `EngineError` (engine missing, server down) does propagate: that is not the unit's fault.
    """
    schema = model_cls.model_json_schema()
    completions: list[Completion] = []
    ask = prompt
    error = ""
    for attempt in (1, 2):
        done = engine.complete(system, ask, max_tokens=max_tokens, json_schema=schema, cache_prefix=cache_prefix)
        completions.append(done)
        try:
            return Structured(parse_reply(done.text, model_cls), completions, None)
        except (ValueError, ValidationError) as exc:  # ValidationError is a ValueError; named for clarity
            error = _describe(exc)
            log.info("engine %s: invalid %s on attempt %d: %s", engine.name, model_cls.__name__, attempt, error)
            ask = _retry_prompt(prompt, done.text, error)
    first_line = error.splitlines()[0] if error else "unknown error"
    return Structured(None, completions, f"invalid {model_cls.__name__} after 2 attempts: {first_line}")
