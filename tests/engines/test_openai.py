"""OpenAIEngine against a real mlx_lm.server, and its retries against a mock transport."""

import json

import httpx
import pytest
from pydantic import BaseModel

from memvault.engines import EngineError, structured
from memvault.engines.openai import OpenAIEngine


class Verdict(BaseModel):
    bucket: str
    confidence: float


def test_real_server_completion(mlx_server: str) -> None:
    with OpenAIEngine(mlx_server, timeout=30, retries=0) as engine:
        assert engine.health()
        done = engine.complete("You are terse.", "Say hello.", max_tokens=6)
    assert done.text.strip()
    assert done.completion_tokens == 6
    assert done.prompt_tokens > 3  # from the server's `usage`


def test_real_server_gibberish_gives_up_cleanly(mlx_server: str) -> None:
    with OpenAIEngine(mlx_server, timeout=30, retries=0) as engine:
        value, completions, reason = structured(engine, "Reply with JSON.", "Which bucket?", Verdict, max_tokens=10)
    assert value is None
    assert len(completions) == 2
    assert reason is not None and reason.startswith("invalid Verdict after 2 attempts")


def test_health_false_when_nothing_listens() -> None:
    from tests.helpers import free_port

    assert not OpenAIEngine(f"http://127.0.0.1:{free_port()}/v1").health(timeout=0.5)


def _ok(text: str = "fine") -> httpx.Response:
    return httpx.Response(200, json={"choices": [{"message": {"role": "assistant", "content": text}}]})


def _engine(handler, **kwargs) -> tuple[OpenAIEngine, list[float]]:
    sleeps: list[float] = []
    engine = OpenAIEngine(
        "http://llm.test", "m", transport=httpx.MockTransport(handler), backoff=0.5, sleep=sleeps.append, **kwargs
    )
    return engine, sleeps


def test_retries_5xx_and_429_with_exponential_backoff(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MEMVAULT_TEST_KEY", "sk-secret")
    seen: list[httpx.Request] = []
    answers = [httpx.Response(500), httpx.Response(429), _ok("three words here")]

    def handler(request: httpx.Request) -> httpx.Response:
        seen.append(request)
        return answers[len(seen) - 1]

    engine, sleeps = _engine(handler, retries=2, api_key_env="MEMVAULT_TEST_KEY")
    done = engine.complete("sys", "user", max_tokens=7, json_schema={"type": "object"})
    assert done.text == "three words here"
    assert done.completion_tokens == 3  # no `usage`: estimated
    assert sleeps == [0.5, 1.0]
    assert str(seen[0].url) == "http://llm.test/v1/chat/completions"
    assert seen[0].headers["authorization"] == "Bearer sk-secret"
    body = json.loads(seen[0].content)
    assert body["model"] == "m" and body["max_tokens"] == 7
    assert body["response_format"]["type"] == "json_schema"
    assert body["response_format"]["json_schema"]["schema"] == {"type": "object"}
    assert [m["role"] for m in body["messages"]] == ["system", "user"]


def test_retries_connect_errors_then_gives_up() -> None:
    def handler(request: httpx.Request) -> httpx.Response:
        raise httpx.ConnectError("refused", request=request)

    engine, sleeps = _engine(handler, retries=2)
    with pytest.raises(EngineError, match="failed after 3 attempts") as info:
        engine.complete("s", "p", max_tokens=3)
    assert sleeps == [0.5, 1.0]
    assert "sk-" not in str(info.value)


def test_client_errors_fail_at_once() -> None:
    engine, sleeps = _engine(lambda request: httpx.Response(401), api_key_env="MEMVAULT_NO_SUCH_KEY")
    with pytest.raises(EngineError, match=r"\$MEMVAULT_NO_SUCH_KEY"):
        engine.complete("s", "p", max_tokens=3)
    assert sleeps == []


def test_usage_is_used_when_present() -> None:
    def handler(request: httpx.Request) -> httpx.Response:
        assert "authorization" not in request.headers  # no key in the environment, no header
        return httpx.Response(
            200,
            json={"choices": [{"message": {"content": "x"}}], "usage": {"prompt_tokens": 41, "completion_tokens": 9}},
        )

    engine, _ = _engine(handler, api_key_env="MEMVAULT_NO_SUCH_KEY")
    done = engine.complete("s", "p", max_tokens=3)
    assert (done.prompt_tokens, done.completion_tokens) == (41, 9)


def test_response_format_dropped_when_the_server_rejects_it() -> None:
    bodies: list[dict] = []

    def handler(request: httpx.Request) -> httpx.Response:
        body = json.loads(request.content)
        bodies.append(body)
        if "response_format" in body:
            return httpx.Response(400, text="'response_format.type' must be 'json_schema'")
        return _ok("{}")

    engine, _ = _engine(handler)
    engine.complete("s", "p", max_tokens=3, json_schema={"type": "object"})
    engine.complete("s", "p", max_tokens=3, json_schema={"type": "object"})
    # json_schema, then json_object, then plain; the plain form is kept for the next call
    assert [b.get("response_format", {}).get("type") for b in bodies] == ["json_schema", "json_object", None, None]


def test_retry_after_is_honoured_and_capped() -> None:
    answers = [httpx.Response(429, headers={"Retry-After": "3"}), httpx.Response(503, headers={"Retry-After": "120"}),
               httpx.Response(503, headers={"Retry-After": "soon"}), _ok()]

    def handler(request: httpx.Request) -> httpx.Response:
        return answers.pop(0)

    engine, sleeps = _engine(handler, retries=3)
    assert engine.complete("s", "p", max_tokens=3).text == "fine"
    # Longer of backoff (0.5, 1, 2) and Retry-After; capped at 30 s; an unparseable header is ignored.
    assert sleeps == [3.0, 30.0, 2.0]


def test_5xx_gives_up_after_the_configured_retries() -> None:
    calls: list[int] = []

    def handler(request: httpx.Request) -> httpx.Response:
        calls.append(1)
        return httpx.Response(502)

    engine, sleeps = _engine(handler, retries=1)
    with pytest.raises(EngineError, match=r"failed after 2 attempts \(server answered 502\)"):
        engine.complete("s", "p", max_tokens=3)
    assert len(calls) == 2 and sleeps == [0.5]
