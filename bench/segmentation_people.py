"""Variants of the people table (memvault/stages/chunk_segment.py) scored on TIAGE: features, models, decoders.

    .venv/bin/python bench/segmentation_people.py --train tiage:train --set tiage:dev \
        --cache CACHE --embed-cache EMB.pkl [--gbdt] [--folds 10 --repeats 3] [--bootstrap 1000]

Every conversation the people table scores (no exchange has a reply) gets the shipped
``PEOPLE_FEATURES`` plus optional groups, none of them in the product:

- ``window``: the nine cosines between each of the three messages before the gap and each of
  the three after it, four block cosines at shifted offsets (2|2 skipping one message either
  way, 4|4, everything before | everything after), the relative position and both messages'
  word counts;
- ``words``: content words (a short stop list) of the message after the gap not seen before
  it, and the share that comes back in the next two; Jaccard of three messages | two;
- ``sentences``: the first and the last sentence of each message embedded on their own (an
  answer followed by a new question reads as one vector otherwise): their cosines with the
  neighbours (costs up to two more embeddings per message);
- ``context``: the shipped table's logit at the gap less its neighbours' (two each side), its
  z-score and rank within the conversation, and the conversation's mean and spread.

Models: logistic regression (bench/segmentation_train.py's ``fit``; ``--l2``) and, with
``--gbdt``, scikit-learn's gradient-boosted trees (installed with the test extra). Decoders:
the shipped threshold + spacing (chosen on ``--set`` as segmentation_train.py does), top-k per
conversation with k from the sum of its probabilities, and the logit plus a multiple of its
z-score within the conversation. ``--folds`` adds a pooled, repeated K-fold estimate over
``--train`` and ``--set`` together (best threshold with Pk and WindowDiff no worse than not
cutting), ``--bootstrap`` a paired bootstrap of each variant's F1 gain over the shipped table
on ``--set``: the dev split alone holds 100 dialogues, and the best of many variants on it is
optimistic. No --held: this script chooses, bench/chunk_quality.py reports.
"""

import argparse
import re
import sys
from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench.chunk_quality import cached_embedder, rows, score  # noqa: E402
from bench.segmentation_sets import load_set  # noqa: E402
from bench.segmentation_train import fit  # noqa: E402
from memvault.stages import chunk_segment as cs  # noqa: E402
from memvault.stages.chunk import exchanges, render, turns  # noqa: E402
from memvault.stages.chunk_features import unit  # noqa: E402
from memvault.stages.text import EMBED_CHARS  # noqa: E402

Conv = dict[str, Any]
Model = Callable[[np.ndarray], np.ndarray]
STOP = frozenset("""
the and you are for not but was what have has had with this that they them their there then than his her him she he
its i'm im you're your yours our ours we me my mine all any can could would should will just like really very too also
about into from out over some more most much many such only own same so again once here when where why how who which
while does did doing done been being were is am do of to in on at by be or if no as up down off one two yes yeah well
good great nice cool wow lol oh ok okay sure that's don't dont can't cant i'd i've ive get got go going love know think
want make time thing things something anything day today what's how's sounds fun hello hey hi thanks
""".split())
_WORDS = re.compile(r"[a-z]{3,}")
_SENTENCE = re.compile(r"(?<=[.!?])\s+")


def first_last(text: str) -> tuple[str, str]:
    """The first and the last sentence of ``text`` (both ``text`` when it has one)."""
    parts = [s for s in _SENTENCE.split(text.strip()) if len(s.strip(" .!?")) > 1]
    return (parts[0], parts[-1]) if parts else (text, text)


def prepare(convs: list[Conv], embedder: Any, sentences: bool) -> list[Conv]:
    """The people table's conversations of ``convs``: vectors, texts, shipped features and labels."""
    out = []
    for c in convs:
        gs = exchanges(rows(c))
        v = np.asarray(embedder.embed([render(g)[:EMBED_CHARS] for g in gs]))
        table, x = cs.features(v, [turns(g) for g in gs])
        if table != "people" or len(gs) < 2:
            continue
        texts = [turns(g)[0] for g in gs]
        y = np.array([s in c["starts"] for s in range(1, len(gs))], dtype=np.float64)
        d: Conv = {"starts": c["starts"], "n": len(c["messages"]), "v": v, "texts": texts, "x": x, "y": y}
        if sentences:
            fl = [first_last(t) for t in texts]
            d["first"] = np.asarray(embedder.embed([f for f, _ in fl]))
            d["last"] = np.asarray(embedder.embed([s for _, s in fl]))
        out.append(d)
    return out


def window(d: Conv) -> np.ndarray:
    """The ``window`` group of every gap of ``d``."""
    v, n = d["v"], len(d["v"])
    sims = v @ v.T

    def block(a0: int, a1: int, b0: int, b1: int) -> float:
        a0, b1 = max(0, a0), min(n, b1)
        return float(unit(v[a0:a1].mean(axis=0)) @ unit(v[b0:b1].mean(axis=0))) if a0 < a1 and b0 < b1 else 0.0

    out = []
    for g in range(1, n):
        cross = [float(sims[a, b]) if a >= 0 and b < n else 0.0 for a in (g - 3, g - 2, g - 1) for b in (g, g + 1, g + 2)]
        out.append([*cross, block(g - 2, g, g + 1, g + 3), block(g - 3, g - 1, g, g + 2), block(g - 4, g, g, g + 4),
                    block(0, g, g, n), g / n, (n - g) / n, len(d["texts"][g - 1].split()), len(d["texts"][g].split())])
    return np.array(out, dtype=np.float64)


def words(d: Conv) -> np.ndarray:
    """The ``words`` group of every gap of ``d``."""
    bags = [{w.rstrip("s") for w in _WORDS.findall(t.lower()) if w not in STOP} for t in d["texts"]]
    out = []
    for g in range(1, len(bags)):
        seen, now = set().union(*bags[:g]), bags[g]
        before, after, later = set().union(*bags[max(0, g - 3):g]), set().union(*bags[g:g + 2]), set().union(*bags[g + 1:g + 3])
        out.append([len(now - seen) / len(now) if now else 0.0, len(now & later) / len(now) if now else 0.0,
                    len(before & after) / len(before | after) if before | after else 0.0, float(bool(bags[g - 1] & now)),
                    float(not now), len(now - seen) / 5])
    return np.array(out, dtype=np.float64)


def sentences(d: Conv) -> np.ndarray:
    """The ``sentences`` group of every gap of ``d``."""
    v, first, last, n = d["v"], d["first"], d["last"], len(d["v"])
    out = []
    for g in range(1, n):
        left = unit(v[max(0, g - 3):g].mean(axis=0))
        nxt = v[g + 1] if g + 1 < n else np.zeros_like(v[0])
        out.append([float(first[g] @ v[g - 1]), float(last[g] @ v[g - 1]), float(last[g] @ left), float(last[g] @ nxt),
                     float(last[g - 1] @ v[g]), float(last[g - 1] @ first[g]), float(last[g] @ first[g]),
                     float(first_last(d["texts"][g])[0] != first_last(d["texts"][g])[1]),
                     float(last[g] @ v[g - 1]) - float(first[g] @ v[g - 1])])
    return np.array(out, dtype=np.float64)


def context(d: Conv) -> np.ndarray:
    """The ``context`` group: the shipped logits of the conversation around each gap."""
    z = d["x"] @ cs.PEOPLE_ARRAY + cs.PEOPLE_BIAS
    n, low = len(z), float(z.min()) - 1
    pad = np.concatenate([[low, low], z, [low, low]])
    near = np.stack([pad[0:n], pad[1:n + 1], pad[3:n + 3], pad[4:n + 4]], axis=1)
    rank = np.argsort(np.argsort(-z)) / max(1, n - 1)
    return np.column_stack([z[:, None] - near, (z - z.mean()) / (z.std() + 1e-6), rank,
                            np.full(n, z.mean()), np.full(n, z.std())])


GROUPS: dict[str, Callable[[Conv], np.ndarray]] = {"window": window, "words": words, "sentences": sentences,
                                                   "context": context}


def columns(d: Conv, groups: tuple[str, ...]) -> np.ndarray:
    """The shipped features of ``d`` beside the named groups."""
    return np.hstack([d["x"], *(GROUPS[g](d) for g in groups)])


def train(kind: str, x: np.ndarray, y: np.ndarray, l2: float) -> Model:
    """A model of ``kind`` (`lr` or `gbdt`) fitted on ``x``, ``y``: gaps' features in, probabilities out."""
    if kind == "gbdt":
        from sklearn.ensemble import GradientBoostingClassifier  # type: ignore[import-untyped]

        m = GradientBoostingClassifier(random_state=0, max_depth=3, n_estimators=150, learning_rate=0.05,
                                       subsample=0.8, min_samples_leaf=20).fit(x, y)
        return lambda z: np.asarray(m.predict_proba(z)[:, 1], dtype=np.float64)
    w, b = fit(x, y, l2)
    return lambda z: cs.probabilities(z, w, b)


def top_k(p: np.ndarray, scale: float, floor: float) -> set[int]:
    """The k most probable gaps at least two apart and at least ``floor``, k the rounded ``scale``
    times the sum of ``p`` (the conversation's expected number of boundaries)."""
    k, kept = round(scale * float(p.sum())), list[int]()
    for i in np.argsort(-p, kind="stable"):
        if len(kept) >= k or p[i] < floor:
            break
        if all(abs(int(i) + 1 - c) >= 2 for c in kept):
            kept.append(int(i) + 1)
    return set(kept)


def scores(data: list[Conv], probs: list[np.ndarray], decode: Callable[[np.ndarray], set[int]]) -> dict[str, Any]:
    """bench/chunk_quality.py's pooled scores of the cuts ``decode`` makes."""
    return score([(d["starts"], sorted(decode(p)), d["n"]) for d, p in zip(data, probs)])


def best(data: list[Conv], probs: list[np.ndarray], decoders: dict[str, Callable[[np.ndarray], set[int]]]) -> tuple[str, dict[str, Any]]:
    """The decoder with the best F1 among those whose Pk and WindowDiff are no worse than not cutting."""
    none = score([(d["starts"], [], d["n"]) for d in data])
    found = [(name, scores(data, probs, dec)) for name, dec in decoders.items()]
    fair = [f for f in found if f[1]["pk"] <= none["pk"] and f[1]["windowdiff"] <= none["windowdiff"]] or found
    return max(fair, key=lambda f: f[1]["f1"])


def thresholds() -> dict[str, Callable[[np.ndarray], set[int]]]:
    """The shipped decoder's grid: threshold and spacing."""
    return {f"threshold {t:.3f} spacing {g}": partial(_cut, threshold=float(t), spacing=g)
            for t in np.arange(0.1, 0.6, 0.025) for g in (1, 2, 3)}


def _cut(p: np.ndarray, threshold: float, spacing: int, z: float = 0.0) -> set[int]:
    return cs.pick(_zmix(p, z) if z else p, threshold, spacing)


def calibrated() -> dict[str, Callable[[np.ndarray], set[int]]]:
    """Top-k from the expected count, and the logit plus ``a`` times its z-score in the conversation."""
    out: dict[str, Callable[[np.ndarray], set[int]]] = {}
    for scale in (0.6, 0.8, 1.0, 1.2, 1.4):
        for floor in (0.0, 0.1, 0.2):
            out[f"top-k {scale} x sum, floor {floor}"] = partial(top_k, scale=scale, floor=floor)
    for a in (0.25, 0.5, 1.0):
        for t in np.arange(0.15, 0.5, 0.025):
            out[f"z {a} threshold {t:.3f}"] = partial(_cut, threshold=float(t), spacing=2, z=a)
    return out


def _zmix(p: np.ndarray, a: float) -> np.ndarray:
    z = np.log(p / (1 - p))
    return np.asarray(1 / (1 + np.exp(-(z + a * (z - z.mean()) / (z.std() + 1e-6)))), dtype=np.float64)


def bootstrap(data: list[Conv], ours: list[np.ndarray], dec: Callable[[np.ndarray], set[int]],
              base: list[np.ndarray], base_dec: Callable[[np.ndarray], set[int]], draws: int) -> tuple[float, float, float]:
    """Paired bootstrap over conversations of F1(ours) - F1(base): mean, spread and the share of draws at or below 0."""
    rng, diffs = np.random.default_rng(0), []
    for _ in range(draws):
        ix = rng.integers(0, len(data), len(data))
        sample = [data[i] for i in ix]
        diffs.append(scores(sample, [ours[i] for i in ix], dec)["f1"] - scores(sample, [base[i] for i in ix], base_dec)["f1"])
    return float(np.mean(diffs)), float(np.std(diffs)), float(np.mean(np.array(diffs) <= 0))


def pooled(data: list[Conv], groups: tuple[str, ...], kind: str, l2: float, folds: int, repeats: int) -> float:
    """Mean F1 of the best fair threshold over ``repeats`` shuffles of ``folds``-fold CV on ``data``."""
    rng, f1s = np.random.default_rng(0), []
    for _ in range(repeats):
        fold = np.empty(len(data), dtype=int)
        fold[rng.permutation(len(data))] = np.arange(len(data)) % folds
        probs: list[np.ndarray] = [np.zeros(0)] * len(data)
        for k in range(folds):
            part = [d for d, f in zip(data, fold) if f != k]
            model = train(kind, np.vstack([columns(d, groups) for d in part]), np.concatenate([d["y"] for d in part]), l2)
            for i in np.flatnonzero(fold == k):
                probs[i] = model(columns(data[i], groups))
        f1s.append(best(data, probs, thresholds())[1]["f1"])
    return float(np.mean(f1s))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--train", action="append", default=[], help="sets the variants are fitted on")
    parser.add_argument("--set", action="append", default=[], dest="sets", help="sets that choose the decoder")
    parser.add_argument("--cache", type=Path, help="folder of the public sets (bench/segmentation_sets.py)")
    parser.add_argument("--embed-cache", type=Path, help="pickle of embeddings by text hash (outside the repository)")
    parser.add_argument("--l2", type=float, default=100.0, help="L2 penalty of the variants' regressions")
    parser.add_argument("--gbdt", action="store_true", help="also gradient-boosted trees (scikit-learn)")
    parser.add_argument("--folds", type=int, default=0, help="pooled K-fold CV over --train and --set (0: off)")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--bootstrap", type=int, default=0, help="paired bootstrap draws of each variant against the shipped table")
    args = parser.parse_args(argv)
    if not args.train or not args.sets:
        parser.error("give at least one --train and one --set")
    embedder = cached_embedder(args.embed_cache)
    data = {n: prepare(load_set(n, args.cache), embedder, sentences=True) for n in dict.fromkeys(args.train + args.sets)}
    if getattr(embedder, "computed", 0):
        embedder.save()
    fit_on = [d for n in args.train for d in data[n]]
    chosen_on = [d for n in args.sets for d in data[n]]
    shipped = [cs.probabilities(d["x"], cs.PEOPLE_ARRAY, cs.PEOPLE_BIAS) for d in chosen_on]
    variants: list[tuple[str, tuple[str, ...], str, float]] = [("refit, shipped features", (), "lr", 1.0)]
    variants += [(f"+ {g}", (g,), "lr", args.l2) for g in GROUPS]
    variants += [("+ window + words", ("window", "words"), "lr", args.l2),
                 ("+ window + words + sentences", ("window", "words", "sentences"), "lr", args.l2)]
    if args.gbdt:
        variants += [("gbdt, shipped features", (), "gbdt", 0.0), ("gbdt + window + words + sentences",
                                                                  ("window", "words", "sentences"), "gbdt", 0.0)]
    base_dec = thresholds()[best(chosen_on, shipped, thresholds())[0]]
    cv = (" | pooled CV F1" if args.folds else "") + (" | bootstrap F1 gain, spread, P(<= 0)" if args.bootstrap else "")
    print(f"variant | {' + '.join(args.sets)} F1 / Pk / WD (decoder){cv}")
    for name, groups, kind, l2 in variants:
        model = train(kind, np.vstack([columns(d, groups) for d in fit_on]), np.concatenate([d["y"] for d in fit_on]), l2)
        probs = [model(columns(d, groups)) for d in chosen_on]
        dec, r = best(chosen_on, probs, thresholds())
        extra = f" | {pooled(fit_on + chosen_on, groups, kind, l2, args.folds, args.repeats):.3f}" if args.folds else ""
        if args.bootstrap:
            gain = bootstrap(chosen_on, probs, thresholds()[dec], shipped, base_dec, args.bootstrap)
            extra += " | {:+.3f}, {:.3f}, {:.2f}".format(*gain)
        print(f"{name} | {r['f1']:.3f} / {r['pk']:.3f} / {r['windowdiff']:.3f} ({dec}){extra}", flush=True)
    for label, decoders in (("threshold", thresholds()), ("calibrated", calibrated())):
        dec, r = best(chosen_on, shipped, decoders)
        print(f"shipped, {label} | {r['f1']:.3f} / {r['pk']:.3f} / {r['windowdiff']:.3f} ({dec})")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
