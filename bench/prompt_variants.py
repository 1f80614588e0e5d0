"""Block shapes and decisions of prompt-recall weighed on one split, in process, on one recall
per prompt (the companion of bench/prompt_precision.py, which runs the real hook).

For every prompt of the split (LoCoMo dev answerable questions and the unrelated real prompts
of bench/prompt_precision.py, same sources and halves) the recall runs once
(``MemoryService.scored_candidates``, query vectors cached in ``--work``); each block shape
(``memvault.recall.evidence.Shape``) and each number of units the decision weighs then shapes
its block and signals from it, and a grid of thresholds gives, per shape, the share of
answerable prompts injected, the share whose block holds a gold evidence turn (as
prompt_precision's ``in_block``), and the share of unrelated prompts injected. A gold turn's
opening in the block does not say its answer is: ``answer_held`` counts, among the questions
whose gold turn holds every content word of LoCoMo's answer, those whose block line for that
turn still holds them all (a hit cut short loses them). Parameters are chosen on ``--split
tune``; ``--split report`` exists to check a chosen row, never to choose.

    .venv/bin/python bench/prompt_variants.py --koala CACHE/koala_test_set.jsonl \\
        --hh CACHE/harmless-test.jsonl.gz --work CACHE/pp [--split tune]
"""

import argparse
import itertools
import json
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

from memvault.recall.evidence import HEADER, PASSAGE_GAP, SHORT_HEADER, Shape  # noqa: E402

# Each shape spelled out whole against the shipped one (Shape(), "shipped"): the fields a row
# names differ from it, the rest are the shipped values.
OLD = Shape(units=8, hit_chars=240, context_for=1, day_once=False, gap=PASSAGE_GAP, min_hit=60)  # the previous default
SHAPES = {
    "before-6u-hit360-query": OLD._replace(units=6, hit_chars=360, query_line=True, header=HEADER),
    "previous-8u-hit240-ctx1": OLD,
    "8u-hit240-ctx0": OLD._replace(context_for=0),
    "12u-hit160-ctx0": OLD._replace(units=12, hit_chars=160, context_for=0),
    "shipped before: hits cut plainly (no focus)": Shape(focus=False),
    "shipped: 14u-hit240-ctx0-day-once-one-title-min150-focus": Shape(),
    "shipped + passages 2 turns apart": Shape(gap=PASSAGE_GAP),
    "shipped + dated turns": Shape(day_once=False),
    "shipped + hits cut evenly to 60 (none dropped)": Shape(min_hit=60),
    "shipped + hit 150 (best on tune: cuts long agent turns before the answer)": Shape(hit_chars=150),
    "shipped + hit 150 + cut evenly to 60": Shape(hit_chars=150, min_hit=60),
    "shipped + 12 units": Shape(units=12),
    "shipped + 20 units": Shape(units=20),
    "shipped + hit 200, cut to 120 before dropped (more units, fewer answers)": Shape(hit_chars=200, min_hit=120),
    "shipped + hit 300": Shape(hit_chars=300),
    "shipped + best passage with context": Shape(context_for=1),
    # Not a candidate: 20 units with no budget, what the ranking alone puts in reach.
    "ceiling-20u-unbounded": Shape(units=20, hit_chars=160, header=SHORT_HEADER),
}


def answer_words(data: list[dict[str, Any]]) -> list[tuple[list[str], list[str]] | None]:
    """Per question of ``answerable(data)`` (same order): LoCoMo's answer as content words and
    the gold turns holding them all, or None when no gold turn does (the answer is inferred)."""
    from bench.recall_quality import evidence, sessions, turn_text
    from memvault.live.prompt_gate import content_words, words

    out: list[tuple[list[str], list[str]] | None] = []
    for sample in data:
        turns = {str(t["dia_id"]): turn_text(t) for _, _, _, ts in sessions(sample["conversation"]) for t in ts}
        for qa in sample.get("qa", []):
            ev = evidence(qa, set(turns))
            if ev and int(qa.get("category") or 0) in (1, 2, 3, 4):
                said = content_words(str(qa.get("answer")))
                holding = [turns[e] for e in ev if said and set(said) <= {w.split("'")[0] for w in words(turns[e])}]
                out.append((said, holding) if holding else None)
    return out


def answer_held(block: str, said: list[str], holding: list[str]) -> bool:
    """The block shows a gold turn holding the answer, and that turn's line still holds every answer word."""
    from bench.prompt_precision import in_block
    from memvault.live.prompt_gate import words

    lines = [ln for ln in block.splitlines() if any(in_block(ln, [t]) for t in holding)]
    return bool(lines) and set(said) <= {w.split("'")[0] for ln in lines for w in words(ln)}


def main() -> int:
    from memvault.ops.prompt_recall import evaluate
    from memvault.live.prompt_gate import GateParams, Signals, bounded_query
    from bench.prompt_precision import (answerable, build_home, half, in_block, reading_service, server_of, source_args,
                                         unrelated_prompts)

    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    source_args(ap)
    ap.add_argument("--split", choices=("tune", "report"), default="tune")
    ap.add_argument("--max-unrelated", type=float, default=0.015, help="a threshold row counts when it injects on at most this share")
    ap.add_argument("--min-answerable", type=float, default=0.95)
    ap.add_argument("--shapes", default="", help="comma-separated names of SHAPES to weigh (default: all)")
    ap.add_argument("--weigh", default="5", help="comma-separated numbers of units the decision weighs")
    ap.add_argument("--at", default="", help="w_coverage,min_evidence chosen on tune: measure there instead of searching")
    args = ap.parse_args()
    data = json.loads(args.data.read_text(encoding="utf-8"))
    home = build_home(data, args.work, server_of(args))
    every = answerable(data)
    ans = [x for x in every if x[0] == args.split]
    said = [a for x, a in zip(every, answer_words(data)) if x[0] == args.split]
    unrel = [x for x in unrelated_prompts(args.koala, args.hh, args.data.resolve().parents[2]) if half(x[1]) == args.split]
    service, embedder = reading_service(home, args.work)
    prompts = [(q, g) for _, q, g, _ in ans] + [(p, None) for _, p in unrel]
    found = [service.scored_candidates(bounded_query(q), None) for q, _ in prompts]
    embedder.save()
    rows: list[dict[str, Any]] = []
    chosen = [(n, s) for n, s in SHAPES.items() if not args.shapes or n in args.shapes.split(",")]
    for (name, shape), weigh in itertools.product(chosen, [int(w) for w in args.weigh.split(",")]):
        loose = GateParams(min_evidence=-10.0, min_cos=-1.0, weigh=weigh)
        budget = 100_000 if name.startswith("ceiling") else None  # what the ranking alone puts in reach
        got = [evaluate(service, q, session_id="bench-session", params=loose, max_chars=budget, shape=shape, found=f)
               for (q, _), f in zip(prompts, found)]
        held = [g is not None and bool(a.block) and in_block(a.block, g) for (_, g), a in zip(prompts, got)]
        sizes = [len(a.block) for a in got if a.block]
        checked = [(a.block, s) for a, s in zip(got, said) if s is not None]
        kept = sum(bool(b) and answer_held(b, *s) for b, s in checked) / max(len(checked), 1)
        best = None
        # Up to 3: another embedder's cosines (the static table's run high) put its thresholds past 2.
        grid = itertools.product([x / 20 for x in range(0, 21)], [x / 100 for x in range(30, 300)])
        fixed = [tuple(float(x) for x in args.at.split(","))] if args.at else None
        for w, t in fixed or grid:
            p = GateParams(w_coverage=w, min_evidence=t, weigh=weigh)

            def inject(s: Signals | None) -> bool:
                return s is not None and s.evidence(p) >= p.min_evidence

            inj = [inject(a.signals) for a in got]
            n_a = len(ans)
            u = sum(inj[n_a:]) / max(len(unrel), 1)
            a_rate = sum(inj[:n_a]) / n_a
            ev = sum(i and h for i, h in zip(inj[:n_a], held[:n_a])) / n_a
            if fixed or u <= args.max_unrelated and a_rate >= args.min_answerable and (best is None or (ev, a_rate) > (best["evidence_in_block"], best["answerable"])):
                best = {"w_coverage": w, "min_evidence": t, "answerable": round(a_rate, 4),
                        "evidence_in_block": round(ev, 4), "unrelated": round(u, 4)}
        row = {"shape": name, "weigh": weigh, "held_if_all_injected": round(sum(held[:len(ans)]) / len(ans), 4),
               "answer_held_if_all_injected": round(kept, 4), "answer_checked": len(checked),
               "mean_chars": round(sum(sizes) / max(len(sizes), 1)), "max_chars": max(sizes, default=0), "best": best}
        rows.append(row)
        print(json.dumps(row), flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
