"""The nightly flow, run for real (Prefect test harness, DuckDB, LanceDB, git, MiniLM)."""

import re
import shutil
from pathlib import Path

import git

from memvault.markdown.footnotes import citations
from memvault.config.settings import load_settings
from stores.ledger import Ledger
from stores.vault import Vault
from tests.helpers import SAMPLES, run_flow


def test_first_run_writes_articles_citing_their_conversations(demo_runs) -> None:
    home, report = demo_runs["home"], demo_runs["first"]
    assert report["status"] == "completed"
    assert report["stages"]["ingest"]["conversations_new"] == 11
    articles = Vault(home).list_articles()
    assert len(articles) >= 2
    with Ledger.open(load_settings(home), read_only=True) as ledger:
        for path in articles:
            cited = set(citations(path.read_text()))
            assert cited, f"{path.name} cites nothing"
            bucket = ledger.bucket_for_stem(path.stem)
            assert bucket is not None, f"{path.name} has no bucket"
            sources = {ledger.chunk(c).conversation_id for c in ledger.synthesized_chunks(bucket)}
            for short in cited:
                assert any(full.startswith(short) for full in sources), f"{path.name} cites conv:{short} it did not come from"
            assert all(any(full.startswith(s) for s in cited) for full in sources)
    assert set(report["articles_created"]) == {p.stem for p in articles}
    # A citation opens the cited passage: the vault's page of that conversation, at its message.
    assert re.search(r"^\[\^1\]: \[\[Conversations/conv-([0-9a-f]{8,})#m\d+\|conv:\1\]\] "
                     r"\(\d{4}-\d\d-\d\d, (claude-code|chatgpt)\) — ", articles[0].read_text(), re.M)


def test_run_commits_once_with_a_changelog_digest(demo_runs) -> None:
    home = demo_runs["home"]
    assert demo_runs["commits_after_first"] == 2  # init + the first run
    log = (home / "Meta" / "Changelog.md").read_text()
    assert demo_runs["first"]["run_id"] in log
    head = git.Repo(home).head.commit
    assert demo_runs["first"]["run_id"] in head.message
    assert (home / ".memvault" / "runs" / f"{demo_runs['first']['run_id']}.json").exists()


def test_second_run_with_nothing_new_changes_nothing(demo_runs) -> None:
    home, second = demo_runs["home"], demo_runs["second"]
    assert second["status"] == "completed"
    assert second["stages"]["ingest"]["conversations_new"] == 0
    assert second["stages"]["ingest"]["messages_new"] == 0
    assert second["stages"]["changelog"]["committed"] is None
    assert second["embedded_texts"] == 0
    assert second["stages"]["index"]["nodes_written"] == 0
    assert Vault(home).commit_count() == demo_runs["commits_after_first"]
    assert {p.name: p.read_text() for p in Vault(home).list_articles()} == demo_runs["snapshot"]
    assert second["articles_created"] == [] and second["articles_updated"] == []


def test_recall_finds_specific_sample_facts(demo_runs) -> None:
    from memvault.ops.memory import MemoryService

    service = MemoryService(load_settings(demo_runs["home"]))
    block = service.recall("How long are the Postgres backups on the NAS kept?")["block"]
    assert "14 days" in block
    hits = service.recall("Which NOAA tide station does tidepool use by default?")
    assert "9414750" in hits["block"]
    assert hits["block"].startswith("<memory-recall>") and hits["block"].rstrip().endswith("</memory-recall>")
    for h in hits["hits"]:
        # the score is its relevance plus every bonus and prior explain names (importance, recency, content, …)
        assert abs(sum(v for k, v in h["explain"].items() if k == "relevance" or k.endswith(("_prior", "_bonus")))
                   - h["score"]) < 1e-5


def test_malformed_lines_are_reported_and_the_rest_ingested(home: Path, tmp_path: Path, prefect) -> None:
    src = tmp_path / "in"
    shutil.copytree(SAMPLES / "claude-code", src / "cc")
    bad = src / "cc" / "broken.jsonl"
    good_line = (SAMPLES / "claude-code" / "-Users-sam-src-homelab").glob("*.jsonl").__next__().read_text().splitlines()[1]
    bad.write_text(good_line + "\nthis is not json\n[1, 2]\n")
    report = run_flow(home, only=["ingest"], paths=[str(src)])
    ingest = report["stages"]["ingest"]
    assert report["status"] == "completed_with_errors"
    lines = {(Path(e["file"]).name, e["line"]) for e in ingest["errors"]}
    assert ("broken.jsonl", 2) in lines and ("broken.jsonl", 3) in lines
    assert ingest["conversations_new"] >= 7


def test_stage_log_lines_reach_the_prefect_run_logs(demo_runs) -> None:
    """Stages log to `logging.getLogger(__name__)`; Prefect's extra loggers send the lines to the run."""
    import asyncio

    from prefect.client.orchestration import get_client
    from prefect.client.schemas.filters import LogFilter, LogFilterName

    async def lines(name: str) -> list[tuple[str, object]]:
        async with get_client() as client:
            logs = await client.read_logs(LogFilter(name=LogFilterName(any_=[name])))
        return [(log.message, log.flow_run_id) for log in logs]

    chunked = asyncio.run(lines("memvault.stages.chunk"))
    # Each conversation is named by its short id and its title.
    assert any(re.match(r'chunked [0-9a-f]{8} "[^"]+" into \d+ chunk\(s\) \(none\)$', m) for m, _ in chunked)
    assert all(run is not None for _, run in chunked)  # attached to a flow run, not loose
    committed = asyncio.run(lines("memvault.stages.changelog"))
    assert any(m.startswith("committed ") for m, _ in committed)
