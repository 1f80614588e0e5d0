"""bench/embeddings_server.py serves a real sentence-transformers model in the shape memvault's
HTTP embedder reads: the bundled MiniLM through the server and the product's own fp32 MiniLM
give the same vectors."""

import threading

import httpx
import numpy as np
import pytest

from bench.embeddings_server import make_server
from memvault.embeddings.http import HttpEmbedder
from memvault.embeddings.minilm import MiniLMEmbedder, model_dir

TEXTS = ["postgres backups run nightly at two", "the cat sat on the mat", "Ledger.chunks reads many rows in one query"]


@pytest.fixture(scope="module")
def url():
    server, dimensions = make_server(model_dir(), port=0, threads=1)
    assert dimensions == 384
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}/v1"
    server.shutdown()
    server.server_close()


def test_the_http_embedder_reads_the_served_model_as_the_product_embeds_it(url):
    served = HttpEmbedder(url, "all-MiniLM-L6-v2", batch_size=2)  # two requests for three texts
    vectors = served.embed(TEXTS)
    assert served.dim == 384 and served.requests == 2
    local = MiniLMEmbedder().embed(TEXTS)
    cosines = np.sum(vectors * local, axis=1)
    assert cosines.min() > 0.999, cosines
    # Different texts stay apart: the server answers each text, in order.
    assert float(vectors[0] @ vectors[1]) < 0.5


def test_a_request_of_another_shape_is_refused_with_a_reason(url):
    bad = httpx.post(f"{url}/embeddings", content=b'{"inputs": "x"}', timeout=30)
    assert bad.status_code == 400 and "input" in bad.json()["error"]["message"]
    missing = httpx.post(url.replace("/v1", "/v2/embeddings"), json={"input": ["x"]}, timeout=30)
    assert missing.status_code == 404


def test_the_benches_embed_through_the_server_the_product_settings_name(url, tmp_path, monkeypatch):
    from bench import chunk_quality, recall_quality
    from memvault.config.settings import load_settings

    # The segmentation benches read the product's environment, as `memvault run` would.
    monkeypatch.setenv("MEMVAULT_EMBEDDINGS__URL", url)
    monkeypatch.setenv("MEMVAULT_EMBEDDINGS__MODEL", "all-MiniLM-L6-v2")
    segmenting = chunk_quality.cached_embedder(tmp_path / "seg.pkl")
    assert isinstance(segmenting.inner, HttpEmbedder)
    # The prompt benches read the home's settings; the cache keeps what the server answered.
    asking = recall_quality.home_embedder(load_settings(tmp_path / "home"), tmp_path / "q.pkl")
    vectors = asking.embed(TEXTS[:2])
    asking.save()
    assert isinstance(asking.inner, HttpEmbedder)
    sent = asking.inner.requests
    np.testing.assert_array_equal(asking.embed(TEXTS[:2]), vectors)
    assert asking.inner.requests == sent and (tmp_path / "q.pkl").is_file()  # embedded once, kept
    np.testing.assert_allclose(segmenting.embed(TEXTS[:2]), vectors, atol=1e-5)
    monkeypatch.delenv("MEMVAULT_EMBEDDINGS__URL")
    assert chunk_quality.cached_embedder(None).inner is None  # unset: the bundled MiniLM
