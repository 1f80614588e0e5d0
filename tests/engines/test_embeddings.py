"""The ONNX embedder gives sentence-transformers' vectors, and its export heals itself.

sentence-transformers (on torch) is the reference: it is only a test dependency, so these
tests are where "the same vectors as the model" is proved, not assumed.
"""

import numpy as np
import pytest

from memvault.embeddings import minilm as embeddings
from memvault.embeddings import DIM
from memvault.embeddings.minilm import MiniLMEmbedder, export_path

TEXTS = [
    "when does the postgres backup run?",
    "Caroline: I went to a LGBTQ support group yesterday and it was so powerful.",
    "",
    "   ",
    "Ünïcödé café — 北京, emoji 🎉 and tabs\tinside",
    # Past 256 tokens: both sides must truncate at the model's max_seq_length, not 128 or 512.
    "the nightly run ingests, chunks, clusters and synthesises every conversation " * 40,
    "x",
] + [f"turn {i}: " + "word " * (i * 7 % 90) for i in range(40)]


@pytest.fixture(scope="module")
def reference() -> np.ndarray:
    from sentence_transformers import SentenceTransformer

    model = SentenceTransformer(str(embeddings.model_dir()), device="cpu")
    assert model.max_seq_length == embeddings.MAX_TOKENS
    return model.encode(TEXTS, batch_size=16, normalize_embeddings=True, convert_to_numpy=True)


def test_vectors_match_sentence_transformers(fp32_embedder: MiniLMEmbedder, reference: np.ndarray) -> None:
    got = fp32_embedder.embed(TEXTS)
    assert got.shape == (len(TEXTS), DIM) and got.dtype == np.float32
    assert np.allclose(np.linalg.norm(got, axis=1), 1.0, atol=1e-5)
    # Same name in the index means the same vectors: within 1e-5 of the reference per text,
    # whatever the batch or the order the embedder sorts texts into.
    assert float((got * reference).sum(axis=1).min()) > 1 - 1e-5
    small_batches = MiniLMEmbedder(batch_size=3).embed(TEXTS[::-1])[::-1]
    assert np.abs(small_batches - got).max() < 1e-5


def test_the_query_embedder_gives_the_same_vectors_bit_for_bit(embedder: MiniLMEmbedder, tmp_path) -> None:
    # A CLI recall embeds its query on one thread; the index was embedded on one per core.
    # It also lets its session go after each call (the index search needs the memory); the
    # next call loads it again.
    from memvault.config.settings import load_settings

    from memvault.embeddings.select import query_embedder

    query = query_embedder(load_settings(tmp_path))
    assert query.threads == 1 and embedder.threads is None
    for text in TEXTS[:8]:
        assert np.array_equal(query.embed_one(text), embedder.embed_one(text)), text
        assert query._session is None and embedder._session is not None
    assert np.array_equal(query.embed(TEXTS), embedder.embed(TEXTS))


def test_counters_and_empty_input(tmp_path, monkeypatch) -> None:
    monkeypatch.setenv(embeddings.CACHE_ENV, str(tmp_path))
    e = MiniLMEmbedder()
    assert e.embed([]).shape == (0, DIM) and e.calls == 0 and e._session is None
    assert not export_path().exists(), "an empty call must not even build the export"
    e.embed(["a", "b"])
    e.embed_one("c")
    assert (e.calls, e.texts) == (2, 3)


def test_missing_and_damaged_exports_are_rebuilt(tmp_path, monkeypatch, capsys, fp32_embedder: MiniLMEmbedder) -> None:
    monkeypatch.setenv(embeddings.CACHE_ENV, str(tmp_path))
    path = export_path()
    assert str(path).startswith(str(tmp_path))
    want = fp32_embedder.embed_one("a missing export")

    first = MiniLMEmbedder().embed_one("a missing export")
    assert "is missing; building it" in capsys.readouterr().err
    assert path.is_file() and np.abs(first - want).max() < 1e-6

    MiniLMEmbedder().embed_one("a warm export")
    assert capsys.readouterr().err == "", "a sound export loads silently"

    path.write_bytes(path.read_bytes()[: path.stat().st_size // 3])  # e.g. a disk that filled up
    again = MiniLMEmbedder().embed_one("a missing export")
    assert "bytes, not the" in capsys.readouterr().err
    assert np.abs(again - want).max() < 1e-6

    # Same size, garbage body: caught when onnxruntime parses it.
    path.write_bytes(b"\0" * path.stat().st_size)
    healed = MiniLMEmbedder().embed_one("a missing export")
    assert "cannot be loaded" in capsys.readouterr().err
    assert np.abs(healed - want).max() < 1e-6

    # The weights live beside the graph (external data): a lost or cut weights file heals too.
    weights = embeddings.weights_path(path)
    weights.unlink()
    assert np.abs(MiniLMEmbedder().embed_one("a missing export") - want).max() < 1e-6
    assert "has lost its weights file" in capsys.readouterr().err
    weights.write_bytes(weights.read_bytes()[:4096])
    assert np.abs(MiniLMEmbedder().embed_one("a missing export") - want).max() < 1e-6
    assert "has a weights file of 4096 bytes" in capsys.readouterr().err


def test_an_unwritable_cache_says_what_to_do(tmp_path, monkeypatch) -> None:
    from memvault.errors import ConfigError

    blocker = tmp_path / "not-a-folder"
    blocker.write_text("a file where the cache folder should be")
    monkeypatch.setenv(embeddings.CACHE_ENV, str(blocker))
    with pytest.raises(ConfigError, match="set MEMVAULT_CACHE_DIR to a writable folder"):
        MiniLMEmbedder().embed_one("anything")


def test_the_int8_model_is_its_own_embedder_close_to_fp32_and_never_mixed(tmp_path) -> None:
    import numpy as np

    from memvault.embeddings import INT8_NAME, MODEL_NAME
    from memvault.embeddings.minilm import MiniLMEmbedder
    from memvault.errors import EmbedderMismatchError
    from stores.nodes import NodeIndex

    texts = ["We adopted a rescue dog last spring.", "The deploy failed because the token expired.", "ok"]
    fp32, int8 = MiniLMEmbedder().embed(texts), MiniLMEmbedder(quantized=True)
    q = int8.embed(texts)
    assert int8.name == INT8_NAME != MODEL_NAME and q.shape == fp32.shape
    cosines = (q * fp32).sum(axis=1)
    assert cosines.min() > 0.95 and not np.allclose(q, fp32)  # near, but other vectors
    NodeIndex(str(tmp_path / "nodes.lance"), MODEL_NAME, 384)
    with pytest.raises(EmbedderMismatchError):  # an fp32 index is never written with int8 vectors
        NodeIndex(str(tmp_path / "nodes.lance"), INT8_NAME, 384, create=False)
