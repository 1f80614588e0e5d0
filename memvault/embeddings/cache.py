"""A content-hash cache in front of any embedder: a text is embedded once per embedder.

Every stage of a run embeds what it needs (chunking the exchanges, the index its nodes), a
`memvault reindex` embeds everything again, and a conversation that grows re-embeds its
last turns' windows: identical texts arrive again and again. Keyed by the embedder's name
and the SHA-256 of the text, a vector found in the store is reused instead; only the misses
go to the model, in one call. The store is anything with ``get_many``/``put_many``
(``stores/vector_cache.py`` keeps it in a SQLite file of the home).

``texts``/``calls`` count what reached the model (what a run reports as ``embedded_texts``);
``hits`` what the cache answered.
"""

import hashlib
from typing import Protocol

import numpy as np

from memvault.embeddings.base import Embedder


class VectorStore(Protocol):
    """Vectors by key (bytes), of one width."""

    def get_many(self, keys: list[bytes], dim: int) -> dict[bytes, np.ndarray]: ...

    def put_many(self, items: list[tuple[bytes, np.ndarray]]) -> None: ...


def text_key(name: str, text: str) -> bytes:
    """The cache key of ``text`` embedded by the embedder called ``name``."""
    return hashlib.sha256(f"{name}\x1f{text}".encode("utf-8", "surrogatepass")).digest()[:20]


class CachedEmbedder:
    """``inner`` behind ``store``: the same vectors, each distinct text embedded once."""

    def __init__(self, inner: Embedder, store: VectorStore) -> None:
        self.inner = inner
        self.store = store
        self.hits = 0

    @property
    def name(self) -> str:
        return self.inner.name

    @property
    def dim(self) -> int:
        return self.inner.dim

    @property
    def batch_size(self) -> int:
        return self.inner.batch_size

    @property
    def calls(self) -> int:
        return self.inner.calls

    @property
    def texts(self) -> int:
        return self.inner.texts

    def __getattr__(self, attr: str) -> object:
        # Anything else (threads, keep_session, expect_dim …) is the inner embedder's.
        return getattr(self.inner, attr)

    def embed(self, texts: list[str]) -> np.ndarray:
        """Vectors of ``texts``: from the store where it has them, else from the embedder
        (each distinct missing text once), which then go into the store."""
        if not texts:
            return self.inner.embed([])
        dim = self.inner.dim
        name = f"{self.inner.name}/{dim}"  # a server that changed models under one name misses
        keys = [text_key(name, t) for t in texts]
        found = self.store.get_many(list(dict.fromkeys(keys)), dim)
        missing: dict[bytes, str] = {}
        for k, t in zip(keys, texts):
            if k not in found and k not in missing:
                missing[k] = t
        if missing:
            vectors = self.inner.embed(list(missing.values()))
            fresh = list(zip(missing, np.asarray(vectors, dtype=np.float32)))
            self.store.put_many(fresh)
            found.update(fresh)
        self.hits += len(texts) - len(missing)
        return np.vstack([found[k] for k in keys]).astype(np.float32, copy=False)

    def embed_one(self, text: str) -> np.ndarray:
        vector: np.ndarray = self.embed([text])[0]
        return vector


class MemoryStore:
    """A ``VectorStore`` in memory holding the ``max_items`` texts used last (a warm process's
    cache: the prompt hook's daemon meets the same recalled turns prompt after prompt)."""

    def __init__(self, max_items: int = 4_096) -> None:
        from collections import OrderedDict

        self.max_items = max_items
        self._items: "OrderedDict[bytes, np.ndarray]" = OrderedDict()

    def get_many(self, keys: list[bytes], dim: int) -> dict[bytes, np.ndarray]:
        found: dict[bytes, np.ndarray] = {}
        for k in keys:
            v = self._items.get(k)
            if v is not None and v.shape[-1] == dim:
                self._items.move_to_end(k)
                found[k] = v
        return found

    def put_many(self, items: list[tuple[bytes, np.ndarray]]) -> None:
        for k, v in items:
            self._items[k] = v
            self._items.move_to_end(k)
        while len(self._items) > self.max_items:
            self._items.popitem(last=False)
