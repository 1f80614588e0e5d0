"""Issue 29's sixth round: the recall score's terms weighed jointly by a fitted linear model.

The fusion rounds chose each weight of the score by sweeping it with the others held (left one
conversation out). This asks whether the terms weighed together do better: for every question
of ``--cases`` (a capture of bench/recall_quality.py) the product scores the candidates; each
message node's explain terms (cosine, BM25, fusion, exact tokens, its lift and by which way,
each prior, the speaker term) plus the gathered terms the product leaves at weight 0 (hop,
session, cover: computed at weight 1) become one row, and a logistic model learns from pairs
(a gold turn against one of the question's first ``--negatives`` other turns) which rows rank
higher. Left one conversation out: each conversation is ranked by the model fitted on the
other four, then scored as recall_quality.py scores (turn R@5/10/25, session R@2/5, per
category). The result is one linear score over explainable terms, as the product's is.

    .venv/bin/python bench/recall_ltr.py --cases CASES.pkl [--negatives 60,150,400] [--l2 1] [--json]

``--cases`` must hold candidates captured with the defaults (``recall_quality.py --cases``).
"""

import argparse
import json
import pickle
import sys
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from memvault.recall.scoring import Scored, ScoringWeights, score_candidates  # noqa: E402

from bench.recall_metrics import Tally  # noqa: E402
from bench.recall_quality import Case, ConversationCases  # noqa: E402

VIAS = ("similar", "child", "sibling", "reply")
TERMS = ("cos", "lexical", "rrf", "exact", "propagation", "relevance", "date_prior", "when_prior", "content_prior",
         "speaker_bonus")
GATHERED = ("hop_bonus", "session_bonus", "cover_bonus")
NAMES = (*TERMS, "guess_cos", "guess_lexical", *(f"via_{v}" for v in VIAS), "is_hit", "total",
         *(f"{g}_at_1" for g in GATHERED))


def features(s: Scored, at_one: Scored | None) -> list[float]:
    """One message node's row: its explain terms, as the product computed them."""
    e = s.explain
    guess = 1.0 if e.get("question_form") == "guess" else 0.0
    row = [float(e.get(t) or 0.0) for t in TERMS]
    row += [guess * float(e["cos"] or 0.0), guess * float(e["lexical"] or 0.0)]
    row += [float(e["propagation"] or 0.0) if e.get("propagated_via") == v else 0.0 for v in VIAS]
    row += [1.0 if s.source == "hit" else 0.0, s.score]
    row += [float(at_one.explain.get(g) or 0.0) if at_one else 0.0 for g in GATHERED]
    return row


def rows_of(conv: ConversationCases) -> list[tuple[Case, list[str], np.ndarray]]:
    """Each question's message nodes in the product's order: (case, their turns, their rows)."""
    now = datetime.now(timezone.utc)
    product = ScoringWeights()
    ones = product.model_copy(update={f"w_{g.split('_')[0]}": 1.0 for g in GATHERED})
    out = []
    for case in conv.cases:
        def lookup(ids: list[str], case: Case = case) -> dict[str, Any]:
            return {i: case.lifted[i] for i in ids if i in case.lifted}
        scored = score_candidates(case.hits, lookup, product, now, query=case.question)
        at_one = {s.id: s for s in score_candidates(case.hits, lookup, ones, now, query=case.question)}
        msgs = [s for s in scored if conv.nodes[s.id][0] == "message"]
        refs = [str(conv.nodes[s.id][1]) for s in msgs]
        x = np.array([features(s, at_one.get(s.id)) for s in msgs], dtype=float).reshape(len(msgs), len(NAMES))
        out.append((case, refs, x))
    return out


def ranked(refs: list[str], score: np.ndarray) -> list[str]:
    out: list[str] = []
    for i in np.argsort(-score, kind="stable"):
        if refs[i] not in out:
            out.append(refs[i])
    return out


def fit(train: list[tuple[Case, list[str], np.ndarray]], negatives: int, l2: float) -> np.ndarray:
    """Weights over NAMES from pairwise differences (gold minus another turn, and the reverse):
    the segmentation tables' logistic fit (Newton's method, L2 ``l2``), whose bias is 0 here."""
    from bench.segmentation_train import fit as logistic

    diffs = []
    for case, refs, x in train:
        gold = [i for i, r in enumerate(refs) if r in case.gold]
        other = [i for i, r in enumerate(refs) if r not in case.gold][:negatives]
        diffs += [x[g] - x[n] for g in gold for n in other]
    d = np.array(diffs)
    weights, _bias = logistic(np.vstack([d, -d]), np.r_[np.ones(len(d)), np.zeros(len(d))], l2=l2)
    return weights


def figures(t: Tally) -> dict[str, Any]:
    return {"mean_of_five": round(t.mean(), 4), **t.result(),
            **{f"{c} R@10": v["turn_R@10"] for c, v in t.categories().items()}}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--cases", type=Path, required=True, help="recall_quality.py --cases file (captured with the defaults)")
    ap.add_argument("--negatives", default="60,150,400", help="other turns per gold turn in a pair, the question's first ones")
    ap.add_argument("--l2", type=float, default=1.0, help="L2 strength of the logistic fit")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    stored = pickle.loads(args.cases.read_bytes())
    if stored["key"].get("overrides"):
        raise SystemExit(f"{args.cases} was captured with {stored['key']['overrides']}: capture one with the defaults")
    convs = [rows_of(conv) for conv in stored["conversations"].values()]
    out: dict[str, Any] = {}
    product = Tally()
    for rows in convs:
        for case, refs, x in rows:
            product.add(ranked(refs, x[:, NAMES.index("total")]) if refs else [], case.gold, case.category)
    out["product (defaults)"] = figures(product)
    for n in [int(v) for v in args.negatives.split(",")]:
        tally, weights = Tally(), []
        for k, rows in enumerate(convs):
            w = fit([r for j, other in enumerate(convs) if j != k for r in other], n, args.l2)
            weights.append(w)
            for case, refs, x in rows:
                tally.add(ranked(refs, x @ w) if refs else [], case.gold, case.category)
        out[f"fitted, {n} negatives, left one out"] = {
            **figures(tally), "weights (mean of folds)": {k: round(float(v), 3) for k, v in zip(NAMES, np.mean(weights, 0))}}
    if args.json:
        print(json.dumps(out, indent=1))
    else:
        for name, row in out.items():
            print(f"{name}: " + ", ".join(f"{k} {v}" for k, v in row.items() if not isinstance(v, dict)))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
