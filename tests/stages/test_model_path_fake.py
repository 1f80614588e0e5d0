"""The model path of chunk, cluster and synthesize driven by a fake engine: success, invalid
JSON, wrong or missing ids, preamble, truncated output, gate failures, budgets, hand edits."""

import json

import git

from memvault.engines import FakeEngine
from memvault.hygiene.noise import MEMVAULT_SELF_CALL_SENTINEL
from memvault.stages.chunk import run_chunk
from memvault.stages.cluster import run_cluster
from memvault.stages.synthesize import run_synthesize
from tests.helpers import ScriptedEngine

BAD_JSON = "{chunks: [oops"
TRUNCATED = '{"chunks": [{"start": "m1", "end": "m'


def chunk_reply(last: int, preamble: str = "") -> str:
    return preamble + json.dumps({"chunks": [{"start": "m1", "end": f"m{last // 2}", "label": "first"},
                                             {"start": f"m{last // 2 + 1}", "end": f"m{last + 1}", "label": "second"}]})


def windows_sizes(ctx) -> list[int]:
    from memvault.stages.chunk import exchanges
    return [sum(len(g) for g in exchanges(ctx.ledger.active_thread(c))) for c in ctx.ledger.conversations_to_chunk()]


def test_chunk_success_preamble_invalid_truncated_and_wrong_ids(make_ctx) -> None:
    probe = make_ctx(FakeEngine([]))
    sizes = windows_sizes(probe)
    assert len(sizes) == 3
    engine = FakeEngine([
        chunk_reply(sizes[0], preamble="Sure! Here is the JSON you asked for:\n"),  # preamble + off by one
        BAD_JSON, TRUNCATED,                                                       # invalid twice → fallback
        # valid JSON, but an unknown id mid-way and most messages in no chunk: no repair → fallback
        json.dumps({"chunks": [{"start": "m1", "end": "m2", "label": "a"}, {"start": "zz", "end": "m3", "label": "b"}]}),
    ])
    ctx = make_ctx(engine)
    out = run_chunk(ctx)
    assert out.model == 1 and out.fallback == 2 and out.conversations == 3
    reasons = [f["reason"] for f in out.fallbacks]
    assert "invalid ChunkReply" in reasons[0] and "unusable chunk ids" in reasons[1]
    assert out.calls == 4 and out.tokens > 0 and engine.responses == []
    for call in engine.calls:
        assert MEMVAULT_SELF_CALL_SENTINEL in call.prompt and MEMVAULT_SELF_CALL_SENTINEL in call.system
        # chunking carries no Meta page (memvault.prompts.STAGE_META)
        assert call.kwargs["cache_prefix"] == call.system and "Meta/" not in call.system
    results = ctx.ledger.unit_results("chunk")
    assert sorted(r.method for r in results.values()) == ["fallback", "fallback", "model"]
    assert all(r.prompt_hash == out.prompt_hash for r in results.values())
    # every message of every conversation is in exactly one chunk
    chunks = [ctx.ledger.chunk(c) for c, _ in ctx.ledger.unassigned_chunks()]
    for cid in ctx.ledger.conversation_ids():
        ids = [m for c in chunks if c.conversation_id == cid for m in c.message_ids]
        assert len(ids) == len(set(ids)) > 0
    assert run_chunk(make_ctx(FakeEngine([]))).conversations == 0  # nothing changed: no call


def test_cluster_proposals_unknown_names_and_invalid_output(make_ctx) -> None:
    run_chunk(make_ctx(ScriptedEngine()))
    ctx = make_ctx(FakeEngine([]))
    n = len(ctx.ledger.unassigned_chunks())
    assert n == 3
    engine = FakeEngine([
        json.dumps({"assignments": [
            {"chunk": "c1", "buckets": [], "new_bucket": {"name": "Home Lab Backups", "description": "NAS backups."}},
            {"chunk": "c2", "buckets": [], "new_bucket": {"name": "home lab  backups", "description": "Backups."}},
            {"chunk": "c3", "buckets": ["No Such Bucket"]}]}),
    ])
    ctx = make_ctx(engine, cluster={"batch_size": 4})
    out = run_cluster(ctx)
    assert out.buckets_new == 1 and out.proposed == 2
    assert out.fallbacks and "unknown bucket name(s) 'No Such Bucket'" in out.fallbacks[0]["reason"]
    assert "No Such Bucket" not in (ctx.vault.meta_dir / "Buckets.md").read_text()
    assert "## Home Lab Backups" in (ctx.vault.meta_dir / "Buckets.md").read_text()
    assert ctx.ledger.pending_bucket_pages() == {}
    # Buckets.md grew, so the prompt hash changed: the fallback chunk is asked once more …
    again = run_cluster(make_ctx(FakeEngine([BAD_JSON, BAD_JSON])))
    assert again.calls == 2
    # … and then never again while the prompt and the Meta pages stay as they are.
    assert run_cluster(make_ctx(FakeEngine([]))).calls == 0


def test_cluster_invalid_json_falls_back_to_centroids(make_ctx) -> None:
    run_chunk(make_ctx(ScriptedEngine()))
    out = run_cluster(make_ctx(FakeEngine([BAD_JSON, "I cannot help with that."])))
    assert out.fallback == 3 and all("invalid ClusterReply" in f["reason"] for f in out.fallbacks)
    assert out.calls == 2


def prepared(make_ctx):
    run_chunk(make_ctx(ScriptedEngine()))
    run_cluster(make_ctx(ScriptedEngine()))
    ctx = make_ctx(FakeEngine([]))
    pending = ctx.ledger.pending_by_bucket()
    assert list(pending) == ["Scripted Topic"] and len(pending["Scripted Topic"]) == 3
    return pending["Scripted Topic"]


def test_synthesize_success_writes_a_gated_article_citing_its_conversations(make_ctx) -> None:
    prepared(make_ctx)
    ctx = make_ctx(ScriptedEngine(), synthesize={"chunks_per_call": 2})
    out = run_synthesize(ctx)
    assert out.created == 1 and out.updated == 1 and out.calls == 2 and out.rejected == 0
    text = ctx.vault.article_path("Scripted Topic").read_text()
    assert text.startswith("# Scripted Topic\n") and text.count("A scripted statement") == 3
    assert len(ctx.ledger.synthesized_chunks("Scripted Topic")) == 3
    assert run_synthesize(make_ctx(FakeEngine([]))).calls == 0  # nothing new: no call


def test_synthesize_failures_leave_the_article_untouched_and_park_after_max_attempts(make_ctx) -> None:
    prepared(make_ctx)
    path = make_ctx(FakeEngine([])).vault.article_path("Scripted Topic")
    chatter = json.dumps({"lead": "As an AI language model, I cannot know this.", "edits": [
        {"section": "Notes", "text": "Something.[^deadbeefcafe]"}]})
    replies = [
        [BAD_JSON, TRUNCATED],          # invalid JSON, then truncated
        [chatter],                      # preamble/refusal + unknown id → the gate rejects
        ["Here you go: " + json.dumps({"lead": "", "edits": []})],  # preamble, no edits
    ]
    for n, queue in enumerate(replies, start=1):
        ctx = make_ctx(FakeEngine(queue), synthesize={"chunks_per_call": 3, "max_attempts": 3})
        out = run_synthesize(ctx)
        assert out.rejected == 1 and not path.exists()
        assert "Scripted_Topic" in ctx.rejected
    reasons = " ".join(ctx.rejected["Scripted_Topic"])
    assert "the model proposed no edits" in reasons
    talk = ctx.vault.talk_path("Scripted Topic").read_text()
    assert "invalid SynthesisReply" in talk and "unknown conversation conv:deadbeefcafe" in talk
    assert "model chatter" in talk
    assert out.parked == 3 and make_ctx(FakeEngine([])).ledger.pending_by_bucket() == {}


def test_budget_stops_cleanly_and_the_next_run_finishes(make_ctx) -> None:
    first = run_chunk(make_ctx(ScriptedEngine(), max_tokens=1))
    assert first.conversations == 1 and first.waiting == 2 and "token budget" in first.stopped
    second = run_chunk(make_ctx(ScriptedEngine()))
    assert second.conversations == 2 and "stopped" not in second.report()


def test_a_hand_edited_article_keeps_its_edit_when_material_is_added(make_ctx) -> None:
    from stores.vault import Vault

    # One conversation chunked and synthesized first; the other two arrive later.
    run_chunk(make_ctx(ScriptedEngine(), max_tokens=1))
    run_cluster(make_ctx(ScriptedEngine(), cluster={"min_support": 1}))  # its proposal alone makes the bucket
    ctx = make_ctx(ScriptedEngine(), synthesize={"chunks_per_call": 1})
    assert [len(ids) for ids in ctx.ledger.pending_by_bucket().values()] == [1]
    run_synthesize(ctx)
    vault = Vault(ctx.vault.home)
    vault.commit("memvault run 1")
    path = vault.article_path("Scripted Topic")
    edited = path.read_text().replace("collects scripted notes.", "collects scripted notes, as Sam wrote by hand.")
    path.write_text(edited)
    run_chunk(make_ctx(ScriptedEngine()))
    run_cluster(make_ctx(ScriptedEngine()))
    ctx = make_ctx(ScriptedEngine(), synthesize={"chunks_per_call": 1})
    out = run_synthesize(ctx)
    assert out.hand_edited == ["Scripted_Topic"] and out.updated == 2
    text = path.read_text()
    assert "as Sam wrote by hand." in text and text.count("A scripted statement") == 3
    # committed by someone else: still recognised as a hand edit
    repo = git.Repo(ctx.vault.home)
    repo.git.add(A=True)
    repo.index.commit("my edit", author=git.Actor("Sam", "sam@example.com"))
    from memvault.stages.synthesize import article_states
    assert article_states(ctx, ["Scripted_Topic"])[1] == ["Scripted_Topic"]
