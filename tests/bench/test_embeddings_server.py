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
