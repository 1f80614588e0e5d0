"""Variants of the static embedder's table, each written as a .npy file for the recall bench.

Every variant starts from the same teacher vectors as `memvault.embeddings.static` (MiniLM's
mean-pooled output for ``[CLS] token [SEP]`` of every vocabulary token) and changes one step
of model2vec's recipe:

- ``base``: the product's table (PCA to 256 dimensions, SIF weights from the vocabulary rank);
- ``384``: every dimension kept (PCA without reduction: centred and rotated only);
- ``ccfreq`` / ``ccfreq384``: SIF probabilities from token counts in the corpus below
  (add-one smoothed) instead of the vocabulary rank;
- ``<v>-c``: the table minus the mean text vector of the corpus (a text's vector is the mean
  of its token rows, so subtracting one vector from every row centres every text);
- ``<v>-lin``: the table mapped into MiniLM's space by the ridge regression (with intercept)
  of MiniLM's sentence vectors of the corpus texts on their static means (384 columns);
- ``<v>-tl``: tokenlearn's idea (model2vec's second step): every row fitted so that the mean
  of a corpus text's rows is MiniLM's vector of that text, ridge towards the ``-lin`` table,
  solved by conjugate gradients (the ridge weight chosen by cosine on a tenth of the corpus
  held out, never by recall figures).

The corpus is the Chit-Chat Challenge dataset (BYU PCC lab, MIT licence: the
``chitchat-dataset`` package's ``dataset.json``, given with ``--chitchat``): 7,168 open-domain
conversations between people, nothing of LoCoMo. Its texts are built in the shape of indexed
message nodes (a header line, the previous turn cut at 200 characters, the turn, the next turn
cut) plus single turns (the shape of a query). The MiniLM vectors of the corpus are the costly
part (~50 texts per CPU-second) and are kept in ``--out``.

    .venv/bin/python bench/static_variants.py --chitchat DIR/chitchat_dataset/dataset.json --out /tmp/sv
        [--windows 40000] [--scheme every-third|one-per-conversation] [--variants base,384,base-c,384-lin,384-tl]
    .venv/bin/python bench/recall_quality.py --data ../shared/eval/locomo/locomo_dev.json \\
        --embedder all-MiniLM-L6-v2-static --static-table /tmp/sv/t_384-lin.npy --sweep w_cos=0.35

Beyond the product's dependencies it needs scipy and torch (both in the test extra: torch for
the sparse products of the row fit). It prints, per variant, what it can say without any LoCoMo question: on held-out corpus texts,
the mean cosine to MiniLM's vector (``-lin``, ``-tl`` only) and, over random pairs of them,
the mean cosine and its correlation with MiniLM's cosine of the same pair.
"""

import argparse
import json
import random
import sys
import time
import warnings
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from memvault.embeddings import static as static_embed  # noqa: E402
from memvault.embeddings.minilm import MiniLMEmbedder  # noqa: E402


def corpus_texts(path: Path, windows: int, scheme: str) -> list[str]:
    """Node-shaped windows and single turns of the chitchat conversations (seeded, so the same
    file gives the same texts)."""
    data = json.loads(path.read_text(encoding="utf-8"))
    rng = random.Random(0)
    ids = sorted(data)
    rng.shuffle(ids)
    wins, singles = [], []
    for cid in ids:
        turns = [" ".join(u["text"] for u in m) for m in data[cid]["messages"]]
        if len(turns) < 3:
            continue
        starts = [rng.randrange(1, len(turns) - 1)] if scheme == "one-per-conversation" else range(1, len(turns) - 1, 3)
        for i in starts:
            wins.append("\n".join(["chat · 2018-05-02", turns[i - 1][:200], turns[i], turns[i + 1][:200]]))
        if scheme == "one-per-conversation":
            singles.append(turns[rng.randrange(len(turns))])
        else:
            singles.extend(turns[j] for j in rng.sample(range(len(turns)), min(4, len(turns))))
    if scheme != "one-per-conversation":
        rng.shuffle(wins)
        rng.shuffle(singles)
    return wins[:windows] + singles[:windows // 2]


def token_matrix(texts: list[str], vocab: int) -> Any:
    """Sparse (texts × vocabulary) matrix of each text's token shares: its rows' mean is ``A @ table``."""
    import scipy.sparse as sp

    tok = static_embed._tokenizer()
    unk = tok.token_to_id("[UNK]")
    rows, cols, vals = [], [], []
    for i, e in enumerate(tok.encode_batch(texts, add_special_tokens=False)):
        ids = [t for t in e.ids if t != unk]
        if not ids:
            continue
        rows += [i] * len(ids)
        cols += ids
        vals += [1.0 / len(ids)] * len(ids)  # a text of no known token (an emoji) stays a zero row
    a = sp.csr_matrix((vals, (rows, cols)), shape=(len(texts), vocab))
    a.sum_duplicates()
    return a


def unit(x: np.ndarray) -> np.ndarray:
    return np.asarray(x / np.maximum(np.linalg.norm(x, axis=1, keepdims=True), 1e-12))


def report(name: str, vecs: np.ndarray, teacher: np.ndarray | None, target: np.ndarray) -> str:
    """Held-out corpus figures of one variant (``vecs``: its text vectors)."""
    rng = np.random.default_rng(0)
    v = unit(vecs)
    a, b = rng.integers(0, len(v), 100_000), rng.integers(0, len(v), 100_000)
    keep = a != b
    cos, ref = (v[a] * v[b]).sum(1)[keep], (target[a] * target[b]).sum(1)[keep]
    to_teacher = f", cosine to MiniLM {np.mean((v * teacher).sum(1)):.3f}" if teacher is not None else ""
    return (f"{name:<14} random pairs: mean cosine {cos.mean():.3f} (MiniLM {ref.mean():.3f}), "
            f"correlation with MiniLM's {np.corrcoef(cos, ref)[0, 1]:.3f}{to_teacher}")


def held_out(n: int) -> tuple[np.ndarray, np.ndarray]:
    """The seeded split of the corpus texts: a tenth held out (fitting choices), the rest to fit on."""
    order = np.random.default_rng(1).permutation(n)
    return order[: n // 10], order[n // 10:]


def linear_map(means: np.ndarray, target: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Ridge regression with intercept of ``target`` (MiniLM's vectors) on ``means`` (the static
    means of the same texts), the ridge a thousandth of the Gram matrix's mean diagonal:
    ``(matrix, intercept)``, a row ``r`` mapped as ``r @ matrix + intercept``."""
    x = np.hstack([means, np.ones((len(means), 1))])
    gram = x.T @ x
    w = np.linalg.solve(gram + 1e-3 * np.trace(gram) / len(gram) * np.eye(len(gram)), x.T @ target)
    return w[:-1], w[-1]


def ridge_rows(a: Any, y: np.ndarray, start: np.ndarray, lam: float, iterations: int) -> np.ndarray:
    """argmin ‖A E − Y‖² + lam ‖E − start‖², every column at once (conjugate gradients, torch's
    sparse products on two threads, float64: float32 lost the residual)."""
    import torch

    torch.set_num_threads(2)
    warnings.filterwarnings("ignore", message="Sparse CSR tensor support is in beta")

    def csr(m: Any) -> Any:
        m = m.tocsr().astype(np.float64)
        return torch.sparse_csr_tensor(torch.from_numpy(m.indptr.astype(np.int64)),
                                       torch.from_numpy(m.indices.astype(np.int64)), torch.from_numpy(m.data), size=m.shape,
                                       check_invariants=True)

    ta, tat = csr(a), csr(a.T)

    def h(x: Any) -> Any:
        return tat @ (ta @ x) + lam * x

    rhs = torch.from_numpy(np.asarray(a.T @ y + lam * start, dtype=np.float64))
    x = torch.from_numpy(start.astype(np.float64))
    r = rhs - h(x)
    p, rs = r.clone(), (r * r).sum(0)
    for _ in range(iterations):
        hp = h(p)
        alpha = rs / torch.clamp((p * hp).sum(0), min=1e-30)
        x += p * alpha
        r -= hp * alpha
        rs_new = (r * r).sum(0)
        if float(rs_new.max().sqrt()) < 1e-5 * float((rhs * rhs).sum(0).max().sqrt()):
            break
        p, rs = r + p * (rs_new / torch.clamp(rs, min=1e-300)), rs_new
    return np.asarray(x.numpy(), dtype=np.float64)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--chitchat", required=True, type=Path, help="dataset.json of the chitchat-dataset package")
    ap.add_argument("--out", required=True, type=Path, help="folder for the tables (t_NAME.npy) and the kept vectors")
    ap.add_argument("--windows", type=int, default=40_000, help="node-shaped corpus texts (plus half as many single turns)")
    ap.add_argument("--scheme", choices=("every-third", "one-per-conversation"), default="every-third")
    ap.add_argument("--variants", default="base,384,ccfreq,base-c,384-c,ccfreq-c,384-lin,384-tl")
    ap.add_argument("--lambdas", default="0.01,0.001", help="ridge weights tried for -tl (chosen on held-out corpus texts)")
    ap.add_argument("--iterations", type=int, default=200)
    args = ap.parse_args(argv)
    args.out.mkdir(parents=True, exist_ok=True)
    tok = static_embed._tokenizer()
    vocab = tok.get_vocab_size()
    ids = sorted(static_embed.default_ids(tok))
    kept = args.out / "teacher.npy"
    if not kept.is_file():
        np.save(kept, static_embed.teacher_vectors(ids))
    teacher = np.load(kept)
    texts = corpus_texts(args.chitchat, args.windows, args.scheme)
    kept = args.out / f"corpus-{args.scheme}-{args.windows}-minilm.npy"
    if not kept.is_file():
        started = time.process_time()
        np.save(kept, np.concatenate([MiniLMEmbedder(threads=2).embed(texts[s:s + 512]) for s in range(0, len(texts), 512)]))
        print(f"MiniLM vectors of {len(texts)} corpus texts: {time.process_time() - started:.0f} CPU-s", file=sys.stderr)
    target = np.load(kept).astype(np.float64)
    a = token_matrix(texts, vocab)
    hold, train = held_out(len(texts))
    data = json.loads(args.chitchat.read_text(encoding="utf-8"))
    counts = np.zeros(vocab)
    for e in tok.encode_batch([u["text"] for c in data.values() for m in c["messages"] for u in m], add_special_tokens=False):
        np.add.at(counts, e.ids, 1)
    p = (counts[ids] + 1) / (counts[ids] + 1).sum()
    weights = {"rank": static_embed.sif_weights(len(ids)),
               "ccfreq": static_embed.SIF_COEFFICIENT / (static_embed.SIF_COEFFICIENT + p)}
    tables: dict[str, np.ndarray] = {}

    def table(name: str) -> np.ndarray:
        if name not in tables:
            head, _, step = name.partition("-")
            if not step:
                dims = 384 if head.endswith("384") else 256
                out = np.zeros((vocab, dims))
                out[ids] = static_embed.pca(teacher, dims) * weights["ccfreq" if head.startswith("ccfreq") else "rank"][:, None]
                tables[name] = out
            else:
                src = table(head)
                means = a[train] @ src
                out = np.zeros((vocab, 384 if step in ("lin", "tl") else src.shape[1]))
                if step == "c":
                    out[ids] = src[ids] - means.mean(axis=0)
                else:
                    matrix, intercept = linear_map(means, target[train])
                    out[ids] = src[ids] @ matrix + intercept
                    if step == "tl":
                        best: tuple[float, np.ndarray] | None = None
                        for lam in (float(v) for v in args.lambdas.split(",")):
                            fitted = ridge_rows(a[train], target[train], out, lam, args.iterations)
                            fitted[np.setdiff1d(np.arange(vocab), ids)] = 0
                            score = float(np.mean((unit(a[hold] @ fitted) * target[hold]).sum(1)))
                            print(f"{name}: ridge {lam:g}, held-out cosine to MiniLM {score:.3f}", file=sys.stderr)
                            if best is None or score > best[0]:
                                best = (score, fitted)
                        assert best is not None
                        out = best[1]
                tables[name] = out
        return tables[name]

    for name in [v.strip() for v in args.variants.split(",") if v.strip()]:
        t = table(name)
        np.save(args.out / f"t_{name}.npy", t.astype(np.float32))
        fitted = name.endswith(("-lin", "-tl"))
        print(report(name, a[hold] @ t, target[hold] if fitted else None, target[hold]))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
