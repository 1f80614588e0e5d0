"""An OpenAI-compatible embeddings server as an embedder: ``POST <url>/embeddings``.

Ollama (``http://127.0.0.1:11434/v1``), LM Studio (``http://127.0.0.1:1234/v1``), llama.cpp's
server and vLLM all answer this shape: ``{"model": …, "input": [texts]}`` →
``{"data": [{"index": i, "embedding": [floats]}, …]}``. Texts go in batches of
``batch_size``; each request has a timeout and is retried with exponential backoff on a
connection error, a timeout, 429 or a 5xx answer (tenacity). Anything else — a 4xx, an
answer that is not that JSON, a count or a dimension that does not match — is an
:class:`EmbeddingServerError` naming the URL and what to do, never a silent partial result.

The dimension is learned from the first answer (``dim`` asks the server once if nothing was
embedded yet) and then holds for the process: a server that changes it mid-run is an error.
Vectors are L2-normalised here, since not every server normalises.
"""

import os
from typing import Any

import numpy as np

from memvault.errors import EmbeddingServerError

PROBE_TEXT = "dimension probe"


def identity(model: str, url: str) -> str:
    """The name an index records for this server's vectors: the model and where it runs
    (the same model name on another server may be another quantisation)."""
    return f"{model}@{url.rstrip('/')}"


class _Retryable(Exception):
    """A failure worth another try (connection, timeout, 429, 5xx)."""


class HttpEmbedder:
    """Batch text → L2-normalised float32 vectors from an OpenAI-compatible server."""

    def __init__(self, url: str, model: str, api_key_env: str | None = None, batch_size: int = 64,
                 timeout_s: float = 60.0, retries: int = 3, backoff_s: float = 0.5) -> None:
        self.url = url.rstrip("/")
        self.model = model
        self.name = identity(model, url)
        self.api_key_env = api_key_env
        self.batch_size = batch_size
        self.timeout_s = timeout_s
        self.retries = retries
        self.backoff_s = backoff_s
        self.calls = 0
        self.texts = 0
        self.requests = 0  # HTTP requests sent, retries included
        self._dim: int | None = None
        self._client: Any = None

    @property
    def endpoint(self) -> str:
        return f"{self.url}/embeddings"

    @property
    def dim(self) -> int:
        """The vectors' dimension: from the first answer (one probe request if none yet)."""
        if self._dim is None:
            self._post([PROBE_TEXT])
        assert self._dim is not None
        return self._dim

    def _headers(self) -> dict[str, str]:
        headers = {"Content-Type": "application/json"}
        if self.api_key_env:
            key = os.environ.get(self.api_key_env)
            if not key:
                raise EmbeddingServerError(f"embeddings.api_key_env names ${self.api_key_env}, which is not set — "
                                           f"export it or remove api_key_env for {self.url}")
            headers["Authorization"] = f"Bearer {key}"
        return headers

    def _once(self, texts: list[str]) -> Any:
        import httpx

        if self._client is None:
            self._client = httpx.Client(timeout=self.timeout_s)
        self.requests += 1
        try:
            answer = self._client.post(self.endpoint, json={"model": self.model, "input": texts},
                                       headers=self._headers())
        except (httpx.TimeoutException, httpx.TransportError) as exc:
            raise _Retryable(f"{exc.__class__.__name__}: {exc}") from exc
        if answer.status_code == 429 or answer.status_code >= 500:
            raise _Retryable(f"HTTP {answer.status_code}: {answer.text[:200]}")
        if answer.status_code >= 400:
            raise EmbeddingServerError(f"the embeddings server at {self.endpoint} refused the request "
                                       f"(HTTP {answer.status_code}: {answer.text[:200]}) — check embeddings.model "
                                       f"(`{self.model}`) and embeddings.api_key_env")
        try:
            return answer.json()
        except ValueError as exc:
            raise EmbeddingServerError(f"the embeddings server at {self.endpoint} answered something that is not JSON "
                                       f"({answer.text[:120]!r}) — is embeddings.url the OpenAI-compatible base (…/v1)?") from exc

    def _post(self, texts: list[str]) -> np.ndarray:
        from tenacity import retry, retry_if_exception_type, stop_after_attempt, wait_exponential

        call = retry(retry=retry_if_exception_type(_Retryable), stop=stop_after_attempt(self.retries + 1),
                     wait=wait_exponential(multiplier=self.backoff_s, max=max(self.backoff_s * 8, 0.01)),
                     reraise=True)(self._once)
        try:
            body = call(texts)
        except _Retryable as exc:
            raise EmbeddingServerError(f"the embeddings server at {self.endpoint} did not answer after "
                                       f"{self.retries + 1} tries ({exc}) — start it (e.g. `ollama serve`) or fix "
                                       "embeddings.url; nothing was written") from exc
        return self._vectors(body, len(texts))

    def _vectors(self, body: Any, n: int) -> np.ndarray:
        data = body.get("data") if isinstance(body, dict) else None
        if not isinstance(data, list) or len(data) != n:
            got = len(data) if isinstance(data, list) else "no `data` list"
            raise EmbeddingServerError(f"the embeddings server at {self.endpoint} answered {got} vectors for {n} texts — "
                                       "it does not speak the OpenAI embeddings API; check embeddings.url")
        # `index` orders the answers when present (the API allows any order).
        ordered = sorted(data, key=lambda d: d.get("index", 0)) if all(isinstance(d, dict) for d in data) else data
        try:
            out = np.asarray([d["embedding"] for d in ordered], dtype=np.float32)
        except (KeyError, TypeError, ValueError) as exc:
            raise EmbeddingServerError(f"the embeddings server at {self.endpoint} answered vectors that are not lists "
                                       f"of numbers of one length ({exc}) — check embeddings.url") from exc
        if out.ndim != 2 or out.shape[1] == 0:
            raise EmbeddingServerError(f"the embeddings server at {self.endpoint} answered empty vectors — check embeddings.model")
        if self._dim is None:
            self._dim = int(out.shape[1])
        elif out.shape[1] != self._dim:
            raise EmbeddingServerError(f"the embeddings server at {self.endpoint} answered {out.shape[1]}-dimension vectors, "
                                       f"not the {self._dim} it gave before — has embeddings.model changed? "
                                       "run `memvault reindex` after changing it")
        norms = np.linalg.norm(out, axis=1, keepdims=True)
        np.divide(out, norms, out=out, where=norms > 0)
        return out

    def expect_dim(self, dim: int) -> None:
        """Hold the server to ``dim`` (the index's): a different answer is an error, never a write."""
        if self._dim is None:
            self._dim = dim
        elif self._dim != dim:
            raise EmbeddingServerError(f"the embeddings server at {self.endpoint} gives {self._dim}-dimension vectors, "
                                       f"but the index holds {dim} — run `memvault reindex`")

    def embed(self, texts: list[str]) -> np.ndarray:
        """Embed ``texts`` in batches of ``batch_size``; an empty list costs nothing."""
        if not texts:
            return np.zeros((0, self._dim or 0), dtype=np.float32)
        self.calls += 1
        self.texts += len(texts)
        parts = [self._post(list(texts[s:s + self.batch_size])) for s in range(0, len(texts), self.batch_size)]
        return np.vstack(parts)

    def embed_one(self, text: str) -> np.ndarray:
        vector: np.ndarray = self.embed([text])[0]
        return vector
