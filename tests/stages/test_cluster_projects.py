"""Cluster, no-model path, on real transcripts: projects stay apart, low-content chunks found nothing.

The transcripts are samples/, the shared format samples (tests/fixtures/formats) and one
Claude Code release session of another project (tests/fixtures/projects: `driftwood`, a
TypeScript monorepo whose release chatter — `create mode 100644 packages/…` — reads much like
tidepool's release day), run through the real ingest, chunk and cluster stages.
"""

import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.helpers import FIXTURES, SAMPLES


def _run(tmp: Path, embedder: Any, **overrides: Any) -> tuple[dict[str, set[str | None]], dict[str, Any]]:
    """Ingest, chunk and cluster everything; returns each bucket's projects and the cluster report."""
    from memvault.runs.budget import Budget
    from memvault.engines.none import NoneEngine
    from memvault.ops.home import init_home
    from memvault.config.settings import load_settings
    from stores.ledger import Ledger
    from stores.vault import Vault
    from memvault.stages.chunk import run_chunk
    from memvault.stages.cluster import run_cluster
    from memvault.stages.context import StageContext
    from memvault.stages.ingest import ingest_roots

    home, src = tmp / "home", tmp / "src"
    init_home(home)
    shutil.copytree(SAMPLES, src / "samples")
    shutil.copytree(FIXTURES / "formats", src / "formats")
    shutil.copytree(FIXTURES / "projects", src / "projects")
    settings = load_settings(home, **overrides)
    ledger = Ledger(settings.ledger_path)
    try:
        ingest_roots(ledger, settings, [("auto", src)])
        ctx = StageContext(settings=settings, ledger=ledger, vault=Vault(home), embedder=embedder, run_id="r1",
                           engine=NoneEngine(), budget=Budget(10**9, 3600))
        run_chunk(ctx)
        report = run_cluster(ctx).report()
        members: dict[str, set[str | None]] = {}
        for bucket, chunk_ids in ledger.pending_by_bucket().items():
            for chunk_id in chunk_ids:
                conv = ledger.conversation(ledger.chunk(chunk_id).conversation_id)
                members.setdefault(bucket, set()).add(conv.project if conv else None)
        return members, report
    finally:
        ledger.close()


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory, embedder: Any, fp32_embedder: Any) -> Iterator[dict[str, Any]]:
    yield {"default": _run(tmp_path_factory.mktemp("apart"), embedder),
           # The hand-rule segmentation: it cuts tidepool's release day into the release and the
           # 0.4.0 planning, and that release chunk is what reads like driftwood's (the learned
           # default keeps the session one chunk, which text alone no longer pairs with driftwood's).
           # fp32 MiniLM: its cosines put the two releases together; int8's differ by up to 0.03
           # and keep them just apart — the margin is for pairs this close, whichever is default.
           "text_only": _run(tmp_path_factory.mktemp("mixed"), fp32_embedder, cluster={"project_margin": 0.0},
                             chunk={"boundary_method": "valleys"}, embeddings={"model": "all-MiniLM-L6-v2"})}


def test_no_bucket_holds_two_projects(runs: dict[str, Any]) -> None:
    members, report = runs["default"]
    assert members, "no bucket was made at all"
    for bucket, projects in members.items():
        known = {p for p in projects if p}
        assert len(known) <= 1, f"{bucket} mixes {sorted(known)}"
    tidepool = [b for b, p in members.items() if "/Users/sam/src/tidepool" in p]
    assert tidepool and all("/Users/sam/src/driftwood" not in members[b] for b in tidepool)
    assert report["buckets_new"] >= 4  # the sample topics still form their buckets


def test_without_the_project_margin_release_chatter_of_two_projects_is_one_bucket(runs: dict[str, Any]) -> None:
    # The evidence at work: judged on text alone, driftwood's release joins tidepool's.
    members, _ = runs["text_only"]
    assert any({"/Users/sam/src/tidepool", "/Users/sam/src/driftwood"} <= p for p in members.values()), members


def test_chat_exports_still_join_project_buckets(runs: dict[str, Any]) -> None:
    # A chatgpt conversation has no project: it is judged on text and joins the homelab backups.
    members, _ = runs["default"]
    assert any({None, "/Users/sam/src/homelab"} <= p for p in members.values()), members


def test_low_content_chunks_found_no_bucket(runs: dict[str, Any]) -> None:
    _, report = runs["default"]
    # The format samples' image placeholder, bare TodoWrite call and "wow error" (at least).
    assert report["low_content"] >= 3
