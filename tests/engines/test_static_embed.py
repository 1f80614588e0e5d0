"""The static embedder distilled from MiniLM: the recipe, the vectors, the self-healing table,
and the index's refusal of another model's vectors until `reindex`.

A full distillation passes ~30k tokens through MiniLM (about a minute of CPU), so these tests
distil a small vocabulary instead — the tokens of the texts they embed plus a few hundred
common words (enough for the 256 principal components) — through the same code.
"""

from pathlib import Path

import numpy as np
import pytest

from memvault.embeddings import static as static_embed
from memvault.embeddings import STATIC_NAME
from memvault.embeddings.minilm import MiniLMEmbedder
from memvault.embeddings.select import embedder_for
from memvault.embeddings.static import STATIC_DIM, StaticEmbedder, build_table, static_path

TEXTS = [
    "the cat sat on the mat",
    "a kitten was sitting on the rug",
    "quarterly tax filing deadline",
    "when does the postgres backup run and how long is it kept",
    "Caroline: I went to a support group yesterday and it was so powerful.",
]
COMMON = range(1996, 2400)  # WordPiece ids of frequent whole words ("the", "of", "and", …)


def small_vocabulary() -> list[int]:
    tok = static_embed._tokenizer()
    ids = {i for e in tok.encode_batch(TEXTS + ["cat", "kitten"], add_special_tokens=False) for i in e.ids}
    return sorted(ids | set(COMMON))


@pytest.fixture(scope="module")
def table(tmp_path_factory) -> Path:
    return build_table(tmp_path_factory.mktemp("static") / "table.npy", small_vocabulary())


def test_teacher_vectors_are_minilm_before_its_normalisation(fp32_embedder: MiniLMEmbedder) -> None:
    # A one-token text through the product's embedder is [CLS] token [SEP] mean-pooled and
    # normalised: the distillation's raw vector for that token must point the same way.
    tok = static_embed._tokenizer()
    ids = [tok.token_to_id(w) for w in ("cat", "backup", "yesterday")]
    raw = static_embed.teacher_vectors(ids)
    assert not np.allclose(np.linalg.norm(raw, axis=1), 1.0, atol=1e-3), "the mean, not the normalised vector"
    got = raw / np.linalg.norm(raw, axis=1, keepdims=True)
    want = fp32_embedder.embed(["cat", "backup", "yesterday"])
    assert float((got * want).sum(axis=1).min()) > 1 - 1e-5


def test_pca_and_sif_weights() -> None:
    rng = np.random.default_rng(0)
    x = rng.standard_normal((300, 8)) @ np.diag([5, 4, 3, 2, 1, 0.5, 0.2, 0.1])
    scores = static_embed.pca(x, 3)
    assert scores.shape == (300, 3)
    assert np.allclose(scores.mean(axis=0), 0, atol=1e-9)
    var = scores.var(axis=0)
    assert var[0] > var[1] > var[2]  # ordered by explained variance
    assert (scores[np.abs(scores).argmax(axis=0), range(3)] > 0).all()  # deterministic signs
    w = static_embed.sif_weights(1000)
    assert w.shape == (1000,) and np.all(np.diff(w) > 0) and 0 < w[0] < w[-1] < 1  # frequent tokens weigh less


def test_vectors_are_the_normalised_sum_of_token_rows(table: Path) -> None:
    e = StaticEmbedder(table_file=table)
    got = e.embed(TEXTS + ["", "   "])
    assert got.shape == (len(TEXTS) + 2, STATIC_DIM) and got.dtype == np.float32
    assert np.allclose(np.linalg.norm(got[:-2], axis=1), 1.0, atol=1e-5)
    assert not got[-2:].any(), "a text with no tokens gets the zero vector"
    rows = np.load(table)
    tok = static_embed._tokenizer()
    ids = tok.encode(TEXTS[3], add_special_tokens=False).ids
    want = rows[ids].sum(axis=0)
    assert np.allclose(got[3], want / np.linalg.norm(want), atol=1e-6)
    # Batching and order change nothing.
    assert np.abs(StaticEmbedder(batch_size=2, table_file=table).embed(TEXTS[::-1])[::-1] - got[:-2]).max() < 1e-6
    assert (e.calls, e.texts) == (1, len(TEXTS) + 2) and e.embed([]).shape == (0, STATIC_DIM)


def test_distilled_vectors_keep_meaning(table: Path) -> None:
    v = StaticEmbedder(table_file=table).embed(TEXTS[:3])
    assert float(v[0] @ v[1]) > float(v[0] @ v[2]) + 0.1  # cat/mat ~ kitten/rug, not tax
    assert float(v[0] @ v[1]) > float(v[1] @ v[2]) + 0.1


def test_missing_and_damaged_tables_are_distilled_again(tmp_path, monkeypatch, capsys, table: Path) -> None:
    monkeypatch.setenv("MEMVAULT_CACHE_DIR", str(tmp_path))
    # The default distils the whole vocabulary; a small one keeps the test fast, same code path.
    monkeypatch.setattr(static_embed, "distill_ids", lambda *_: small_vocabulary())
    path = static_path()
    assert str(path).startswith(str(tmp_path)) and not path.exists()
    want = StaticEmbedder(table_file=table).embed_one(TEXTS[0])
    assert np.allclose(StaticEmbedder().embed_one(TEXTS[0]), want, atol=1e-6)
    assert "is missing; distilling it" in capsys.readouterr().err
    path.write_bytes(path.read_bytes()[:1000])  # cut short
    assert np.allclose(StaticEmbedder().embed_one(TEXTS[0]), want, atol=1e-6)
    assert "bytes, not the" in capsys.readouterr().err
    assert np.allclose(StaticEmbedder().embed_one(TEXTS[0]), want, atol=1e-6)
    assert capsys.readouterr().err == "", "a sound table is used as it is"


def test_settings_choose_the_embedder(tmp_path) -> None:
    from memvault.errors import ConfigError
    from memvault.config.settings import load_settings

    assert type(embedder_for(load_settings(tmp_path))) is MiniLMEmbedder
    chosen = embedder_for(load_settings(tmp_path, embeddings={"model": STATIC_NAME, "batch_size": 8}))
    assert isinstance(chosen, StaticEmbedder) and (chosen.name, chosen.dim, chosen.batch_size) == (STATIC_NAME, 256, 8)
    # A CLI recall or a hook embeds its query with the home's model too.
    from memvault.embeddings.select import query_embedder

    assert isinstance(query_embedder(load_settings(tmp_path, embeddings={"model": STATIC_NAME})), StaticEmbedder)
    assert type(query_embedder(load_settings(tmp_path))) is MiniLMEmbedder
    with pytest.raises(ConfigError):
        load_settings(tmp_path, embeddings={"model": "all-MiniLM-L12-v2"})


def test_index_refuses_the_other_model_until_reindex(demo_copy: Path, embedder: MiniLMEmbedder, table: Path) -> None:
    from memvault.errors import IndexMismatchError
    from memvault.ops.memory import MemoryService
    from memvault.ops.reindex import rebuild_index
    from memvault.config.settings import load_settings
    from stores.nodes import NodeIndex

    query = "when does the postgres backup run and how long is it kept"
    minilm = load_settings(demo_copy)
    static = load_settings(demo_copy, embeddings={"model": STATIC_NAME})
    small = StaticEmbedder(table_file=table)
    assert MemoryService(minilm, embedder).recall(query)["hits"]
    # Until reindex, the static settings are answered from the MiniLM index with its own
    # embedder (a bundled one): never a static vector against MiniLM's.
    waiting = MemoryService(static, small)
    assert waiting.recall(query)["hits"] and waiting.embedder.name == "all-MiniLM-L6-v2-int8" and small.texts == 0
    assert "memvault reindex" in (waiting.notice or "")
    with pytest.raises(IndexMismatchError, match="holds vectors of `all-MiniLM-L6-v2-int8`, not `all-MiniLM-L6-v2-static`.*reindex"):
        NodeIndex.open_existing(static)

    report = rebuild_index(static, small)
    assert report["model"] == STATIC_NAME and small.texts >= report["nodes"] > 0
    nodes = NodeIndex.open_existing(static)
    assert (nodes.stored_model(), nodes.dim) == (STATIC_NAME, STATIC_DIM)
    assert MemoryService(static, small).recall(query)["hits"]
    # And back: the MiniLM settings now meet static vectors, refused the same way.
    with pytest.raises(IndexMismatchError, match="reindex"):
        NodeIndex.open_existing(minilm)
