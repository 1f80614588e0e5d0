"""Engine for any OpenAI-compatible chat server (mlx_lm.server, Ollama, llama.cpp, LM Studio, vLLM).

The API key comes from an environment variable only and is never logged. Connect errors,
5xx and 429 are retried (tenacity) with exponential backoff, or after the server's Retry-After
when that is longer (capped at 30 s); other 4xx fail at once.

Structured output (`json_schema` mode): `auto` sends the reply's JSON schema as
`response_format: {"type": "json_schema", …}` (llama.cpp, vLLM, LM Studio and Ollama constrain
decoding to it); a server that rejects it (400 or 422) is asked again with
`{"type": "json_object"}`, then with no `response_format`, and the first form it accepts is
kept for later calls. `on` sends the schema and fails when the server rejects it; `off` never
sends `response_format`. docs/configuration.md lists what each server accepts.
"""

import logging
import os
import time
from collections.abc import Callable
from typing import Any

import httpx
import tenacity

from memvault.engines.base import Call, Completion, Engine, EngineError, check_cache_prefix
from memvault.engines.settings import JsonSchemaMode

log = logging.getLogger(__name__)

# Transport failures worth another try; a read timeout is not (the model is just slow).
_RETRYABLE = (httpx.ConnectError, httpx.ConnectTimeout, httpx.ReadError, httpx.RemoteProtocolError)
_MAX_RETRY_AFTER_S = 30.0
# The `response_format` forms tried, best first, per mode.
_FORMATS: dict[str, tuple[str | None, ...]] = {
    "auto": ("json_schema", "json_object", None),
    "on": ("json_schema",),
    "off": (None,),
}
# Statuses with which servers refuse a request body they do not understand.
_REJECTED = (400, 422)


def api_root(base_url: str) -> str:
    """Normalize a server URL to its `/v1` root (accepts it with or without `/v1`)."""
    root = base_url.rstrip("/")
    return root if root.endswith("/v1") else root + "/v1"


class OpenAIEngine(Engine):
    """Chat completions over HTTP against an OpenAI-compatible server."""

    name = "openai"

    def __init__(
        self,
        base_url: str,
        model: str | None = None,
        *,
        api_key_env: str = "OPENAI_API_KEY",
        timeout: float = 120.0,
        retries: int = 2,
        backoff: float = 1.0,
        temperature: float | None = None,
        top_p: float | None = None,
        json_schema: JsonSchemaMode = "auto",
        transport: httpx.BaseTransport | None = None,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        self.base_url = api_root(base_url)
        # None omits the field: mlx_lm.server and llama.cpp then use the model they serve.
        self.model = model
        self.api_key_env = api_key_env
        self.timeout = timeout
        self.retries = retries
        self.backoff = backoff
        self.temperature = temperature
        self.top_p = top_p
        self._sleep = sleep
        self.json_schema_mode = json_schema
        # What this server accepted so far: `response_format` forms still to try, best first.
        self._formats = _FORMATS[json_schema]
        self._client = httpx.Client(transport=transport, timeout=timeout)

    def close(self) -> None:
        """Close pooled connections."""
        self._client.close()

    def __enter__(self) -> "OpenAIEngine":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _headers(self) -> dict[str, str]:
        key = os.environ.get(self.api_key_env)
        return {"Authorization": f"Bearer {key}"} if key else {}

    def health(self, timeout: float = 2.0) -> bool:
        """True when the server answers `GET /v1/models` with 200 (body not required)."""
        try:
            response = self._client.get(f"{self.base_url}/models", headers=self._headers(), timeout=timeout)
        except httpx.HTTPError:
            return False
        return response.status_code == 200

    def answer(self, call: Call) -> Completion:
        """POST /v1/chat/completions; `cache_prefix` is left to the server's own prefix cache."""
        system, prompt, max_tokens, json_schema, cache_prefix = call
        check_cache_prefix(system, cache_prefix)
        body: dict[str, object] = {
            "messages": [{"role": "system", "content": system}, {"role": "user", "content": prompt}],
            "max_tokens": max_tokens,
            "stream": False,
        }
        if self.model is not None:
            body["model"] = self.model
        if self.temperature is not None:
            body["temperature"] = self.temperature
        if self.top_p is not None:
            body["top_p"] = self.top_p
        start = time.perf_counter()
        data = self._post_with_retries(body, json_schema)
        return _completion(data, system, prompt, time.perf_counter() - start)

    @property
    def response_format(self) -> str | None:
        """The `response_format` type sent with a schema now (None: plain requests)."""
        return self._formats[0]

    def _post_with_retries(self, body: dict[str, object], json_schema: dict[str, Any] | None = None) -> dict[str, Any]:
        if json_schema is None:
            return self._post_retrying(body)
        for k, kind in enumerate(self._formats):
            attempt = dict(body)
            if kind is not None:
                attempt["response_format"] = _response_format(kind, json_schema)
            try:
                data = self._post_retrying(attempt)
            except _Rejected as exc:
                if k + 1 < len(self._formats):
                    log.info("server at %s rejects response_format %s (%s); trying %s", self.base_url, kind,
                             exc, self._formats[k + 1] or "plain requests")
                    continue
                hint = ("set `json_schema = \"auto\"` (falls back) or `\"off\"` in [model]"
                        if self.json_schema_mode == "on" else "check the model name and the request")
                raise EngineError(f"model server at {self.base_url} rejected the request: {exc} — {hint}") from None
            self._formats = self._formats[k:]  # remembered: later calls start from the form that worked
            return data
        raise AssertionError("unreachable: _FORMATS entries are never empty")

    def _post_retrying(self, body: dict[str, object]) -> dict[str, Any]:
        url = f"{self.base_url}/chat/completions"
        retrying = tenacity.Retrying(
            retry=tenacity.retry_if_exception_type(_Retryable),
            stop=tenacity.stop_after_attempt(self.retries + 1),
            wait=self._wait,
            sleep=self._sleep,
            before_sleep=self._log_retry,
            reraise=True,
        )
        try:
            return retrying(self._post_once, url, body)
        except _Retryable as exc:
            raise EngineError(
                f"model server at {self.base_url} failed after {self.retries + 1} attempts ({exc}) — "
                "is it running? Start it (e.g. `mlx_lm.server --model …`) or set `engine = none`"
            ) from None

    def _post_once(self, url: str, body: dict[str, object]) -> dict[str, Any]:
        """One request: the JSON body on 200, `_Retryable` for what deserves another try, else EngineError."""
        try:
            response = self._client.post(url, json=body, headers=self._headers())
        except _RETRYABLE as exc:
            raise _Retryable(f"cannot reach {url}: {type(exc).__name__}") from exc
        except httpx.TimeoutException as exc:
            raise EngineError(
                f"model server at {self.base_url} did not answer within {self.timeout:g}s "
                f"({type(exc).__name__}) — raise `timeout_s` or use a smaller model"
            ) from exc
        status = response.status_code
        if status == 200:
            return _json(response, url)
        if status in _REJECTED and "response_format" in body:
            # Maybe the format, maybe not: the caller asks again in a simpler form (not a retry).
            raise _Rejected(f"{status}: {response.text[:300]}")
        if status in (401, 403):
            raise EngineError(
                f"model server at {self.base_url} refused the request ({status}) — "
                f"check the API key in ${self.api_key_env}"
            )
        if status == 429 or status >= 500:
            raise _Retryable(f"server answered {status}", retry_after=_retry_after(response))
        raise EngineError(f"model server at {self.base_url} answered {status}: {response.text[:300]}")

    def _wait(self, state: tenacity.RetryCallState) -> float:
        # Exponential backoff, or longer when the server asks for it (429/503 Retry-After).
        exc = state.outcome.exception() if state.outcome else None
        asked = exc.retry_after if isinstance(exc, _Retryable) else 0.0
        return float(max(self.backoff * 2 ** (state.attempt_number - 1), asked))

    def _log_retry(self, state: tenacity.RetryCallState) -> None:
        exc = state.outcome.exception() if state.outcome else None
        wait = state.next_action.sleep if state.next_action else 0.0
        log.warning("model server: %s; retry %d/%d in %.1fs", exc, state.attempt_number, self.retries, wait)


def _response_format(kind: str, schema: dict[str, Any]) -> dict[str, Any]:
    if kind == "json_object":
        return {"type": "json_object"}
    # `strict` off: pydantic's schemas have optional fields and defaults, which OpenAI's strict
    # mode refuses; the servers that constrain decoding honour the schema either way.
    return {"type": "json_schema",
            "json_schema": {"name": str(schema.get("title") or "reply"), "schema": schema, "strict": False}}


class _Rejected(Exception):
    """The server refused a request carrying `response_format` (400/422)."""


class _Retryable(Exception):
    """A failure worth another attempt: a transport error, a 5xx or a 429."""

    def __init__(self, problem: str, retry_after: float = 0.0) -> None:
        super().__init__(problem)
        self.retry_after = retry_after


def _retry_after(response: httpx.Response) -> float:
    try:
        return min(float(response.headers.get("retry-after", "0")), _MAX_RETRY_AFTER_S)
    except ValueError:
        return 0.0


def _json(response: httpx.Response, url: str) -> dict[str, Any]:
    try:
        data = response.json()
    except ValueError as exc:
        raise EngineError(f"{url} answered 200 with a body that is not JSON") from exc
    if not isinstance(data, dict):
        raise EngineError(f"{url} answered 200 with unexpected JSON ({type(data).__name__})")
    return data


def _completion(data: dict[str, Any], system: str, prompt: str, seconds: float) -> Completion:
    try:
        text = data["choices"][0]["message"].get("content") or ""
    except (KeyError, IndexError, TypeError, AttributeError) as exc:
        raise EngineError("model server answered without choices[0].message") from exc
    usage = data.get("usage") or {}
    # Without `usage`, estimate by whitespace words so budgets still move.
    prompt_tokens = usage.get("prompt_tokens")
    completion_tokens = usage.get("completion_tokens")
    return Completion(
        text=text,
        prompt_tokens=int(prompt_tokens) if prompt_tokens is not None else len(system.split()) + len(prompt.split()),
        completion_tokens=int(completion_tokens) if completion_tokens is not None else len(text.split()),
        seconds=seconds,
    )
