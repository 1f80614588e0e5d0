"""The real engines on a tiny random-weight llama: its gibberish must never corrupt the vault.

Decoded freely (`constrain=False`), chunk and cluster fall back (reason recorded); synthesize,
driven directly on fixed chunks, reaches the gate with real model output and is rejected with
the article left untouched. Decoded under the reply's schema (the default), the same weights
give replies that parse, and what they say is still checked before anything is kept.
The `openai` engine runs cluster against a real `mlx_lm.server` serving the same model.
"""

import pytest

from memvault.stages.chunk import run_chunk
from memvault.stages.cluster import run_cluster
from memvault.stages.synthesize import run_synthesize
from tests.helpers import ScriptedEngine

SMALL = {"chunk": {"max_output_tokens": 48}, "cluster": {"max_output_tokens": 48, "batch_size": 4},
         "synthesize": {"max_output_tokens": 64, "chunks_per_call": 3, "chunk_prompt_chars": 600}}


@pytest.fixture(scope="module")
def mlx_engine(tiny_model):
    from memvault.engines.mlx import MlxEngine

    engine = MlxEngine(str(tiny_model), temperature=0.0, seed=7, constrain=False)
    engine.load()
    return engine


def test_mlx_constrained_replies_parse_and_are_still_checked(make_ctx, tiny_model) -> None:
    from memvault.engines.mlx import MlxEngine

    engine = MlxEngine(str(tiny_model), temperature=0.0, seed=7)
    out = run_chunk(make_ctx(engine, **SMALL))
    assert out.conversations == 3 and out.calls > 0
    # Random weights under the schema: every reply is JSON of the reply's shape, so nothing
    # falls back for being unparseable; ids it invents are repaired or refused with a reason.
    assert not [f for f in out.fallbacks if "invalid" in f["reason"] or "JSON" in f["reason"]], out.fallbacks
    assert all(f["reason"] for f in out.fallbacks)


def test_mlx_gibberish_falls_back_at_chunk_and_cluster(make_ctx, mlx_engine) -> None:
    out = run_chunk(make_ctx(mlx_engine, **SMALL))
    assert out.conversations == 3 and out.fallback == 3 and out.calls == 6
    assert all(f["reason"] for f in out.fallbacks)
    clustered = run_cluster(make_ctx(mlx_engine, **SMALL))
    # One call and one retry with the error per batch of `batch_size` chunks (gibberish twice).
    batches = -(-clustered.chunks // SMALL["cluster"]["batch_size"])
    assert clustered.fallback == clustered.chunks > 0 and clustered.calls == 2 * batches
    assert mlx_engine.prefix_reuses > 0  # the shared Meta prefix was prefilled once and reused


def test_mlx_gibberish_reaches_no_article(make_ctx, mlx_engine) -> None:
    run_chunk(make_ctx(ScriptedEngine()))
    run_cluster(make_ctx(ScriptedEngine()))
    ctx = make_ctx(mlx_engine, **SMALL)
    out = run_synthesize(ctx)
    assert out.rejected == 1 and out.created == 0 and out.calls == 2
    assert not ctx.vault.article_path("Scripted Topic").exists()
    assert ctx.rejected["Scripted_Topic"] and ctx.vault.talk_path("Scripted Topic").exists()
    assert ctx.ledger.synthesized_chunks("Scripted Topic") == []


def test_openai_engine_against_mlx_lm_server(make_ctx, mlx_server) -> None:  # noqa: F811
    from memvault.engines.openai import OpenAIEngine

    run_chunk(make_ctx(ScriptedEngine()))
    with OpenAIEngine(mlx_server, timeout=120, temperature=0.0) as engine:
        out = run_cluster(make_ctx(engine, **SMALL))
    assert out.calls == 2 and out.fallback == out.chunks == 3
    assert all("invalid ClusterReply" in f["reason"] for f in out.fallbacks)
