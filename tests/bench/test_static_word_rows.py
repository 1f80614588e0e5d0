"""bench/static_word_rows.py, the static embedder's word rows (bench tables only): a listed word of several pieces gets its own row, any other
word keeps its pieces, and a text's vector is the normalised sum of the rows so picked."""

from pathlib import Path

import numpy as np
import pytest

from bench.static_word_rows import WordStaticEmbedder, teacher_sequences, words_path
from memvault.embeddings import static as static_embed
from memvault.embeddings.minilm import MiniLMEmbedder
from memvault.embeddings.static import StaticEmbedder

WORDS = ["snorkel", "postgres", "haha"]  # s ##nor ##kel / post ##gre ##s / ha ##ha
DIM = 8


def pieces(word: str) -> list[int]:
    ids: list[int] = static_embed._tokenizer().encode(word, add_special_tokens=False).ids
    return ids


@pytest.fixture()
def table(tmp_path: Path) -> Path:
    """A hand-made table: random directions, each row scaled by a SIF weight of its own."""
    vocab = static_embed._tokenizer().get_vocab_size()
    rng = np.random.default_rng(0)
    rows = rng.standard_normal((vocab + len(WORDS), DIM))
    weights = rng.uniform(0.1, 1.0, len(rows))
    path = tmp_path / "t.npy"
    np.save(path, (rows * weights[:, None]).astype(np.float32))
    words_path(path).write_text("\n".join(WORDS) + "\n", encoding="utf-8")
    np.save(tmp_path / "parts.npy", np.hstack([rows, weights[:, None]]))
    return path


def embed(table: Path, texts: list[str]) -> np.ndarray:
    e = WordStaticEmbedder(table_file=table)
    e.dim = DIM
    return e.embed(texts)


def unit(v: np.ndarray) -> np.ndarray:
    return np.asarray(v / np.linalg.norm(v))


def test_the_chosen_words_have_several_pieces() -> None:
    assert all(len(pieces(w)) >= 2 for w in WORDS)
    # Longer words that begin with a listed word's pieces: they must not take its row.
    assert pieces("snorkels")[:3] == pieces("snorkel") == pieces("snorkeling")[:3]


def test_a_listed_word_hits_its_own_row(table: Path) -> None:
    rows = np.load(table)
    vocab = static_embed._tokenizer().get_vocab_size()
    got = embed(table, ["Snorkel", "POSTGRES!", "haha"])
    assert np.allclose(got[0], unit(rows[vocab + 0]), atol=1e-6)
    # Punctuation is a word of its own (BERT's pre-tokenizer), so "!" adds its token row.
    assert np.allclose(got[1], unit(rows[vocab + 1] + rows[pieces("!")[0]]), atol=1e-6)
    assert np.allclose(got[2], unit(rows[vocab + 2]), atol=1e-6)


def test_an_unlisted_word_falls_back_to_its_wordpieces(table: Path) -> None:
    rows = np.load(table)
    for word in ("snorkeling", "snorkels", "unbelievably"):  # the first two begin with a listed word's pieces
        want = unit(rows[pieces(word)].sum(axis=0))
        assert np.allclose(embed(table, [word])[0], want, atol=1e-6), word


def test_a_text_is_the_sif_weighted_mean_of_its_rows_by_hand(table: Path) -> None:
    parts = np.load(table.parent / "parts.npy")
    direction, weight = parts[:, :-1], parts[:, -1]
    vocab = static_embed._tokenizer().get_vocab_size()
    tok = static_embed._tokenizer()
    text = "we went snorkeling, snorkel in hand \u2603 haha"  # ☃ is [UNK]: dropped
    assert tok.token_to_id("[UNK]") in tok.encode(text, add_special_tokens=False).ids
    picked = (pieces("we") + pieces("went") + pieces("snorkeling") + pieces(",") + [vocab + 0]
              + pieces("in") + pieces("hand") + [vocab + 2])
    mean = sum(weight[r] * direction[r] for r in picked) / len(picked)
    assert np.allclose(embed(table, [text])[0], unit(mean), atol=1e-5)
    # A batch of texts, some empty, some without any listed word, gives each its own vector.
    got = embed(table, ["", text, "we went", "haha haha"])
    assert not got[0].any()
    assert np.allclose(got[1], unit(mean), atol=1e-5)
    assert np.allclose(got[3], unit(direction[vocab + 2]), atol=1e-6)


def test_a_word_list_that_does_not_fit_the_table_is_refused(table: Path) -> None:
    words_path(table).write_text("\n".join(WORDS[:2]) + "\n", encoding="utf-8")
    with pytest.raises(ValueError, match="build the table and its word list again"):
        embed(table, ["haha"])


def test_a_word_row_is_minilm_on_the_word(fp32_embedder: MiniLMEmbedder) -> None:
    # The teacher of a word is [CLS] its pieces [SEP] mean-pooled, like the product's vector of
    # the word as a text; padding next to longer words changes nothing.
    seqs = [pieces("snorkel"), pieces("haha"), pieces("unbelievably")]
    together = teacher_sequences(seqs)
    alone = np.vstack([teacher_sequences([s]) for s in seqs])
    assert np.abs(together - alone).max() < 1e-4
    want = fp32_embedder.embed(["snorkel", "haha", "unbelievably"])
    got = together / np.linalg.norm(together, axis=1, keepdims=True)
    assert float((got * want).sum(axis=1).min()) > 1 - 1e-5


def test_the_product_refuses_a_table_with_word_rows(table: Path) -> None:
    # The product's table has one row per token; word rows are the bench's.
    e = StaticEmbedder(table_file=table)
    e.dim = DIM
    with pytest.raises(ValueError, match="build the table again"):
        e.embed(["haha"])


def test_the_product_teacher_is_the_word_teacher_on_single_tokens() -> None:
    ids = list(range(1000, 1600))  # two batches of 512
    assert np.array_equal(static_embed.teacher_vectors(ids), teacher_sequences([[i] for i in ids]))
