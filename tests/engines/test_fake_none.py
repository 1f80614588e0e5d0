"""The fake engine's queue and call log; the none engine's refusal."""

import pytest

from memvault.engines import Engine, EngineError, FakeEngine, NoneEngine


def test_fake_engine_queue_and_calls() -> None:
    engine = FakeEngine(["one two three", RuntimeError("boom")])
    assert isinstance(engine, Engine)
    done = engine.complete("be brief", "say three words", max_tokens=5)
    assert done.text == "one two three"
    assert (done.prompt_tokens, done.completion_tokens) == (5, 3)
    with pytest.raises(RuntimeError, match="boom"):
        engine.complete("s", "p", max_tokens=5, json_schema={"type": "object"})
    with pytest.raises(EngineError, match="no reply queued"):
        engine.complete("s", "p", max_tokens=5)
    assert [c.prompt for c in engine.calls] == ["say three words", "p", "p"]
    assert engine.calls[1].kwargs == {"max_tokens": 5, "json_schema": {"type": "object"}, "cache_prefix": None}


def test_none_engine_refuses() -> None:
    engine = NoneEngine()
    assert isinstance(engine, Engine)
    assert engine.name == "none" and engine.model is None
    with pytest.raises(EngineError, match="no model engine configured"):
        engine.complete("s", "p", max_tokens=5)
