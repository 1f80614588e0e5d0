"""The fusion variants `bench/recall_quality.py --variants` scores, in families.

A family is one idea with its free parameter on a small grid; `--variants` reports each member
on the dev file and, per family, left one conversation out (the member best on the other
conversations, scored on the held-out one). Every variant is a `BenchWeights` change: the
product's weights (which the product runs from settings alone), from the sixth round the number
of candidates taken from each list (`recall.top_k`), and the knobs of the variants the product
did not adopt (min-max, peaked weights, kin support, the prompt lift: bench/scoring_variants.py).
"""

from bench.scoring_variants import BenchWeights as BenchWeights  # re-exported: the variants' weights
from memvault.recall.scoring import ScoringWeights


# The recall.top_k that rounds one to five were measured at (cases captured deeper are cut to it).
ROUNDS_TOP_K = 40


# Seed 000's weights, what the first three rounds were measured against (the product's
# defaults changed after the fourth round: every variant states every weight it moves).
SEED = {"w_cos": 0.55, "w_lex": 0.20, "w_rrf": 0.25, "rrf_k": 60, "reply_damping": 0.8,
        "w_exact": 0.0, "w_date": 0.0, "w_when": 0.0, "reply_statement_damping": None, "guess_shift": 0.0,
        "w_content": 0.0}
# The fifth round's choice, the defaults the sixth round was measured against.
FIFTH = {"w_cos": 0.35, "w_lex": 0.40, "w_rrf": 0.25, "rrf_k": 10, "reply_damping": 0.9, "w_exact": 0.1,
         "w_date": 0.2, "w_when": 0.15, "reply_statement_damping": None,
         "guess_shift": 0.0, "w_content": 0.0}


def fusion_variants(defaults: ScoringWeights) -> dict[str, dict[str, ScoringWeights]]:
    """Family name → {variant name: weights}."""
    families: dict[str, dict[str, ScoringWeights]] = {}
    fifth = BenchWeights(**defaults.model_dump(), top_k=ROUNDS_TOP_K).model_copy(update=FIFTH)
    base = fifth.model_copy(update=SEED)

    def family(name: str, changes: dict[str, dict[str, object]]) -> None:
        families[name] = {f"{name}: {label}": base.model_copy(update=change) for label, change in changes.items()}

    family("seed weights", {"cos .55 lex .20 rrf .25": {}})
    # Calibration by weight: the lists' raw scales kept, their shares moved.
    family("lexical share", {f"cos {c:.2f} lex {x:.2f}": {"w_cos": c, "w_lex": x}
                             for c, x in ((0.45, 0.30), (0.35, 0.40), (0.25, 0.50))})
    # Per-list normalisation: each list rescaled over the query's own hits, best 1, worst 0.
    family("min-max per list", {"cosine": {"cos_norm": "minmax"}, "bm25": {"lex_norm": "minmax"},
                                "both": {"cos_norm": "minmax", "lex_norm": "minmax"}})
    # Rank-based: reciprocal-rank fusion with a sharper k, and with a larger share.
    family("rrf inside", {f"k {k} rrf {r:.2f}": {"rrf_k": k, "w_rrf": r, "w_cos": 0.55 - (r - 0.25)}
                          for k in (10, 30) for r in (0.25, 0.45)})
    # Query-dependent weights: a share of the weaker weight moves to the list whose best stands out.
    family("peaked weights", {f"gain {g:g}": {"peak_gain": g} for g in (0.5, 1.0)})
    # Lexical-first gate for exact tokens (numbers, ids, names).
    family("exact tokens", {f"w_exact {x:g}": {"w_exact": x} for x in (0.05, 0.1, 0.2, 0.4)})
    # Date-aware priors: a node of the period the query names; a dating turn on a when-question.
    family("date prior", {f"w_date {x:g}": {"w_date": x} for x in (0.03, 0.06, 0.12, 0.2)})
    family("when prior", {f"w_when {x:g}": {"w_when": x} for x in (0.02, 0.05, 0.1, 0.15)})
    # Combinations of what helped alone (second round, after the single families above).
    shares = {"cos .35 lex .40 rrf .25": (0.35, 0.40, 0.25), "cos .30 lex .35 rrf .35": (0.30, 0.35, 0.35),
              "cos .25 lex .50 rrf .25": (0.25, 0.50, 0.25)}
    priors = {"": {}, " + date .12 when .1": {"w_date": 0.12, "w_when": 0.1}}
    family("combined", {f"{name} k10{label}": {"w_cos": c, "w_lex": x, "w_rrf": r, "rrf_k": 10, **prior}
                        for name, (c, x, r) in shares.items() for label, prior in priors.items()})
    # Third round: the best combination so far with what was left out of it.
    best = {"w_cos": 0.35, "w_lex": 0.40, "w_rrf": 0.25, "rrf_k": 10, "w_date": 0.12, "w_when": 0.1}
    family("combined further", {"+ peaked weights gain 1": {**best, "peak_gain": 1.0},
                                "+ exact tokens 0.1": {**best, "w_exact": 0.1},
                                "+ peaked gain 1, exact 0.1": {**best, "peak_gain": 1.0, "w_exact": 0.1},
                                "date .2 when .15": {**best, "w_date": 0.2, "w_when": 0.15}})
    # Fourth round: around the best of the third, the lifts and the shares once more.
    best = {**best, "w_date": 0.2, "w_when": 0.15}
    family("combined, fourth round", {"reply .7": {**best, "reply_damping": 0.7},
                                      "reply .9": {**best, "reply_damping": 0.9},
                                      "rrf k 5": {**best, "rrf_k": 5},
                                      "cos .30 lex .45": {**best, "w_cos": 0.30, "w_lex": 0.45}})
    # Fifth round: the exact-token term (for ids and numbers, which LoCoMo hardly has) on the
    # fourth round's best; "reply .9, exact .1" became the default.
    family("combined, fifth round", {"exact .1": {**best, "w_exact": 0.1},
                                     "reply .9, exact .1": {**best, "reply_damping": 0.9, "w_exact": 0.1},
                                     "reply .9, exact .2": {**best, "reply_damping": 0.9, "w_exact": 0.2}})
    # Sixth round (on the fifth round's choice, then the product's defaults): more candidates
    # per list before fusion, kin support (a hit its neighbour also lifts keeps a share of the
    # weaker score), the prompt lift (an answer hit lifts the hit it replies to).
    def on_fifth(name: str, changes: dict[str, dict[str, object]]) -> None:
        families[name] = {f"{name}: {label}": fifth.model_copy(update=change) for label, change in changes.items()}

    on_fifth("depth", {f"top_k {k}": {"top_k": k} for k in (40, 60, 80)})
    on_fifth("kin support", {f"kin {x:g}": {"kin_share": x} for x in (0.1, 0.2, 0.35, 0.5)})
    on_fifth("prompt lift", {f"prompt {x:g}": {"prompt_damping": x} for x in (0.3, 0.5, 0.7)})
    on_fifth("reply after a question", {f"statement reply {x:g}": {"reply_statement_damping": x}
                                          for x in (0.0, 0.3, 0.5, 0.7)})
    # Seventh round: the reply after a question with the depth, and the question's share
    # ("statement 0.5, question 1" at top_k 40 became the default).
    on_fifth("question reply and depth", {
        f"statement {x:g}, question {q:g}, top_k {k}": {"reply_statement_damping": x, "reply_damping": q, "top_k": k}
        for x in (0.0, 0.5) for q in (0.9, 1.0) for k in (40, 60, 80)})
    # The same at the depth recall already reads (top_k 40: a deeper list costs every query time).
    on_fifth("question reply at top_k 40", {
        f"statement {x:g}, question {q:g}": {"reply_statement_damping": x, "reply_damping": q}
        for x in (0.0, 0.5) for q in (0.9, 1.0)})
    families.update(per_embedder_variants(defaults))
    return families


# The product's defaults (chosen with MiniLM), written out so that the per-embedder families
# stay the same whatever defaults the run's embedder has.
PRODUCT = {"w_cos": 0.45, "w_lex": 0.30, "w_sentence": 0.5, "w_rrf": 0.25, "rrf_k": 10, "reply_damping": 1.0,
           "reply_statement_damping": 0.5, "w_exact": 0.1, "w_date": 0.2, "w_when": 0.15,
           "neighbour_damping": 0.55, "cos_norm": "raw", "lex_norm": "max", "peak_gain": 0.0,
           "kin_share": 0.0, "prompt_damping": 0.0, "guess_shift": 0.3, "w_content": 0.2, "content_full": 12}
# The prefix of every family meant for choosing the fusion again with another embedder
# (`--variants "per embedder"`): one weight at a time around the product's defaults, at the
# product's depth. `diversity` is left out: it acts when the recall block is filled
# (`select`), after the ranking these families are scored on, so it cannot move them.
PER_EMBEDDER = "per embedder"


def per_embedder_variants(defaults: ScoringWeights) -> dict[str, dict[str, ScoringWeights]]:
    """Family name → {variant name: weights}: the product's defaults and single changes to them."""
    product = BenchWeights(**defaults.model_dump(), top_k=ROUNDS_TOP_K).model_copy(update=PRODUCT)
    families: dict[str, dict[str, ScoringWeights]] = {}

    def family(name: str, changes: dict[str, dict[str, object]]) -> None:
        full = f"{PER_EMBEDDER}: {name}"
        # Each family holds the defaults too, so that left one out it may choose no change.
        members = {"defaults": {}, **changes}
        families[full] = {f"{full}: {label}": product.model_copy(update=change) for label, change in members.items()}

    family("defaults", {})
    family("shares", {f"cos {c:.2f} lex {x:.2f} rrf {r:.2f}": {"w_cos": c, "w_lex": x, "w_rrf": r}
                      for c, x, r in ((0.45, 0.30, 0.25), (0.25, 0.50, 0.25), (0.30, 0.35, 0.35), (0.40, 0.45, 0.15))})
    family("rrf k", {f"k {k}": {"rrf_k": k} for k in (5, 20, 60)})
    family("question reply", {f"reply {x:g}": {"reply_damping": x} for x in (0.8, 0.9)})
    family("statement reply", {f"statement {x:g}": {"reply_statement_damping": x} for x in (0.0, 0.3, 0.7)})
    family("min-max", {"cosine": {"cos_norm": "minmax"}, "bm25": {"lex_norm": "minmax"},
                       "both": {"cos_norm": "minmax", "lex_norm": "minmax"}})
    family("peaked weights", {f"gain {g:g}": {"peak_gain": g} for g in (0.5, 1.0)})
    family("neighbour lift", {f"neighbour {x:g}": {"neighbour_damping": x} for x in (0.0, 0.3, 0.8)})
    # A joint grid of what helped one of the embedders alone (the shipped static table: a larger
    # cosine share, rrf_k 20, the question's reply at 0.9, the neighbour lift at 0.8; MiniLM and
    # the linear-map table: none), the cosine share taken one step further.
    shares = {"cos .35 lex .40 rrf .25": (0.35, 0.40, 0.25), "cos .45 lex .30 rrf .25": (0.45, 0.30, 0.25),
              "cos .55 lex .20 rrf .25": (0.55, 0.20, 0.25), "cos .30 lex .35 rrf .35": (0.30, 0.35, 0.35)}
    family("joint", {f"{name}, k {k}, reply {q:g}, neighbour {n:g}":
                     {"w_cos": c, "w_lex": x, "w_rrf": r, "rrf_k": k, "reply_damping": q, "neighbour_damping": n}
                     for name, (c, x, r) in shares.items() for k in (10, 20) for q in (0.9, 1.0) for n in (0.55, 0.8)})
    return families
