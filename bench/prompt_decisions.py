"""Injection decisions of prompt-recall weighed in process: which combination of measured signals
separates the prompts memory can answer from unrelated ones (the companion of
bench/prompt_precision.py, which runs the real hook, and bench/prompt_variants.py, block shapes).

Every prompt of both splits (LoCoMo dev answerable questions and the unrelated real prompts of
bench/prompt_precision.py — same sources, same halves) is recalled once
(``MemoryService.scored_candidates``, query vectors cached in ``--work``) and measured by
``memvault.ops.prompt_recall.measure``, weighing 1, 3 or 5 evidence units, with and without
date words matched against a unit's date. Each decision is then a score over those signals:
a fixed rule, or a logistic fit on the tune split (numpy, L2 as scikit-learn's default). The
threshold of a fitted score is chosen on tune alone: the lowest that injects on no unrelated
tune prompt. Each row prints tune and report figures — answerable injected, answerable with a
gold evidence turn in the block (the shipped block shape), unrelated injected — so a choice made
on tune can be read on report; only the tune columns may choose.

    .venv/bin/python bench/prompt_decisions.py --koala CACHE/koala_test_set.jsonl \\
        --hh CACHE/harmless-test.jsonl.gz --work CACHE/pp3
"""

import argparse
import json
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

Feats = dict[str, float] | None  # one prompt's signals under one measurement (None: trivial or no unit)


def logistic(x: np.ndarray, y: np.ndarray, c: float = 1.0, steps: int = 50) -> tuple[np.ndarray, float]:
    """Weights and intercept minimising ½‖w‖² + c · log-loss (Newton's method; the intercept is
    not penalised), as scikit-learn's LogisticRegression(C=c) does."""
    xb = np.hstack([x, np.ones((len(x), 1))])
    w = np.zeros(xb.shape[1])
    reg = np.eye(xb.shape[1]) / c
    reg[-1, -1] = 0.0
    for _ in range(steps):
        p = 1.0 / (1.0 + np.exp(-xb @ w))
        grad = xb.T @ (p - y) + reg @ w
        hess = (xb * (p * (1 - p))[:, None]).T @ xb + reg
        step = np.linalg.solve(hess, grad)
        w -= step
        if np.abs(step).max() < 1e-9:
            break
    return w[:-1], float(w[-1])


def figures(scores: Sequence[float | None], labels: Sequence[str], held: Sequence[bool], t: float) -> dict[str, str]:
    """Per split: answerable injected % / with evidence in the block % / unrelated injected % (n)."""
    out = {}
    for split in ("tune", "report"):
        a = [i for i, lab in enumerate(labels) if lab == f"{split}:ans"]
        u = [i for i, lab in enumerate(labels) if lab == f"{split}:unrel"]
        inj = [s is not None and s >= t for s in scores]
        n_u = sum(inj[i] for i in u)
        out[split] = (f"{100 * sum(inj[i] for i in a) / len(a):.1f} / {100 * sum(inj[i] and held[i] for i in a) / len(a):.1f}"
                      f" / {100 * n_u / len(u):.1f} ({n_u})")
    return out


def strict_threshold(scores: Sequence[float | None], labels: Sequence[str]) -> float:
    """The lowest threshold (to 0.001) that injects on no unrelated tune prompt."""
    top = max(s for s, lab in zip(scores, labels) if lab == "tune:unrel" and s is not None)
    return float(np.floor(top * 1000) + 1) / 1000


def cv_margin(scores: Sequence[float | None], labels: Sequence[str], folds: int = 5, repeats: int = 20,
              min_answerable: float = 0.95) -> tuple[float, str]:
    """The margin over the strict threshold chosen by cross-validation inside the tune split:
    for each margin (0 to 0.1 by 0.001), the strict threshold of four fifths of the tune prompts
    plus the margin is applied to the fifth left out (stratified, ``repeats`` shuffles); the
    margin kept injects on the fewest left-out unrelated prompts, then on the most answerable
    ones, among those whose left-out answerable rate stays ≥ ``min_answerable``. The highest
    unrelated score seen is an underestimate of how far the next unrelated prompt reaches:
    leaving prompts out measures by how much."""
    rng = np.random.default_rng(11)
    tune = [i for i, lab in enumerate(labels) if lab.startswith("tune:")]
    margins = [m / 1000 for m in range(0, 101)]
    unrel_hits = np.zeros(len(margins))
    ans_hits = np.zeros(len(margins))
    n_u = n_a = 0
    for _ in range(repeats):
        fold = {}
        for kind in ("tune:ans", "tune:unrel"):
            idx = [i for i in tune if labels[i] == kind]
            for k, i in enumerate(rng.permutation(idx)):
                fold[int(i)] = k % folds
        for f in range(folds):
            # strict_threshold reads the "tune:unrel" labels: those left out are relabelled
            base = strict_threshold(scores, [lab if fold.get(i, -1) != f else "left out" for i, lab in enumerate(labels)])
            out = [i for i in tune if fold[i] == f]
            for m, margin in enumerate(margins):
                inj = [i for i in out if scores[i] is not None and scores[i] >= base + margin]  # type: ignore[operator]
                unrel_hits[m] += sum(labels[i] == "tune:unrel" for i in inj)
                ans_hits[m] += sum(labels[i] == "tune:ans" for i in inj)
            n_u += sum(labels[i] == "tune:unrel" for i in out)
            n_a += sum(labels[i] == "tune:ans" for i in out)
    ok = [m for m in range(len(margins)) if ans_hits[m] / n_a >= min_answerable] or [0]
    best = min(ok, key=lambda m: (unrel_hits[m], -ans_hits[m]))
    note = (f"margin {margins[best]:.3f}: left out, {100 * unrel_hits[best] / n_u:.2f} % unrelated, "
            f"{100 * ans_hits[best] / n_a:.1f} % answerable (margin 0: {100 * unrel_hits[0] / n_u:.2f} / "
            f"{100 * ans_hits[0] / n_a:.1f})")
    return margins[best], note


def main() -> int:
    from memvault.live.prompt_gate import GateParams, bounded_query, trivial_reason
    from memvault.ops.prompt_recall import _document_frequencies, evaluate, measure
    from bench.prompt_precision import (answerable, build_home, half, in_block, reading_service, server_of, source_args,
                                         unrelated_prompts)

    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    source_args(ap)
    ap.add_argument("--json", action="store_true", help="rows as JSON lines instead of a Markdown table")
    args = ap.parse_args()
    data = json.loads(args.data.read_text(encoding="utf-8"))
    args.work.mkdir(parents=True, exist_ok=True)
    home = build_home(data, args.work, server_of(args))
    prompts: list[tuple[str, str, list[str] | None]] = [(f"{split}:ans", q, g) for split, q, g, _ in answerable(data)]
    prompts += [(f"{half(p)}:unrel", p, None) for _, p in
                unrelated_prompts(args.koala, args.hh, args.data.resolve().parents[2])]
    service, embedder = reading_service(home, args.work)
    df, _ = _document_frequencies(service)
    loose = GateParams(min_evidence=-10.0, min_cos=-1.0)
    measured: dict[tuple[int, bool], list[Feats]] = {(w, d): [] for w in (1, 3, 5) for d in (False, True)}
    labels, held = [p[0] for p in prompts], []
    for _, prompt, gold in prompts:
        query = bounded_query(prompt)
        found = None if trivial_reason(query) else service.scored_candidates(query, None)
        block = evaluate(service, prompt, session_id="bench-session", params=loose, found=found).block if found else ""
        held.append(bool(gold) and bool(block) and in_block(block, gold or []))
        for (weigh, dates), out in measured.items():
            m = measure(service, query, None, "bench-session", 8, weigh, found, dates) if found else "trivial"
            if isinstance(m, str):
                out.append(None)
                continue
            s = m[0]
            unknown = sum(1 for w in s.words if df.get(w, 0) == 0) / max(len(s.words), 1)
            out.append({"cos": s.cos, "cov": s.coverage, "top": s.top_cos, "margin": s.margin, "agree": float(s.agree),
                        "mass": s.idf_mass, "unknown": unknown})
    embedder.save()
    tune = [i for i, lab in enumerate(labels) if lab.startswith("tune:")]
    rows: list[dict[str, Any]] = []

    def add(name: str, feats: list[Feats], score: Callable[[dict[str, float]], float], t: float | None = None,
            note: str = "") -> None:
        scores = [None if f is None else score(f) for f in feats]
        thr = strict_threshold(scores, labels) if t is None else t
        rows.append({"variant": name, "threshold": thr, "note": note, **figures(scores, labels, held, thr)})

    before, dated = measured[(3, False)], measured[(3, True)]
    add("shipped before: cos + 0.4 × cov ≥ 0.55", before, lambda f: f["cos"] + 0.4 * f["cov"], 0.55)
    add("cos + 0.4 × cov, strict tune threshold", before, lambda f: f["cos"] + 0.4 * f["cov"])
    add("dates matched: cos + 0.4 × cov ≥ 0.55", dated, lambda f: f["cos"] + 0.4 * f["cov"], 0.55)
    sets = (["cos", "cov"], ["cos", "cov", "top"], ["top", "cov"], ["cos", "cov", "unknown"], ["cos", "cov", "margin"],
            ["cos", "cov", "agree"], ["cos", "cov", "mass"], ["cos", "cov", "top", "unknown", "margin", "agree"])
    fits = [(k, w, d) for k in sets for w, d in ((3, False), (3, True))] + \
           [(["cos", "cov", "top"], w, d) for w in (1, 5) for d in (False, True)]
    for keys, weigh, dates in fits:
        feats = measured[(weigh, dates)]
        idx = [i for i in tune if feats[i] is not None]
        x = np.array([[feats[i][k] for k in keys] for i in idx])  # type: ignore[index]
        y = np.array([1.0 if labels[i].endswith(":ans") else 0.0 for i in idx])
        coef, icpt = logistic(x, y)

        def fitted(f: dict[str, float], coef: np.ndarray = coef, icpt: float = icpt, keys: list[str] = keys) -> float:
            return float(np.dot(coef, [f[k] for k in keys]) + icpt)

        add(f"logistic({', '.join(keys)}), {weigh} units{', dates matched' if dates else ''}", feats, fitted,
            note="weights " + ", ".join(f"{c:.2f}" for c in coef) + f", intercept {icpt:.2f}")
    add("chosen: cos + top + cov (the fit's weights made equal), strict tune threshold", dated,
        lambda f: f["cos"] + f["top"] + f["cov"])
    add("before: cos + top + cov ≥ 1.24", dated, lambda f: f["cos"] + f["top"] + f["cov"], 1.24)
    for weigh in (3, 5):
        summed = [None if f is None else f["cos"] + f["top"] + f["cov"] for f in measured[(weigh, True)]]
        margin, note = cv_margin(summed, labels)
        add(f"cos + top + cov, {weigh} units, strict tune threshold + a margin cross-validated in tune",
            measured[(weigh, True)], lambda f: f["cos"] + f["top"] + f["cov"], strict_threshold(summed, labels) + margin, note)
    if args.json:
        for row in rows:
            print(json.dumps(row, ensure_ascii=False))
        return 0
    print("| decision | threshold | tune: answerable / evidence / unrelated % | report | |")
    print("|---|---|---|---|---|")
    for row in rows:
        print(f"| {row['variant']} | {row['threshold']:.3f} | {row['tune']} | {row['report']} | {row['note']} |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
