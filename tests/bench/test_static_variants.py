"""bench/static_variants.py: the corpus shapes, the token-share matrix and the ridge solver."""

import json
from pathlib import Path

import numpy as np

from bench.static_variants import corpus_texts, ridge_rows, token_matrix
from memvault.embeddings import static as static_embed


def _chitchat(path: Path) -> Path:
    """A chitchat-schema file: conversations of messages, each a list of one sender's utterances."""
    turns = [[{"text": f"turn {i} part {j}"} for j in range(2)] for i in range(7)]
    data = {f"c{n}": {"messages": turns} for n in range(3)} | {"short": {"messages": turns[:2]}}
    path.write_text(json.dumps(data), encoding="utf-8")
    return path


def test_corpus_texts_are_node_windows_then_single_turns(tmp_path: Path) -> None:
    path = _chitchat(tmp_path / "dataset.json")
    texts = corpus_texts(path, 100, "every-third")
    windows = [t for t in texts if t.startswith("chat · ")]
    # turns 1 and 4 of each of three conversations (every third), the two-turn one skipped
    assert len(windows) == 6 and len(texts) == 6 + 3 * 4
    header, before, turn, after = windows[0].split("\n")
    n = int(turn.split()[1])
    assert (before, turn, after) == tuple(f"turn {i} part 0 turn {i} part 1" for i in (n - 1, n, n + 1))
    assert corpus_texts(path, 100, "every-third") == texts  # seeded
    one = corpus_texts(path, 2, "one-per-conversation")
    assert len(one) == 2 + 1 and one[0].startswith("chat · ") and not one[2].startswith("chat · ")


def test_token_matrix_gives_the_mean_of_a_texts_rows() -> None:
    tok = static_embed._tokenizer()
    vocab = tok.get_vocab_size()
    table = np.random.default_rng(0).normal(size=(vocab, 4))
    texts = ["the dog barked twice", "dog dog"]
    a = token_matrix(texts, vocab)
    for i, text in enumerate(texts):
        ids = tok.encode(text, add_special_tokens=False).ids
        assert np.allclose((a @ table)[i], table[ids].mean(axis=0))


def test_ridge_rows_solves_the_regularised_least_squares() -> None:
    import scipy.sparse as sp

    rng = np.random.default_rng(1)
    a = sp.random(40, 12, density=0.3, random_state=2, format="csr")
    y, start = rng.normal(size=(40, 3)), rng.normal(size=(12, 3))
    dense = a.toarray()
    expected = np.linalg.solve(dense.T @ dense + 0.1 * np.eye(12), dense.T @ y + 0.1 * start)
    assert np.allclose(ridge_rows(a, y, start, 0.1, 200), expected, atol=1e-6)
