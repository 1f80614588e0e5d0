"""Static tables with a vocabulary of whole words: a word of the list gets its own row.

`memvault.embeddings.static` gives every WordPiece token a row and a text the normalised sum of its
tokens' rows. Here a word of two or more pieces that is in a word list gets one row of its own
instead of its pieces' rows — its teacher vector is MiniLM's mean-pooled output of
``[CLS] pieces-of-the-word [SEP]``, made the way the token rows are — and any other word keeps
its pieces (`bench.static_word_rows.text_rows`). Words are what BERT's normaliser and pre-tokenizer make
of a text (lowercased, accents stripped, split on spaces and punctuation).

A variant is named ``SOURCE-SIF[-xn][-lin]``:

- ``SOURCE``: where the words come from, never LoCoMo. ``cc``: the Chit-Chat Challenge
  conversations (``--chitchat``), every word of two or more pieces seen at least twice;
  ``wf20k``, ``wf50k``…: the first N such words of a word-frequency list (``--word-list``, lines
  ``word<TAB>frequency`` in BERT's normal form; made from the ``wordfreq`` package's English
  list, see bench/README.md), words with digits left out (that list writes every digit as 0);
- ``SIF``: the word rows' SIF probability, ``rank`` (Zipf from the word's rank among all the
  source's words, one-piece ones included, as the token rows' from their vocabulary rank) or
  ``freq`` (the source's own frequency). Token rows keep their vocabulary-rank weights;
- ``-xn``: a word row multiplied by its number of pieces (the weight its pieces had together);
- ``-lin``: the table mapped into MiniLM's space by the ridge regression (with intercept) of
  MiniLM's vectors of the corpus texts (``--corpus-vectors``, as `bench/static_variants.py`
  keeps them, for ``corpus_texts(--chitchat, --windows, --scheme)``) on their static means.

Rows of tokens and words go through one PCA (all 384 dimensions: centred and rotated). Each
table is written as ``t_NAME.npy`` with its word list ``t_NAME.words.txt`` beside it, which
`WordStaticEmbedder(table_file=…)` (bench/static_word_rows.py) reads, so `bench/recall_quality.py --static-table` takes it:

    .venv/bin/python bench/static_words.py --chitchat DIR/chitchat_dataset/dataset.json --out /tmp/static-words \\
        --word-list /tmp/static-words/wordfreq_en.tsv [--teacher /tmp/sv/teacher.npy] \\
        [--corpus-vectors /tmp/sv/corpus-every-third-40000-minilm.npy] --variants cc-rank,wf50k-rank,wf50k-rank-lin
"""

import argparse
import collections
import json
import re
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench.static_variants import corpus_texts, held_out, linear_map, report, unit  # noqa: E402
from bench.static_word_rows import continuation_mask, teacher_sequences, text_rows, word_index, words_path  # noqa: E402
from memvault.embeddings import static as static_embed  # noqa: E402

_NAME = re.compile(r"^(cc|wf(\d+)k)-(rank|freq)((?:-xn)?)((?:-lin)?)$")


def chitchat_words(path: Path, tok: Any) -> list[tuple[str, float]]:
    """Every word of the chitchat utterances with its count, most frequent first."""
    data = json.loads(path.read_text(encoding="utf-8"))
    counts: collections.Counter[str] = collections.Counter()
    for conv in data.values():
        for message in conv["messages"]:
            for u in message:
                counts.update(w for w, _ in tok.pre_tokenizer.pre_tokenize_str(tok.normalizer.normalize_str(u["text"])))
    return [(w, float(n)) for w, n in counts.most_common()]


def listed_words(path: Path) -> list[tuple[str, float]]:
    """``word<TAB>frequency`` lines, most frequent first."""
    pairs = [(w, float(f)) for w, f in (line.split("\t") for line in path.read_text(encoding="utf-8").splitlines())]
    return sorted(pairs, key=lambda p: -p[1])


def choose_words(ranked: list[tuple[str, float]], tok: Any, limit: int | None, min_count: float) -> list[tuple[str, int, float]]:
    """The words of two or more pieces (no ``[UNK]``, no digit) in frequency order, with their
    rank among all ``ranked`` words and their frequency as a share of all of them."""
    unk, total = tok.token_to_id("[UNK]"), sum(f for _, f in ranked)
    out: list[tuple[str, int, float]] = []
    if limit == 0:
        return out
    for rank, (e, (word, f)) in enumerate(zip(tok.encode_batch([w for w, _ in ranked], add_special_tokens=False), ranked)):
        if f >= min_count and len(e.ids) >= 2 and unk not in e.ids and not any(c.isdigit() for c in word):
            out.append((word, rank, f / total))
            if limit is not None and len(out) == limit:
                break
    return out


def share_matrix(texts: list[str], tok: Any, words: list[str], rows: int) -> Any:
    """Sparse (texts × rows) matrix of each text's row shares, rows as the embedder picks them."""
    import scipy.sparse as sp

    index = word_index(tok, words, tok.get_vocab_size())
    continues, unk = continuation_mask(tok), tok.token_to_id("[UNK]")
    r, c, v = [], [], []
    for i, e in enumerate(tok.encode_batch(texts, add_special_tokens=False)):
        ids = np.asarray(e.ids, dtype=np.int64)
        picked = text_rows(ids[ids != unk], continues, index)
        r += [i] * len(picked)
        c += picked.tolist()
        v += [1.0 / max(len(picked), 1)] * len(picked)
    a = sp.csr_matrix((v, (r, c)), shape=(len(texts), rows))
    a.sum_duplicates()
    return a


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--chitchat", required=True, type=Path, help="dataset.json of the chitchat-dataset package")
    ap.add_argument("--out", required=True, type=Path, help="folder for the tables, word lists and kept teacher vectors")
    ap.add_argument("--word-list", type=Path, default=None, help="word<TAB>frequency lines (for the wfNk sources)")
    ap.add_argument("--teacher", type=Path, default=None,
                    help="kept token teacher vectors (bench/static_variants.py's teacher.npy)")
    ap.add_argument("--corpus-vectors", type=Path, default=None, help="MiniLM vectors of the corpus texts (for -lin)")
    ap.add_argument("--windows", type=int, default=40_000)
    ap.add_argument("--scheme", choices=("every-third", "one-per-conversation"), default="every-third")
    ap.add_argument("--variants", default="cc-rank,wf50k-rank")
    args = ap.parse_args(argv)
    args.out.mkdir(parents=True, exist_ok=True)
    tok = static_embed._tokenizer()
    vocab = tok.get_vocab_size()
    ids = sorted(static_embed.default_ids(tok))
    teacher_file = args.teacher or args.out / "teacher.npy"
    if not teacher_file.is_file():
        np.save(teacher_file, static_embed.teacher_vectors(ids))
    token_teacher = np.load(teacher_file)
    token_sif = static_embed.sif_weights(len(ids))
    texts: list[str] = corpus_texts(args.chitchat, 6000, "one-per-conversation")  # without --corpus-vectors
    target: np.ndarray | None = None
    if args.corpus_vectors is not None:
        texts = corpus_texts(args.chitchat, args.windows, args.scheme)
        target = np.load(args.corpus_vectors).astype(np.float64)
        if len(target) != len(texts):
            ap.error(f"{args.corpus_vectors} holds {len(target)} vectors for {len(texts)} corpus texts")
    elif any(v.endswith("-lin") for v in args.variants.split(",")):
        ap.error("-lin variants need --corpus-vectors")
    sources: dict[str, list[tuple[str, float]]] = {}

    for name in [v.strip() for v in args.variants.split(",") if v.strip()]:
        m = _NAME.match(name)
        if m is None:
            ap.error(f"{name}: not SOURCE-SIF[-xn][-lin]")
        source, thousands, sif, xn, lin = m.group(1), m.group(2), m.group(3), m.group(4), m.group(5)
        if source == "cc":
            ranked = sources.setdefault("cc", chitchat_words(args.chitchat, tok))
            chosen = choose_words(ranked, tok, None, 2.0)
        else:
            if args.word_list is None:
                ap.error(f"{name} needs --word-list")
            ranked = sources.setdefault("wf", listed_words(args.word_list))
            chosen = choose_words(ranked, tok, int(thousands) * 1000, 0.0)
        words = [w for w, _, _ in chosen]
        key = source[:2]  # cc or wf
        kept, kept_words = args.out / f"teacher-{key}.npy", args.out / f"teacher-{key}.words.txt"
        known = kept_words.read_text(encoding="utf-8").split("\n")[:-1] if kept.is_file() else []
        if known[:len(words)] == words:  # the first N words of a source are those of any longer list of it
            word_teacher = np.load(kept)[:len(words)]
        else:
            started = time.process_time()
            pieces = [e.ids for e in tok.encode_batch(words, add_special_tokens=False)]
            word_teacher = teacher_sequences(pieces)
            print(f"{source}: teacher vectors of {len(words)} words ({np.mean([len(p) for p in pieces]):.2f} pieces "
                  f"on average): {time.process_time() - started:.1f} CPU-s", file=sys.stderr)
            np.save(kept, word_teacher)
            kept_words.write_text("\n".join(words) + "\n", encoding="utf-8")
        if sif == "rank":
            inv = 1.0 / np.arange(2, len(ranked) + 2)
            p = inv[[r for _, r, _ in chosen]] / inv.sum()
        else:
            p = np.array([f for _, _, f in chosen])
        word_sif = static_embed.SIF_COEFFICIENT / (static_embed.SIF_COEFFICIENT + p)
        if xn:
            word_sif = word_sif * np.array([len(e.ids) for e in tok.encode_batch(words, add_special_tokens=False)])
        joint = static_embed.pca(np.vstack([token_teacher, word_teacher]), 384)
        table = np.zeros((vocab + len(words), 384))
        table[ids] = joint[:len(ids)] * token_sif[:, None]
        table[vocab:] = joint[len(ids):] * word_sif[:, None]
        a = share_matrix(texts, tok, words, len(table))
        hold, train = held_out(len(texts))
        if lin:
            assert target is not None
            matrix, intercept = linear_map(a[train] @ table, target[train])
            live = np.abs(table).sum(axis=1) > 0
            table[live] = table[live] @ matrix + intercept
        out = args.out / f"t_{name}.npy"
        np.save(out, table.astype(np.float32))
        words_path(out).write_text("\n".join(words) + "\n", encoding="utf-8")
        hits = a[:, vocab:].getnnz() / max(a.getnnz(), 1)
        line = f"{name}: {len(words)} words, {hits:.1%} of corpus rows are word rows"
        if target is not None and lin:
            line += f"; held-out cosine to MiniLM {np.mean((unit(a[hold] @ table) * target[hold]).sum(1)):.4f}"
        if target is not None:
            line += "; " + report(name, a[hold] @ table, target[hold] if lin else None, target[hold])
        print(line)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
