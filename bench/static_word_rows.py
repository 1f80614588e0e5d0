"""Word rows for the static embedder: the bench's tables (bench/static_words.py) that also hold
rows for whole words, and the embedder that reads them.

The product's table (``memvault.embeddings.static``) has one row per WordPiece token and no
word list. A table written here may hold more rows, one per word listed beside it
(:func:`words_path`): a word of two or more pieces found in the list then takes its own row
instead of its pieces' (:func:`text_rows`). ``WordStaticEmbedder`` is the product's embedder
reading such a table; without a word list beside it, it is the product's embedder itself.
"""

import tempfile
from pathlib import Path
from typing import Any

import numpy as np

from memvault.embeddings.static import _MEAN, _TEACHER_DIM, StaticEmbedder, _teacher, _tokenizer


def words_path(table: Path) -> Path:
    """The word list of a table with word rows: ``t.npy`` → ``t.words.txt``, one word a line,
    the word of line ``k`` owning row ``vocabulary size + k``."""
    return table.with_suffix(".words.txt")


def word_index(tok: Any, words: list[str], first_row: int) -> dict[bytes, int]:
    """Row of each word, keyed by the bytes of its WordPiece ids (int64): a word in the text is
    found from its tokens, so the text is tokenised once, by the tokenizer's own code. Words of
    one piece are left out (their token's row is already theirs), and so are words the
    tokenizer cannot spell."""
    unk = tok.token_to_id("[UNK]")
    index: dict[bytes, int] = {}
    for k, e in enumerate(tok.encode_batch(words, add_special_tokens=False)):
        if len(e.ids) >= 2 and unk not in e.ids:
            index.setdefault(np.asarray(e.ids, dtype=np.int64).tobytes(), first_row + k)
    return index


def continuation_mask(tok: Any) -> np.ndarray:
    """``mask[id]``: token ``id`` continues a word (``##…``). BERT's WordPiece starts every
    word with a piece that is not one, so a word is a starting token and the ``##`` ones after it."""
    mask = np.zeros(tok.get_vocab_size(), dtype=bool)
    for token, i in tok.get_vocab().items():
        mask[i] = token.startswith("##")
    return mask


def text_rows(ids: np.ndarray, continues: np.ndarray, index: dict[bytes, int]) -> np.ndarray:
    """The table rows of one tokenised text (``[UNK]`` already dropped): each word of two or
    more pieces found in ``index`` becomes its one word row, every other word keeps its pieces."""
    if not index or len(ids) < 2:
        return ids
    starts = np.flatnonzero(~continues[ids])
    ends = np.append(starts[1:], len(ids))
    multi = np.flatnonzero(ends - starts >= 2)
    if not len(multi):
        return ids
    keep = np.ones(len(ids), dtype=bool)
    out = ids.copy()
    for w in multi:
        a, b = starts[w], ends[w]
        row = index.get(ids[a:b].tobytes())
        if row is not None:
            out[a] = row
            keep[a + 1:b] = False
    return out[keep]


def teacher_sequences(sequences: list[list[int]], batch_size: int = 512) -> np.ndarray:
    """MiniLM's mean-pooled output (not normalised) for ``[CLS] sequence [SEP]`` of each of
    ``sequences`` (token ids: a word's pieces), batched by length so that padding stays rare
    (the pooling ignores padded positions anyway)."""
    tok = _tokenizer()
    cls_id, sep_id = tok.token_to_id("[CLS]"), tok.token_to_id("[SEP]")
    out = np.empty((len(sequences), _TEACHER_DIM), dtype=np.float32)
    order = sorted(range(len(sequences)), key=lambda k: len(sequences[k]))
    with tempfile.TemporaryDirectory(prefix="memvault-distill-") as tmp:
        session = _teacher(Path(tmp))
        for start in range(0, len(order), batch_size):
            part = order[start:start + batch_size]
            width = 2 + max(len(sequences[k]) for k in part)
            batch = np.zeros((len(part), width), dtype=np.int64)
            mask = np.zeros_like(batch)
            for row, k in enumerate(part):
                seq = [cls_id, *sequences[k], sep_id]
                batch[row, :len(seq)], mask[row, :len(seq)] = seq, 1
            out[part] = session.run([_MEAN], {"input_ids": batch, "attention_mask": mask})[0]
    return np.nan_to_num(out)


class WordStaticEmbedder(StaticEmbedder):
    """The static embedder reading a table with word rows (its rows past the vocabulary are the
    words listed beside it, :func:`words_path`)."""

    def __init__(self, batch_size: int = 64, table_file: Path | None = None) -> None:
        super().__init__(batch_size, table_file)
        self._words: dict[bytes, int] = {}
        self._continues = np.zeros(0, dtype=bool)

    def _check_rows(self, path: Path, rows: int, tok: Any) -> None:
        listed = words_path(path)
        words = listed.read_text(encoding="utf-8").split("\n")[:-1] if listed.is_file() else []
        if rows != tok.get_vocab_size() + len(words):
            raise ValueError(f"{path} has {rows} rows, not the {tok.get_vocab_size()} tokens and "
                             f"{len(words)} words of {listed.name}: build the table and its word list again")
        self._words = word_index(tok, words, tok.get_vocab_size())
        self._continues = continuation_mask(tok)

    def _rows(self, ids: np.ndarray) -> np.ndarray:
        return text_rows(ids, self._continues, self._words)
