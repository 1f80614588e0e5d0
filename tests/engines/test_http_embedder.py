"""The OpenAI-compatible embedder against a real HTTP server on loopback: batching, retries,
and every way a server can fail, each a clear error naming the URL."""

import socket

import numpy as np
import pytest

from memvault.embeddings.http import HttpEmbedder, identity
from memvault.errors import EmbeddingServerError
from tests.fake_embeddings import FakeServer, fake_embeddings_server, fake_vector


def _embedder(url: str, **kw: object) -> HttpEmbedder:
    return HttpEmbedder(url, "bge-m3", backoff_s=0.001, **kw)  # type: ignore[arg-type]


def test_texts_go_in_batches_and_come_back_in_order_normalised() -> None:
    with fake_embeddings_server(FakeServer(dim=32)) as server:
        e = _embedder(server.url, batch_size=4)
        texts = [f"text number {i}" for i in range(10)]
        got = e.embed(texts)
    assert server.batches == [4, 4, 2]
    assert got.shape == (10, 32) and e.dim == 32
    want = np.asarray([fake_vector(t, 32) for t in texts], dtype=np.float32)
    want /= np.linalg.norm(want, axis=1, keepdims=True)
    assert np.allclose(got, want, atol=1e-6)  # each answer matched to its text by `index`
    assert (e.calls, e.texts) == (1, 10)


def test_the_dimension_is_learned_from_the_first_answer() -> None:
    with fake_embeddings_server(FakeServer(dim=24)) as server:
        e = _embedder(server.url)
        assert e.dim == 24 and server.requests == 1  # one probe
        e.embed(["a"])
        assert server.requests == 2


def test_a_busy_server_is_retried_then_answers() -> None:
    with fake_embeddings_server(FakeServer(fail_next=[503, 429])) as server:
        e = _embedder(server.url, retries=3)
        assert e.embed(["hello"]).shape == (1, 48)
    assert server.requests == 3


def test_a_server_that_stays_down_is_an_error_naming_its_url() -> None:
    with socket.socket() as s:  # a port nothing listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    e = _embedder(f"http://127.0.0.1:{port}/v1", retries=2)
    with pytest.raises(EmbeddingServerError, match=f"127.0.0.1:{port}/v1/embeddings.*3 tries"):
        e.embed(["hello"])
    assert e.requests == 3


def test_a_failing_server_gives_up_after_its_retries() -> None:
    with fake_embeddings_server(FakeServer(fail_next=[500] * 5)) as server:
        with pytest.raises(EmbeddingServerError, match="did not answer after 2 tries"):
            _embedder(server.url, retries=1).embed(["x"])
    assert server.requests == 2


@pytest.mark.parametrize("answer, message", [
    ({"data": []}, "0 vectors for 1 texts"),
    ({"error": "no"}, "no `data` list"),
    (b"<html>hello</html>", "not JSON"),
    ({"data": [{"index": 0, "embedding": "nope"}]}, "not lists of numbers"),
])
def test_an_answer_that_is_not_vectors_is_an_error(answer: object, message: str) -> None:
    with fake_embeddings_server(FakeServer(answer=answer)) as server:
        with pytest.raises(EmbeddingServerError, match=message) as err:
            _embedder(server.url).embed(["x"])
    assert server.url in str(err.value)


def test_a_refusal_is_not_retried() -> None:
    with fake_embeddings_server(FakeServer(fail_next=[404])) as server:
        with pytest.raises(EmbeddingServerError, match="refused the request.*HTTP 404"):
            _embedder(server.url).embed(["x"])
    assert server.requests == 1


def test_a_server_that_changes_dimension_mid_run_is_an_error() -> None:
    with fake_embeddings_server(FakeServer(dim=16)) as server:
        e = _embedder(server.url, batch_size=2)
        e.embed(["a", "b"])
        server.dim = 20
        with pytest.raises(EmbeddingServerError, match="20-dimension vectors, not the 16"):
            e.embed(["c"])


def test_the_api_key_comes_from_the_named_variable(monkeypatch: pytest.MonkeyPatch) -> None:
    with fake_embeddings_server() as server:
        monkeypatch.delenv("MV_TEST_KEY", raising=False)
        with pytest.raises(EmbeddingServerError, match=r"\$MV_TEST_KEY, which is not set"):
            _embedder(server.url, api_key_env="MV_TEST_KEY").embed(["x"])
        monkeypatch.setenv("MV_TEST_KEY", "sekrit")
        _embedder(server.url, api_key_env="MV_TEST_KEY").embed(["x"])
        _embedder(server.url).embed(["x"])
    assert server.auth == ["Bearer sekrit", None]


def test_the_identity_names_model_and_server() -> None:
    assert identity("bge-m3", "http://127.0.0.1:11434/v1/") == "bge-m3@http://127.0.0.1:11434/v1"


def test_settings_choose_the_server_and_refuse_a_model_without_one(tmp_path) -> None:
    from memvault.embeddings.select import embedder_for
    from memvault.errors import ConfigError
    from memvault.config.settings import load_settings

    chosen = embedder_for(load_settings(tmp_path, embeddings={"url": "http://127.0.0.1:11434/v1", "model": "bge-m3",
                                                              "batch_size": 8}))
    assert isinstance(chosen, HttpEmbedder) and chosen.name == "bge-m3@http://127.0.0.1:11434/v1"
    assert chosen.batch_size == 8
    with pytest.raises(ConfigError, match="bge-m3"):
        load_settings(tmp_path, embeddings={"model": "bge-m3"})
    with pytest.raises(ConfigError, match="not an http"):
        load_settings(tmp_path, embeddings={"url": "127.0.0.1:11434", "model": "bge-m3"})
