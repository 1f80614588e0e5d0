"""The vector cache: a text is embedded once per embedder, across calls, processes (the
file) and reindexes; the cached vectors are the embedder's own."""

from pathlib import Path

import numpy as np

from memvault.embeddings.cache import text_key
from stores.vector_cache import CACHE_FILE, VectorCache, cached
from tests.fake_embeddings import fake_vector


class Counting:
    """A deterministic embedder that counts what it is asked."""

    def __init__(self, name: str = "counting", dim: int = 12) -> None:
        self.name, self.dim, self.batch_size = name, dim, 4
        self.calls = self.texts = 0
        self.seen: list[str] = []

    def embed(self, texts: list[str]) -> np.ndarray:
        self.calls += 1 if texts else 0
        self.texts += len(texts)
        self.seen += texts
        out = np.asarray([fake_vector(t, self.dim) for t in texts], dtype=np.float32).reshape(len(texts), self.dim)
        return out / np.maximum(np.linalg.norm(out, axis=1, keepdims=True), 1e-12)

    def embed_one(self, text: str) -> np.ndarray:
        return self.embed([text])[0]


def test_each_distinct_text_reaches_the_model_once(tmp_path: Path) -> None:
    inner = Counting()
    e = cached(inner, tmp_path)
    texts = ["a cat", "a dog", "a cat", "a bird", "a dog"]
    got = e.embed(texts)
    assert inner.seen == ["a cat", "a dog", "a bird"] and (e.texts, e.hits) == (3, 2)
    assert np.allclose(got, Counting().embed(texts))
    again = e.embed(["a bird", "a fish"])
    assert inner.seen[-1:] == ["a fish"] and e.texts == 4
    assert np.allclose(again, Counting().embed(["a bird", "a fish"]))


def test_the_file_serves_the_next_process_and_keys_by_embedder(tmp_path: Path) -> None:
    cached(Counting(), tmp_path).embed(["one", "two"])
    later = Counting()
    assert np.allclose(cached(later, tmp_path).embed(["two", "one"]), Counting().embed(["two", "one"]))
    assert later.texts == 0
    other = Counting(name="another-model")
    cached(other, tmp_path).embed(["one"])
    assert other.texts == 1, "another embedder's vectors are never reused"
    wider = Counting(dim=16)
    cached(wider, tmp_path).embed(["one"])
    assert wider.texts == 1
    assert VectorCache(tmp_path / CACHE_FILE).count() == 4


def test_a_broken_cache_file_is_skipped_not_fatal(tmp_path: Path, caplog) -> None:
    (tmp_path / CACHE_FILE).write_bytes(b"not a database at all" * 100)
    inner = Counting()
    e = cached(inner, tmp_path)
    assert np.allclose(e.embed(["x", "y"]), Counting().embed(["x", "y"])) and inner.texts == 2
    assert "cannot be opened" in caplog.text


def test_keys_differ_by_embedder_and_text() -> None:
    assert text_key("m", "a") != text_key("n", "a") != text_key("m", "b")
    assert len(text_key("m", "a")) == 20


def test_the_memory_store_keeps_the_texts_used_last() -> None:
    from memvault.embeddings.cache import CachedEmbedder, MemoryStore

    inner = Counting()
    e = CachedEmbedder(inner, MemoryStore(max_items=2))
    e.embed(["a cat", "a dog"])
    e.embed(["a cat"])  # now the dog is the one used longest ago
    e.embed(["a bird"])
    assert inner.seen == ["a cat", "a dog", "a bird"] and e.hits == 1
    got = e.embed(["a cat", "a dog"])
    assert inner.seen[-1:] == ["a dog"] and e.hits == 2
    assert np.allclose(got, Counting().embed(["a cat", "a dog"]))
