"""bench/fusion_variants.py: the per-embedder families start from the product's defaults."""

from bench.fusion_variants import PER_EMBEDDER, PRODUCT, ROUNDS_TOP_K, BenchWeights, per_embedder_variants
from memvault.recall.scoring import ScoringWeights
from memvault.config.settings import RecallSettings

# The fields only the bench has: the candidate depths and the variants' knobs.
BENCH_ONLY = set(BenchWeights.model_fields) - set(ScoringWeights.model_fields)


def test_product_is_the_product_defaults() -> None:
    weights, recall, bench = ScoringWeights(), RecallSettings(), BenchWeights()
    assert bench.is_product()
    for name, value in PRODUCT.items():
        # A variant knob's product value is its off value (the product has no such knob).
        assert getattr(bench if name in BENCH_ONLY else weights, name) == value, name
        if name in RecallSettings.model_fields:
            assert getattr(recall, name) == value, name


def test_every_family_holds_the_defaults_and_moves_only_what_it_names() -> None:
    # Defaults of another embedder (here: any other weights) must not leak into the families.
    families = per_embedder_variants(ScoringWeights(w_cos=0.9, reply_damping=0.2))
    defaults = ScoringWeights().model_dump()
    assert families and all(name.startswith(PER_EMBEDDER) for name in families)
    for family, members in families.items():
        base = members[f"{family}: defaults"]
        assert base.model_dump(exclude=BENCH_ONLY) == defaults
        assert all(w.top_k == ROUNDS_TOP_K for w in members.values())
    shares = families[f"{PER_EMBEDDER}: shares"]
    moved = {k for w in shares.values() for k, v in w.model_dump(exclude=BENCH_ONLY).items() if v != defaults[k]}
    assert moved == {"w_cos", "w_lex", "w_rrf"}
