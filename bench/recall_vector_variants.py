"""Ranking variants that read the nodes' vectors, scored on `bench/recall_quality.py`'s cases
left one conversation out (issue 29's fourth round; none adopted).

The cases keep no vectors (scoring does not read them), so each message node's vector is
looked up again in the embedding cache (``--cache``) by the text the index embedded
(``rows_for``'s ``embed_text``), and each question's by its text. Families, on the third
round's product (no content prior), each with "none":

- **rocchio**: the query vector moved toward the mean of the vectors of the first ranking's
  ``m`` best message nodes (``q + β·mean``, normalised), every candidate's cosine computed
  again against it, the list scored again (all questions, or only guesses);
- **content mmr**: on a question that names someone, the first 30 places picked greedily by
  score less λ × the largest cosine to a node already placed (of the named person's turns
  only, or of any node): diversity of content, not of session.

The fifth round (``--family "fifth round"``, on the product before it: top_k 40, content prior 0.2) gathers
candidates the two searches miss, each on every question or only on guesses ("Would Ann …"):

- **speaker pool**: on a question that names a speaker, that person's ``k`` turns nearest the
  query by cosine (over every message of the conversation, as a vector search filtered on the
  speaker would return them) join the candidates (84 of 85 open-domain evidence turns are the
  named person's; among that person's turns cosine ranks them 2–3× higher than among all);
- **near turns**: a message hit lifts the turns ``s`` places away in its session (2: the same
  speaker's previous and next turn; 2 and 4) by its base × ``d`` (14 of 53 open-domain evidence
  turns missing from the first ten sit within four turns of one of them);
- **wider pools** (adopted: ``top_k`` 100): ``top_k`` 60–100 per list (on every question, on
  guesses only, on guesses with ``guess_shift`` 0.3): needs cases captured with ``top_k`` 100;
- **guess hop**: the second hop (``hop_k`` 0–20, ``w_hop`` 0–0.2) on guesses only, or on all;
- **guess reply / speaker**: on guesses, the reply lift 0.5–0.75 (0.25–0.5 after a statement) or
  ``w_speaker`` 0.2 / 0.3.

    .venv/bin/python bench/recall_vector_variants.py --data ../shared/eval/locomo/locomo_dev.json \\
        --cache EMB.pkl --cases CASES_HOP20.pkl --set recall.hop_k=20
    .venv/bin/python bench/recall_vector_variants.py --data ... --cache EMB.pkl --cases CASES_K100.pkl \\
        --set recall.top_k=100 --set recall.hop_k=40 --family "fifth round"
"""

import argparse
import hashlib
import json
import pickle
import sys
from collections.abc import Callable
from dataclasses import replace
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from memvault.recall.query import asks_guess, exact_tokens, speaker  # noqa: E402
from memvault.recall.scoring import Candidate, Scored, ScoringWeights  # noqa: E402
from memvault.stages.text import EMBED_CHARS  # noqa: E402

from bench import recall_quality as rq  # noqa: E402
from bench.recall_metrics import FIGURES, Tally, loo_report  # noqa: E402
from bench.fusion_variants import ROUNDS_TOP_K  # noqa: E402
from bench.pool_variants import MessageNodes, conversation_rows, fifth_round  # noqa: E402
from bench.scoring_variants import BenchWeights, score_variants  # noqa: E402

Vectors = dict[str, np.ndarray]
Ranker = Callable[[rq.Case, dict[str, tuple[str, str | None]]], list[str]]


def node_vectors(data: list[dict[str, Any]], cache: dict[str, np.ndarray], context_turns: int) -> Vectors:
    """Node id → the vector the index stored, from the embedding cache (messages: all of them)."""
    out: Vectors = {}
    for _, r in conversation_rows(data, context_turns):
        text = (r.get("embed_text") or f"{r['title']}\n{r['text']}")[:EMBED_CHARS]
        key = hashlib.sha1(text.encode()).hexdigest()
        if key in cache:
            out[r["id"]] = cache[key]
    return out


_FIRST: dict[tuple[int, str], list[Scored]] = {}  # (case, weights) -> the first ranking, shared by the members


def scored(case: rq.Case, w: BenchWeights, hits: list[Candidate] | None = None) -> list[Scored]:
    if hits is None:
        key = (id(case), w.model_dump_json())
        if key not in _FIRST:
            _FIRST[key] = scored(case, w, rq.cut_candidates(case.hits, w.top_k, w.hop_k)[0])
        return _FIRST[key]
    cut, dropped = rq.cut_candidates(case.hits, w.top_k, w.hop_k)
    store = {**case.lifted, **dropped}
    return score_variants(hits, lambda ids: {i: store[i] for i in ids if i in store},
                          w, datetime.now(timezone.utc), query=case.question)


def turns(ranked: list[Scored], nodes: dict[str, tuple[str, str | None]]) -> list[str]:
    return rq.turn_ranking([{"kind": nodes[s.id][0], "ref": nodes[s.id][1]} for s in ranked])


def rocchio(w: BenchWeights, vec: Vectors, qvec: Vectors, beta: float, m: int, guess_only: bool) -> Ranker:
    def rank(case: rq.Case, nodes: dict[str, tuple[str, str | None]]) -> list[str]:
        first = scored(case, w)
        if guess_only and not asks_guess(case.question):
            return turns(first, nodes)
        seeds = [s.id for s in first if s.id in vec and nodes.get(s.id, ("", None))[0] == "message"][:m]
        if not seeds or case.question not in qvec:
            return turns(first, nodes)
        q = qvec[case.question] + beta * np.mean([vec[i] for i in seeds], axis=0)
        q = q / np.linalg.norm(q)
        cut, _ = rq.cut_candidates(case.hits, w.top_k, w.hop_k)
        moved = [replace(c, cos=float(vec[c.id] @ q)) if c.id in vec and (c.cos is not None or c.fts_rank is not None)
                 else c for c in cut]
        return turns(scored(case, w, moved), nodes)
    return rank


def content_mmr(w: BenchWeights, vec: Vectors, lam: float, person_only: bool, depth: int = 30) -> Ranker:
    def rank(case: rq.Case, nodes: dict[str, tuple[str, str | None]]) -> list[str]:
        first = scored(case, w)
        names = frozenset(t for t in exact_tokens(case.question) if t.isalpha())
        if not names:
            return turns(first, nodes)
        def counted(s: Scored) -> bool:
            return not person_only or speaker(s.candidate.text) in names

        pool, rest = first[: 2 * depth], first[2 * depth:]
        out: list[Scored] = []
        placed: list[np.ndarray] = []
        while pool and len(out) < depth:
            def adjusted(s: Scored) -> float:
                v = vec.get(s.id)
                if v is None or not placed or not counted(s):
                    return s.score
                return s.score - lam * max(float(v @ p) for p in placed)
            best = max(pool, key=adjusted)
            pool.remove(best)
            out.append(best)
            if best.id in vec and counted(best):
                placed.append(vec[best.id])
        return turns(out + pool + rest, nodes)
    return rank


def families(base: BenchWeights, vec: Vectors, qvec: Vectors) -> dict[str, dict[str, Ranker]]:
    none: Ranker = lambda case, nodes: turns(scored(case, base), nodes)  # noqa: E731
    out: dict[str, dict[str, Ranker]] = {}
    for guess_only in (False, True):
        name = "rocchio" + (" (guesses)" if guess_only else "")
        out[name] = {"none": none} | {f"beta {b:g}, m {m}": rocchio(base, vec, qvec, b, m, guess_only)
                                      for b in (0.3, 0.6, 1.0) for m in (3, 5)}
    out["content mmr"] = {"none": none} | {f"lambda {x:g}{', person' if p else ''}": content_mmr(base, vec, x, p)
                                           for x in (0.05, 0.1, 0.2) for p in (True, False)}
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--data", required=True, type=Path)
    ap.add_argument("--cache", required=True, type=Path, help="the embedding cache of recall_quality.py --cache")
    ap.add_argument("--cases", required=True, type=Path, help="the cases of recall_quality.py --cases")
    ap.add_argument("--set", action="append", default=[], help="the --set the cases were captured with")
    ap.add_argument("--family", default="", help="only families whose names contain this")
    args = ap.parse_args(argv)
    data = json.loads(args.data.read_text(encoding="utf-8"))
    cache: dict[str, np.ndarray] = pickle.loads(args.cache.read_bytes())
    overrides: dict[str, dict[str, Any]] = {}
    for item in args.set:
        key, _, value = item.partition("=")
        section, _, field = key.partition(".")
        overrides.setdefault(section, {})[field] = json.loads(value)
    # recall_quality.py pickles its cases run as a script: their classes live in __main__ there.
    main_module = sys.modules["__main__"]
    setattr(main_module, "Case", rq.Case)
    setattr(main_module, "ConversationCases", rq.ConversationCases)
    conversations: dict[str, rq.ConversationCases] = rq.load_cases(
        argparse.Namespace(cases=args.cases, model_file=None, static_table=None), data, overrides,
        rq.CachedEmbedder(args.cache))
    context_turns = int(overrides.get("index", {}).get("context_turns", 1))
    vec = node_vectors(data, cache, context_turns)
    qvec = {c.question: cache[k] for conv in conversations.values() for c in conv.cases
            if (k := hashlib.sha1(c.question.encode()).hexdigest()) in cache}
    base = BenchWeights(**ScoringWeights().model_dump(), hop_k=0).model_copy(update={"w_content": 0.0})
    every = families(base, vec, qvec) if "fifth" not in args.family else {}
    if not args.family or "fifth" in args.family:
        # The product before this round (top_k 40; cases captured deeper are cut to it).
        captured = overrides.get("recall", {}).get("top_k")
        product = BenchWeights(**ScoringWeights().model_dump(), hop_k=0, top_k=ROUNDS_TOP_K)
        every |= fifth_round(product, MessageNodes(data, conversations, context_turns), vec, qvec, captured)
    for family, members in every.items():
        if args.family not in family:
            continue
        per = {cid: {name: Tally() for name in members} for cid in conversations}
        for cid, conv in conversations.items():
            for name, rank in members.items():
                for case in conv.cases:
                    per[cid][name].add(rank(case, conv.nodes), case.gold, case.category)
        report = loo_report({family: list(members)}, per)[family]
        cats = report["categories"]
        print(f"{family:<22}" + " ".join(f"{report[k]:.4f}" for k in FIGURES)
              + f"  multi-hop R@10 {cats['multi-hop']['turn_R@10']:.3f}, open-domain R@10 {cats['open-domain']['turn_R@10']:.3f}"
              + "  chosen " + ", ".join(sorted(set(report["chosen"].values()))))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
