"""Fit the learned boundary scorer of memvault/stages/chunk_segment.py on public sets with human gold.

    .venv/bin/python bench/segmentation_train.py --train tiage-pairs:train --train dialseg711:dev \
        --set tiage:dev --set dialseg711:dev --held tiage:test --held dialseg711:test --held ours \
        --held synthetic --cache CACHE --embed-cache EMB.pkl
    .venv/bin/python bench/segmentation_train.py --table people --train tiage:train --set tiage:dev \
        --set dialseg711:dev --held tiage:test --held dialseg711:test --cache CACHE --embed-cache EMB.pkl

Each conversation is grouped into exchanges and embedded exactly as
memvault.stages.chunk.plan_chunks does; memvault.stages.chunk_segment.features gives each gap
its features and names the table that scores it (`people` when no exchange has a reply, else
`exchanges`). ``--table`` fits one table on the gaps of the ``--train`` conversations it scores;
every other conversation keeps its shipped table. A gap is a positive example when a gold topic starts in the replies of the exchange
before it or at its user turn (cutting there is within bench/chunk_quality.py's one-message
tolerance). Logistic regression (L2, Newton's method; numpy only) is fitted on the ``--train``
sets; the threshold and the minimum chunk length are chosen on the ``--set`` sets (best mean F1
among the settings whose Pk and WindowDiff are no worse than not cutting at all, on every ``--set``);
the ``--held`` sets are only reported. The weights are printed as the Python table that
chunk_segment.py holds, folded back to raw feature units.
"""

import argparse
import itertools
import json
import re
import sys
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench.chunk_quality import cached_embedder, rows, score  # noqa: E402
from bench.segmentation_sets import load_set  # noqa: E402
from memvault.hygiene.noise import strip_noise  # noqa: E402
from memvault.stages import chunk_segment as cs  # noqa: E402
from memvault.stages.chunk import exchanges, render, turns  # noqa: E402
from memvault.stages.chunk_features import FEATURES, PEOPLE_FEATURES  # noqa: E402
from memvault.stages.text import EMBED_CHARS  # noqa: E402

# Per conversation: (conversation, first message index of each exchange, gap features, gap labels, table).
Prepared = list[tuple[dict[str, Any], list[int], np.ndarray, np.ndarray, str]]
NAMES = {"exchanges": FEATURES, "people": PEOPLE_FEATURES}
# What chunk_segment.py ships per table: weights, bias, threshold, minimum spacing.
SHIPPED = {"exchanges": (cs.WEIGHTS_ARRAY, cs.BIAS, cs.THRESHOLD, cs.MIN_EXCHANGES),
           "people": (cs.PEOPLE_ARRAY, cs.PEOPLE_BIAS, cs.PEOPLE_THRESHOLD, cs.PEOPLE_MIN_MESSAGES)}


def prepare(convs: list[dict[str, Any]], embedder: Any) -> Prepared:
    """Features and labels of every gap of ``convs``, embedded in one batch."""
    grouped = [exchanges(rows(c)) for c in convs]
    vectors = embedder.embed([render(g)[:EMBED_CHARS] for gs in grouped for g in gs])
    out, at = [], 0
    for conv, gs in zip(convs, grouped):
        n = len(gs)
        firsts = [int(g[0].native_id[1:]) for g in gs]
        table, x = cs.features(vectors[at:at + n], [turns(g) for g in gs])
        gold = conv["starts"]
        y = np.array([any(firsts[i] < s <= firsts[i + 1] for s in gold) for i in range(n - 1)], dtype=np.float64)
        out.append((conv, firsts, x, y, table))
        at += n
    return out


def fit(x: np.ndarray, y: np.ndarray, l2: float = 1.0, rounds: int = 30) -> tuple[np.ndarray, float]:
    """Logistic regression on standardized columns by Newton's method; weights in raw units and bias."""
    mean, std = x.mean(axis=0), x.std(axis=0) + 1e-9
    z = np.hstack([(x - mean) / std, np.ones((len(x), 1))])
    w = np.zeros(z.shape[1])
    penalty = np.full(z.shape[1], l2)
    penalty[-1] = 0.0  # the bias is not shrunk
    for _ in range(rounds):
        p = 1 / (1 + np.exp(-(z @ w)))
        grad = z.T @ (p - y) + penalty * w
        hess = (z * (p * (1 - p))[:, None]).T @ z + np.diag(penalty)
        step = np.linalg.solve(hess, grad)
        w -= step
        if np.abs(step).max() < 1e-8:
            break
    raw = w[:-1] / std
    return raw, float(w[-1] - (raw * mean).sum())


def evaluate(data: Prepared, weights: np.ndarray, bias: float, threshold: float, min_gap: int,
             table: str = "exchanges") -> dict[str, Any]:
    """bench/chunk_quality.py's scores of the cuts the scorer makes on ``data``: ``table``'s
    conversations with the given weights and cut rule, the others with their shipped table."""
    items = []
    for conv, firsts, x, _y, kind in data:
        w, b, t, g = (weights, bias, threshold, min_gap) if kind == table else SHIPPED[kind]
        probs = cs.probabilities(x, w, b) if len(x) else np.zeros(0)
        cuts = cs.pick(probs, t, g)
        items.append((conv["starts"], [firsts[c] for c in sorted(cuts)], len(conv["messages"])))
    return score(items)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--train", action="append", default=[], help="sets the weights are fitted on")
    parser.add_argument("--set", action="append", default=[], dest="sets", help="sets that choose threshold and length")
    parser.add_argument("--held", action="append", default=[], help="sets only reported")
    parser.add_argument("--cache", type=Path, help="folder of the public sets (bench/segmentation_sets.py)")
    parser.add_argument("--embed-cache", type=Path, help="pickle of embeddings by text hash (outside the repository)")
    parser.add_argument("--table", choices=sorted(NAMES), default="exchanges",
                        help="the table to fit: exchanges (user / assistant) or people (no replies, message by message)")
    parser.add_argument("--features", help="fit only the features whose name this regular expression finds")
    parser.add_argument("--l2", type=float, default=1.0, help="L2 penalty on the standardized weights")
    parser.add_argument("--shipped", action="store_true", help="score the weights chunk_segment.py ships instead of fitting")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args(argv)
    embedder = cached_embedder(args.embed_cache)
    names = list(dict.fromkeys(args.train + args.sets + args.held))
    data = {name: prepare(load_set(name, args.cache), embedder) for name in names}
    if getattr(embedder, "computed", 0):
        embedder.save()
    features = NAMES[args.table]
    if args.shipped:
        weights, bias, threshold, gap = SHIPPED[args.table]
        grid = [(threshold, gap)]
    else:
        keep = np.array([not args.features or bool(re.search(args.features, f)) for f in features])
        rows_ = [row for n in args.train for row in data[n] if len(row[2]) and row[4] == args.table]
        if not rows_:
            parser.error(f"no --train conversation is scored by the {args.table} table")
        x, y = np.vstack([row[2] for row in rows_]), np.concatenate([row[3] for row in rows_])
        print(f"fitting {args.table} on {len(y)} gaps", file=sys.stderr)
        part, bias = fit(x[:, keep], y, args.l2)
        weights = np.zeros(len(features))
        weights[keep] = part
        grid = list(itertools.product(np.round(np.arange(0.1, 0.9, 0.025), 3), (1, 2, 3)))
    # Not cutting at all: every conversation (either table) with a threshold no probability reaches.
    none = {n: score([(c["starts"], [], len(c["messages"])) for c, *_ in data[n]]) for n in args.sets}
    results: list[dict[str, Any]] = []
    for threshold, gap in grid:
        r = {n: evaluate(data[n], weights, bias, float(threshold), gap, args.table) for n in names}
        fair = all(r[n]["pk"] <= none[n]["pk"] and r[n]["windowdiff"] <= none[n]["windowdiff"] for n in args.sets)
        dev_f1 = float(np.mean([r[n]["f1"] for n in args.sets])) if args.sets else 0.0
        results.append({"threshold": float(threshold), "min_exchanges": gap, "fair": fair, "dev_f1": round(dev_f1, 3), **r})
    # Fair first: Pk and WindowDiff on every --set no worse than not cutting; then the best mean F1.
    results.sort(key=lambda r: (not r["fair"], -r["dev_f1"]))
    best = results[0]
    if args.json:
        print(json.dumps({"weights": dict(zip(features, weights.tolist())), "bias": bias, "best": best}))
        return 0
    print("WEIGHTS = {" + ", ".join(f'"{f}": {w:.4f}' for f, w in zip(features, weights)) + "}")
    print(f"BIAS = {bias:.4f}")
    print("threshold | min | fair | dev F1 | " + " | ".join(f"{n} F1/Pk/WD" for n in names))
    for r in results[:12]:
        print(f"{r['threshold']:.3f} | {r['min_exchanges']} | {r['fair']} | {r['dev_f1']:.3f} | " + " | ".join(
            f"{r[n]['f1']:.3f}/{r[n]['pk']:.3f}/{r[n]['windowdiff']:.3f}" for n in names))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
