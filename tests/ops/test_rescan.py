"""`redact --rescan`: a secret shape added to the patterns after ingest is removed from the
ledger, the node index and the vault — searched in the raw bytes on disk afterwards."""

import json
from pathlib import Path

import numpy as np
from typer.testing import CliRunner

from memvault.stages.ingest import ingest_roots
from tests.helpers import cc_session

SECRET = "corp-7Q2mN9pR4sT6vW8yZ1aC3dE5fG7hJ9kL"  # a company token no built-in pattern knows


def _raw_hits(root: Path, needle: str) -> list[str]:
    return [str(p.relative_to(root)) for p in root.rglob("*")
            if p.is_file() and ".git" not in p.parts and needle.encode() in p.read_bytes()]


def test_rescan_removes_a_newly_covered_secret_everywhere(home: Path, tmp_path: Path) -> None:
    from memvault.embeddings.minilm import MiniLMEmbedder
    from memvault.markdown.tree import conversation_nodes
    from memvault.config.settings import load_settings
    from stores.ledger import Ledger
    from stores.nodes import NodeIndex
    from stores.vault import Vault
    from memvault.stages.index import rows_for

    settings = load_settings(home)
    src = tmp_path / "s.jsonl"
    src.write_text(cc_session("corp", [f"The deploy token is {SECRET}", f"Noted: {SECRET} goes in CI."]))
    with Ledger.open(settings) as ledger:
        ingest_roots(ledger, settings, [("claude-code", src)])
        [cid] = ledger.conversation_ids()
        msgs = [(m.native_id, m.role, m.text, m.timestamp) for m in ledger.active_thread(cid)]
    # The index as the index stage builds it (vectors do not matter to this test).
    nodes = NodeIndex.open_or_create(settings)
    rows = rows_for(f"conv:{cid}", "conversation", conversation_nodes(cid, cid[:8], "deploy", None, "claude-code", msgs))
    for r in rows:
        r["vector"], r["pending"] = [0.0] * MiniLMEmbedder.dim, False
    nodes.upsert(rows)
    # What the stages embedded of it, in the vector cache (keyed by hashes of the texts).
    from memvault.embeddings.cache import text_key
    from stores.vector_cache import CACHE_FILE, VectorCache

    cache = VectorCache(settings.state_dir / CACHE_FILE)
    cache.put_many([(text_key(MiniLMEmbedder.name, r["embed_text"]), np.ones(MiniLMEmbedder.dim, dtype=np.float32))
                    for r in rows])
    texts = {r["embed_text"] for r in rows}
    assert cache.count() == len(texts)
    cache.close()
    vault = Vault(home)
    vault.write(home / "articles" / "Deploy_Token.md", f"# Deploy Token\n\nCI uses `{SECRET}`.\n")
    vault.commit("test: article with a token")
    assert {"articles", ".memvault"} <= {p.split("/")[0] for p in _raw_hits(home, SECRET)}

    (home / "memvault.toml").write_text((home / "memvault.toml").read_text()
                                        + '\n[ingest.redact_patterns]\ncorp_token = "\\\\bcorp-[A-Za-z0-9]{32}\\\\b"\n')
    from memvault.cli import app

    out = CliRunner().invoke(app, ["--home", str(home), "redact", "--rescan", "--json"])
    assert out.exit_code == 0, out.output
    report = json.loads(out.stdout)
    assert report["redactions"]["corp_token"] >= 3
    assert report["ledger"]["messages.text"] == 2 and report["conversations"] == 1
    assert report["vault_files"] == ["articles/Deploy_Token.md"] and report["committed"]
    assert report["index_documents_removed"] == 1 and report["index_nodes_removed"] == len(rows)
    assert report["vectors_cleared"] == len(texts) and VectorCache(settings.state_dir / CACHE_FILE).count() == 0
    assert "git filter-repo" in report["note"] and "gc --prune=now" in report["note"]
    assert _raw_hits(home, SECRET) == []  # ledger file, index files and vault, outside .git
    with Ledger.open(settings) as ledger:
        assert "[REDACTED:corp_token]" in ledger.active_thread(cid)[0].text
        assert cid in ledger.conversations_to_index()  # the next run re-indexes it
    again = CliRunner().invoke(app, ["--home", str(home), "redact", "--rescan", "--json"])
    assert json.loads(again.stdout)["redactions"] == {}  # idempotent
    assert json.loads(again.stdout)["vectors_cleared"] == 0
