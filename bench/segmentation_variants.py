"""Variants of the no-model segmentation, scored on the public sets without re-embedding.

    .venv/bin/python bench/segmentation_variants.py --set tiage:dev --set dialseg711:dev \
        --embed-cache ~/.cache/memvault/segmentation-emb.pkl [--held tiage:test --held dialseg711:test ...]

Each conversation is grouped into exchanges and embedded exactly as memvault.stages.chunk.plan_chunks
does (full exchange text and user turn, the real MiniLM embedder, vectors cached by text hash),
then every variant below cuts it and is scored with bench/chunk_quality.py's metrics. Variants
are ranked by mean F1 over the ``--set`` sets among those whose Pk and WindowDiff are no worse
than not cutting at all on every ``--set`` ("fair": F1 alone rewards cutting everywhere), then
the rest; the ``--held`` sets are only reported. The learned scorer's own weights and threshold
come from bench/segmentation_train.py; the table in bench/README.md comes from both scripts.
"""

import argparse
import itertools
import json
import re
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench.chunk_quality import cached_embedder, rows, score  # noqa: E402
from bench.segmentation_sets import load_set  # noqa: E402
from memvault.config.settings import ChunkSettings  # noqa: E402
from memvault.stages import chunk_segment as cs  # noqa: E402
from memvault.stages.chunk import exchanges, render, turns  # noqa: E402
from memvault.stages.chunk_features import depth_scores, lexical_cosines, shift_cue  # noqa: E402
from memvault.stages.text import EMBED_CHARS  # noqa: E402

Turns = list[list[str]]
Prepared = list[tuple[dict[str, Any], list[int], np.ndarray, np.ndarray, list[str], Turns]]


def prepare(convs: list[dict[str, Any]], embedder: Any) -> Prepared:
    """Per conversation: (conversation, first message index of each exchange, full vectors,
    user-turn vectors, user texts, each exchange's message texts), embedded in one batch per set."""
    grouped = [exchanges(rows(c)) for c in convs]
    full_texts = [render(g)[:EMBED_CHARS] for gs in grouped for g in gs]
    user_texts = [g[0].text[:EMBED_CHARS] for gs in grouped for g in gs]
    full, user = embedder.embed(full_texts), embedder.embed(user_texts)
    out, at = [], 0
    for conv, gs in zip(convs, grouped):
        n = len(gs)
        out.append((conv, [int(g[0].native_id[1:]) for g in gs], full[at:at + n], user[at:at + n],
                    [g[0].text if g[0].role == "user" else "" for g in gs], [turns(g) for g in gs]))
        at += n
    return out


Variant = Callable[[np.ndarray, np.ndarray, list[str], Turns], set[int]]


def evaluate(data: Prepared, variant: Variant) -> dict[str, Any]:
    items = []
    for conv, firsts, full, user, texts, whole in data:
        cuts = variant(full, user, texts, whole) if len(firsts) > 1 else set()
        items.append((conv["starts"], [firsts[c] for c in sorted(cuts)], len(conv["messages"])))
    return score(items)


def _unit(v: np.ndarray) -> np.ndarray:
    return np.asarray(v / (np.linalg.norm(v, axis=-1, keepdims=True) + 1e-12), dtype=np.float32)


def gap_sims(v: np.ndarray, block: int, near_weight: float = 0.5) -> np.ndarray:
    """Similarity at each gap: the neighbours' cosine blended with a ``block``-wide comparison."""
    out = []
    for g in range(1, len(v)):
        near = float(v[g - 1] @ v[g])
        left, right = _unit(v[max(0, g - block):g].mean(axis=0)), _unit(v[g:g + block].mean(axis=0))
        out.append(near_weight * near + (1 - near_weight) * float(left @ right))
    return np.array(out)


def smooth(s: np.ndarray, width: int) -> np.ndarray:
    if width == 0 or len(s) < 3:
        return s
    return np.array([s[max(0, i - width):i + width + 1].mean() for i in range(len(s))])


def min_length(cuts: set[int], depth: np.ndarray, gap_at: int, n: int) -> set[int]:
    """Drop the shallower of two cuts closer than ``gap_at`` exchanges (cut c sits at gap c - 1)."""
    kept: list[int] = []
    for c in sorted(cuts, key=lambda c: -depth[c - 1]):
        if all(abs(c - k) >= gap_at for k in kept) and c >= gap_at // 2 and n - c >= gap_at // 2:
            kept.append(c)
    return set(kept)


def tiling(full: np.ndarray, user: np.ndarray, texts: list[str], *, mix: float = 0.5, block: int = 2,
           near: float = 0.5, width: int = 0, rule: str = "adaptive", c: float = 0.5, floor: float = 0.0,
           lex: float = 0.0, min_gap: int = 1, cue: bool = True, all_texts: list[str] | None = None,
           dmin: float = 0.0) -> set[int]:
    """A configurable TextTiling over exchange vectors (``mix``: weight of the full text against the user turn)."""
    v = _unit(mix * full + (1 - mix) * user)
    sims = gap_sims(v, block, near)
    if lex:
        sims = (1 - lex) * sims + lex * lexical_cosines(all_texts or texts, block)
    sims = smooth(sims, width)
    depth = np.array(depth_scores(list(sims)))
    valley = np.array([(i == 0 or sims[i] <= sims[i - 1]) and (i == len(sims) - 1 or sims[i] <= sims[i + 1])
                       for i in range(len(sims))])
    if rule == "adaptive":
        pool = depth[valley] if valley.any() else depth
        threshold = max(pool.mean() - c * pool.std(), dmin)
    elif rule == "sims":  # a low point of the conversation's own similarity distribution
        threshold = 0.0
        low = sims.mean() - c * sims.std()
    else:
        threshold = c
    cuts = set()
    for i in range(len(sims)):
        hit = valley[i] and ((rule == "sims" and sims[i] < low) or (rule != "sims" and depth[i] > threshold and depth[i] > 0))
        if hit or (valley[i] and sims[i] < floor):
            cuts.add(i + 1)
        elif cue and texts[i + 1] and shift_cue(texts[i + 1]) and sims[i] < cs.CUE_SIMILARITY:
            cuts.add(i + 1)
    if min_gap > 1:
        cuts = min_length(cuts, depth, min_gap, len(v))
    return cuts


def rate(full: np.ndarray, user: np.ndarray, texts: list[str], length: float, block: int) -> set[int]:
    """The deepest valleys, as many as one per ``length`` exchanges."""
    v = _unit(0.5 * full + 0.5 * user)
    sims = gap_sims(v, block)
    depth = np.array(depth_scores(list(sims)))
    want = round(len(v) / length) - 1
    order = [i for i in np.argsort(-depth) if depth[i] > 0][:max(want, 0)]
    return {int(i) + 1 for i in order}


def before(v: np.ndarray, texts: list[str], floor: float, depth: float) -> set[int]:
    """The rule this bench replaced (chosen on the synthetic set): block 2, and a gap far below
    the floor cut even where it is no valley."""
    sims = list(gap_sims(v, 2))
    depths = depth_scores(sims)
    cuts = set()
    for i, (s, d) in enumerate(zip(sims, depths)):
        valley = (i == 0 or s <= sims[i - 1]) and (i == len(sims) - 1 or s <= sims[i + 1])
        if (valley and (s < floor or d >= depth)) or s < floor - 0.1:
            cuts.add(i + 1)
        elif texts[i + 1] and shift_cue(texts[i + 1]) and s < cs.CUE_SIMILARITY:
            cuts.add(i + 1)
    return cuts


def _before(floor: float, depth: float) -> Variant:
    return lambda f, u, t, _w: before(_unit(f + u), t, floor, depth)


def _rate(length: float, block: int) -> Variant:
    return lambda f, u, t, _w: rate(f, u, t, length, block)


def _tiling(whole: bool = False, **kw: Any) -> Variant:
    """``tiling`` with ``kw``; ``whole``: the exchanges' whole texts go in as ``all_texts`` (lexical)."""
    if whole:
        return lambda f, u, t, w: tiling(f, u, t, all_texts=[" ".join(x) for x in w], **kw)
    return lambda f, u, t, _w: tiling(f, u, t, **kw)


def variants() -> dict[str, Variant]:
    """Every variant tried, by name (see bench/README.md for what each means)."""
    out: dict[str, Variant] = {}

    defaults = ChunkSettings()

    def valleys(full: np.ndarray, _user: np.ndarray, texts: list[str], _turns: Turns) -> set[int]:
        return cs.valley_boundaries(full, texts, defaults.boundary_similarity, defaults.boundary_depth)

    def learned(threshold: float) -> Variant:
        return lambda f, _u, _t, w: cs.learned_boundaries(f, w, threshold)

    out[f"learned (chunk_segment.py's default): threshold {defaults.boundary_threshold}"] = learned(
        defaults.boundary_threshold)
    for threshold in (0.35, 0.4, 0.5, 0.55):
        out[f"learned, threshold {threshold}"] = learned(threshold)
    out["valleys (chunk_segment.py's hand rule): block 3, full text, floor 0.40, depth 0.10"] = valleys
    out["before: block 2, full text + user turn, floor 0.20, depth 0.30"] = _before(0.20, 0.30)
    for floor, depth in itertools.product((0.2, 0.3, 0.4, 0.5, 0.6), (0.1, 0.3)):
        out[f"before's rule, floor {floor}, depth {depth}"] = _before(floor, depth)
    # Baselines: what F1 with a one-message tolerance gives for nothing on sets of short topics.
    out["baseline: no cut"] = lambda f, u, t, _w: set()
    out["baseline: a cut at every exchange"] = lambda f, u, t, _w: set(range(1, len(f)))
    out["baseline: a cut every 2 exchanges"] = lambda f, u, t, _w: set(range(2, len(f), 2))
    grid = itertools.product((0.5, 1.0), (2, 3), (0, 1), (0.5, 1.0, 1.5, 99.0), (1, 3), (0.0, 0.4))
    for mix, block, width, c, gap, floor in grid:
        out[f"adaptive mix {mix} block {block} smooth {width} c {c} min {gap} floor {floor}"] = _tiling(
            mix=mix, block=block, width=width, c=c, min_gap=gap, floor=floor)
    for mix, block, c, dmin, floor in itertools.product((0.5, 0.75, 1.0), (3, 4), (0.5, 1.0, 1.5), (0.05, 0.1, 0.15, 0.2),
                                                        (0.2, 0.3, 0.4)):
        out[f"adaptive+dmin mix {mix} block {block} c {c} dmin {dmin} floor {floor}"] = _tiling(
            mix=mix, block=block, c=c, dmin=dmin, floor=floor)
    for mix, near, c, dmin, floor in itertools.product((0.75, 1.0), (0.25, 0.5), (1.5, 2.0, 99.0), (0.08, 0.1, 0.12),
                                                       (0.35, 0.4, 0.45)):
        out[f"fine mix {mix} block 3 near {near} c {c} dmin {dmin} floor {floor}"] = _tiling(
            mix=mix, block=3, near=near, c=c, dmin=dmin, floor=floor)
    for length, block in itertools.product((2.0, 2.5, 3.0, 4.0), (2, 3)):
        out[f"rate: deepest valleys, one per {length} exchanges, block {block}"] = _rate(length, block)
    for lex in (0.25, 0.5):
        for c in (1.0, 99.0):
            out[f"adaptive mix 0.5 block 2 lexical {lex} c {c}"] = _tiling(lex=lex, c=c, whole=True)
    for c in (0.0, 0.25, 0.5, 1.0):
        out[f"sims mix 0.5 block 2 c {c}"] = _tiling(rule="sims", c=c)
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--set", action="append", default=[], dest="sets", help="sets that choose the variant")
    parser.add_argument("--held", action="append", default=[], help="sets only reported")
    parser.add_argument("--cache", type=Path, help="folder of the public sets (bench/segmentation_sets.py)")
    parser.add_argument("--embed-cache", type=Path, help="pickle of embeddings by text hash (outside the repository)")
    parser.add_argument("--only", help="run only the variants whose name this regular expression finds")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args(argv)
    embedder = cached_embedder(args.embed_cache)
    data = {name: prepare(load_set(name, args.cache), embedder) for name in args.sets + args.held}
    if getattr(embedder, "computed", 0):  # nothing new: leave the file to any other run
        embedder.save()
    none = {name: evaluate(data[name], lambda f, u, t, _w: set()) for name in args.sets}
    results: dict[str, dict[str, Any]] = {}
    for vname, variant in variants().items():
        if args.only and not re.search(args.only, vname):
            continue
        results[vname] = {name: evaluate(d, variant) for name, d in data.items()}
        r = results[vname]
        r["dev_f1"] = round(float(np.mean([r[s]["f1"] for s in args.sets])), 3) if args.sets else 0.0
        # The choice: F1 less WindowDiff, so a gain bought by cutting everywhere does not count.
        r["dev_choice"] = round(float(np.mean([r[s]["f1"] - r[s]["windowdiff"] for s in args.sets])), 3) if args.sets else 0.0
        r["fair"] = all(r[s]["pk"] <= none[s]["pk"] and r[s]["windowdiff"] <= none[s]["windowdiff"] for s in args.sets)
    if args.json:
        print(json.dumps(results))
        return 0
    names = args.sets + args.held
    print("variant | fair | dev mean F1 | dev F1 − WD | " + " | ".join(f"{n} F1/Pk/WD" for n in names))
    for vname, r in sorted(results.items(), key=lambda kv: (not kv[1]["fair"], -kv[1]["dev_f1"])):
        print(f"{vname} | {'yes' if r['fair'] else 'no'} | {r['dev_f1']:.3f} | {r['dev_choice']:.3f} | " + " | ".join(
            f"{r[n]['f1']:.3f}/{r[n]['pk']:.3f}/{r[n]['windowdiff']:.3f}" for n in names))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
