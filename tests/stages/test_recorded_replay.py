"""A real small model's recorded replies, replayed in order through chunk, cluster and synthesize.

Each stages recording in tests/fixtures/replies/ (bench/record_replies.py, the mlx engine or
transformers) holds what SmolLM2-135M-Instruct answered to every prompt the three stages sent
over its samples. Replayed with
the fake engine on the same samples, each stage asks the same number of questions, uses every
reply, and leaves the ledger and the vault consistent: every message in exactly one chunk, each
unit's method recorded (with a reason when it fell back), and an article written only when the
gate passed it — a rejected one leaves no file, no synthesized chunk, and a Talk note.
"""

import hashlib
import json
from pathlib import Path
from typing import Any

import pytest

from memvault.engines import FakeEngine, NoneEngine
from memvault.stages.chunk import run_chunk
from memvault.stages.cluster import run_cluster
from memvault.stages.synthesize import run_synthesize
from tests.helpers import FIXTURES, SAMPLES

RECORDINGS = [p for p in sorted((FIXTURES / "replies").glob("*.json"))
              if "samples" in json.loads(p.read_text(encoding="utf-8"))]


@pytest.fixture(params=RECORDINGS, ids=[p.stem for p in RECORDINGS])
def recorded(request: pytest.FixtureRequest) -> dict[str, Any]:
    data: dict[str, Any] = json.loads(request.param.read_text(encoding="utf-8"))
    return data


@pytest.fixture
def stage_home(tmp_path: Path, recorded: dict[str, Any]) -> Path:
    """The samples the replies were recorded over, ingested into a fresh home (replaces the subset)."""
    import shutil

    from memvault.ops.home import init_home
    from memvault.config.settings import load_settings
    from stores.ledger import Ledger
    from memvault.stages.ingest import ingest_roots

    home = tmp_path / "home"
    init_home(home)
    for rel in recorded["samples"]:
        shutil.copytree(SAMPLES / rel, tmp_path / "src" / rel)
    settings = load_settings(home)
    ledger = Ledger(settings.ledger_path)
    try:
        ingest_roots(ledger, settings, [("auto", tmp_path / "src")])
    finally:
        ledger.close()
    return home


def replayed(data: dict[str, Any], stage: str) -> tuple[Any, list[dict[str, Any]]]:
    """The engine for ``stage``: the recorded replies, or no model for a stage the recording left to `none`."""
    calls = [c for c in data["calls"] if c["stage"] == stage]
    if stage not in data.get("model_stages", ("chunk", "cluster", "synthesize")):
        return NoneEngine(), calls
    return FakeEngine([c["reply"] for c in calls], model=data["model"]), calls


def check_replayed(engine: Any, calls: list[dict[str, Any]]) -> None:
    """The stage asked as many questions as the model answered, and used every reply."""
    if isinstance(engine, FakeEngine):
        assert engine.responses == [] and len(engine.calls) == len(calls)


def test_recorded_replies_replay_through_the_stages_and_leave_ledger_and_vault_consistent(
        make_ctx, recorded: dict[str, Any]) -> None:
    engine, calls = replayed(recorded, "chunk")
    ctx = make_ctx(engine)
    run_chunk(ctx)
    check_replayed(engine, calls)
    if isinstance(engine, FakeEngine):
        # The very prompts the model answered (the chunk prompt is fixed by the samples and prompts/chunk.txt).
        assert [hashlib.sha256(c.prompt.encode()).hexdigest()[:16] for c in engine.calls] == \
            [c["prompt_sha256"] for c in calls], "chunk prompts changed since recording — re-record the fixture"
        results = ctx.ledger.unit_results("chunk")
        assert set(results) == set(ctx.ledger.conversation_ids())
        assert all(r.method == "model" or (r.method == "fallback" and r.reason) for r in results.values())
    chunks = [ctx.ledger.chunk(c) for c, _ in ctx.ledger.unassigned_chunks()]
    for cid in ctx.ledger.conversation_ids():
        ids = [m for c in chunks if c.conversation_id == cid for m in c.message_ids]
        assert len(ids) == len(set(ids)) > 0
        assert set(ids) == {m.native_id for m in ctx.ledger.active_thread(cid) if m.text.strip()} - \
            {m.native_id for m in ctx.ledger.active_thread(cid) if m.low_value or m.kind == "meta"}

    engine, calls = replayed(recorded, "cluster")
    ctx = make_ctx(engine)
    clustered = run_cluster(ctx)
    check_replayed(engine, calls)
    assert all(f["reason"] for f in clustered.fallbacks or [])
    buckets = {b.name for b in ctx.ledger.buckets()}
    assert set(ctx.ledger.pending_by_bucket()) <= buckets

    engine, calls = replayed(recorded, "synthesize")
    # A recording of one synthesize unit was made under a token budget that stops after it.
    ctx = make_ctx(engine, max_tokens=1 if recorded.get("model_stages") == ["synthesize"] else 10**9)
    pending = ctx.ledger.pending_by_bucket()
    out = run_synthesize(ctx)
    check_replayed(engine, calls)
    assert out.calls == len(calls)
    assert out.created + out.updated + out.rejected >= 1 or not calls
    for bucket in pending:
        stem = ctx.ledger.bucket_stem(bucket)
        path = ctx.vault.article_path(bucket)
        if stem in ctx.rejected:
            # Conservative synthesis: a rejected reply is a no-op for the article, with its reason on Talk.
            assert not path.exists() and ctx.ledger.synthesized_chunks(bucket) == []
            assert ctx.vault.talk_path(bucket).exists() and all(ctx.rejected[stem])
        elif path.exists():
            text = path.read_text(encoding="utf-8")
            assert text.startswith(f"# {bucket}\n") and "## References" in text
            assert set(ctx.ledger.synthesized_chunks(bucket)) == set(pending[bucket])
        else:  # not reached: the budget stopped the stage before this bucket
            assert out.stopped and ctx.ledger.synthesized_chunks(bucket) == []
    # No half-written file anywhere in the vault.
    assert not [p for p in ctx.vault.home.rglob("*") if p.suffix in {".tmp", ".partial"}]
