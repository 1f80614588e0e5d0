"""bench/static_words.py: which words a source gives, and that its share matrix picks a text's
rows as the embedder does."""

from pathlib import Path

import numpy as np

from bench.static_word_rows import WordStaticEmbedder, words_path
from bench.static_words import choose_words, share_matrix
from memvault.embeddings import static as static_embed


def test_choose_words_keeps_spelled_words_of_several_pieces_in_frequency_order() -> None:
    tok = static_embed._tokenizer()
    ranked = [("the", 50.0), ("haha", 9.0), ("cat", 5.0), ("00s", 4.0), ("\u2603\u2603", 3.0), ("snorkel", 2.0),
              ("postgres", 1.0)]
    chosen = choose_words(ranked, tok, None, 0.0)
    # one-piece words, words with digits and words the tokenizer cannot spell ([UNK]) are left out
    assert [w for w, _, _ in chosen] == ["haha", "snorkel", "postgres"]
    assert [r for _, r, _ in chosen] == [1, 5, 6]  # rank among all the source's words
    assert np.isclose(chosen[0][2], 9.0 / 74.0)
    assert [w for w, _, _ in choose_words(ranked, tok, 2, 0.0)] == ["haha", "snorkel"]
    assert [w for w, _, _ in choose_words(ranked, tok, None, 2.0)] == ["haha", "snorkel"]
    assert choose_words(ranked, tok, 0, 0.0) == []


def test_share_matrix_gives_the_direction_of_the_embedders_vector(tmp_path: Path) -> None:
    tok = static_embed._tokenizer()
    words = ["snorkel", "haha"]
    table = np.random.default_rng(0).normal(size=(tok.get_vocab_size() + len(words), 6)).astype(np.float32)
    path = tmp_path / "t.npy"
    np.save(path, table)
    words_path(path).write_text("\n".join(words) + "\n", encoding="utf-8")
    texts = ["haha we went snorkeling with a snorkel", "snorkel snorkel", ""]
    a = share_matrix(texts, tok, words, len(table))
    assert np.allclose(a.sum(axis=1).A1, [1, 1, 0])
    assert a[1, tok.get_vocab_size()] == 1.0  # both words are the one word row
    e = WordStaticEmbedder(table_file=path)
    e.dim = 6
    means = a @ table
    want = means[:2] / np.linalg.norm(means[:2], axis=1, keepdims=True)
    assert np.allclose(e.embed(texts)[:2], want, atol=1e-5)
