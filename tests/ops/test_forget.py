"""`memvault forget`: an article (recoverable from git, no node left, never re-synthesized) and a
conversation (ledger, index, citations; never re-ingested). Real DuckDB, LanceDB, git, Prefect,
on a copy of the session's demo home."""

import json
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from memvault.cli import app
from memvault.models import Conversation
from memvault.ops.forget import strip_citations
from memvault.markdown.footnotes import check_bijection, citations
from memvault.markdown.gate import gate
from memvault.config.settings import load_settings
from stores.ledger import Ledger
from stores.nodes import NodeIndex
from stores.vault import Vault
from stores.vector_cache import CACHE_FILE, VectorCache
from tests.helpers import ROOT, cli, run_flow


def _nodes(home: Path) -> NodeIndex:
    return NodeIndex.open_existing(load_settings(home))


def _git(home: Path, *args: str) -> str:
    return subprocess.run(["git", *args], cwd=home, capture_output=True, text=True, check=True).stdout


def test_forget_article_is_recoverable_and_leaves_no_node(demo_copy: Path, demo_runs) -> None:
    home = demo_copy
    path = Vault(home).list_articles()[0]
    stem, text = path.stem, path.read_text()
    assert _nodes(home).doc_hashes(stem)
    commits = Vault(home).commit_count()
    result = cli("--home", str(home), "forget", stem.replace("_", " "), "--yes", "--json")
    assert result.exit_code == 0, result.output
    data = json.loads(result.output)
    assert not path.exists() and data["nodes_deleted"] > 0
    assert Vault(home).commit_count() == commits + 1 and "forget" in _git(home, "log", "-1", "--format=%s")
    assert _git(home, "show", f"HEAD~1:articles/{stem}.md") == text  # recoverable
    assert _nodes(home).doc_hashes(stem) == {}
    assert f"## {data['bucket']}\n" not in (home / "Meta" / "Buckets.md").read_text()
    with Ledger.open(load_settings(home)) as ledger:
        bucket = next(b for b in ledger.buckets(include_forgotten=True) if b.name == data["bucket"])
        assert bucket.forgotten and data["bucket"].casefold() in ledger.taken_bucket_names()
        # Even a chunk not yet synthesized is never offered to synthesis under that bucket again.
        [fresh] = ledger.assigned_chunk_ids(1)
        ledger.assign(fresh, data["bucket"], 1.0, "test")
        assert data["bucket"] not in ledger.pending_by_bucket()
    report = run_flow(home, paths=[str(demo_runs["samples"])])
    assert report["status"] == "completed"
    assert not path.exists() and _nodes(home).doc_hashes(stem) == {}


def test_forget_conversation_removes_citations_nodes_and_never_comes_back(demo_copy: Path, demo_runs,
                                                                         tmp_path: Path) -> None:
    home = demo_copy
    articles = {p.stem: p.read_text() for p in Vault(home).list_articles()}
    short = next(c for t in articles.values() for c in citations(t))
    settings = load_settings(home)
    with Ledger.open(settings, read_only=True) as ledger:
        cid = next(i for i in ledger.conversation_ids() if i.startswith(short))
    assert _nodes(home).doc_hashes(f"conv:{cid}")
    cache = settings.state_dir / CACHE_FILE
    assert VectorCache(cache).count() > 0  # the demo runs embedded through the cache
    commits = Vault(home).commit_count()
    result = cli("--home", str(home), "forget", "--conversation", f"conv:{short}", "--yes", "--json")
    assert result.exit_code == 0, result.output
    data = json.loads(result.output)
    assert data["id"] == cid and data["articles"] and data["ledger_rows"]["messages"] > 0
    assert data["sentences_removed"] > 0
    assert Vault(home).commit_count() == commits + 1
    for stem, before in articles.items():
        path = home / "articles" / f"{stem}.md"
        # Paragraphs closed by a footnote that cites only this conversation: their words go.
        sole = {m.group(1) for m in re.finditer(r"^\[\^(\w+)\]: `conv:(\w+)`[^;\n]*$", before, re.M)
                if cid.startswith(m.group(2))}
        gone = [line.rsplit("[^", 1)[0] for line in before.splitlines()
                if re.search(r"\[\^(\w+)\]$", line) and not line.startswith("[^")
                and re.search(r"\[\^(\w+)\]$", line).group(1) in sole
                and all(m in sole for m in re.findall(r"\[\^(\w+)\]", line))]
        if not path.exists():  # no prose was left: the article went, recoverable from git
            assert stem in data["articles_removed"]
            continue
        after = path.read_text()
        assert not any(cid.startswith(c) for c in citations(after))
        assert check_bijection(after) == []
        assert all(g[:60] not in after for g in gone), stem
        if stem in data["articles"]:
            assert [r for r in gate(after, before, allowed_removed=[cid]) if not r.startswith("shrank:")] == []
            talk = (home / "Talk" / f"{stem}.md").read_text()
            assert "forgotten conversation" in talk
            assert all(g[:60] not in talk for g in gone)  # recorded, never quoted
            if gone:
                assert "whose only support was that conversation" in talk
    assert _nodes(home).doc_hashes(f"conv:{cid}") == {}
    assert VectorCache(cache).count() == 0  # no vector of its texts is left on disk
    with Ledger.open(settings) as ledger:
        # Gone, with its messages and chunks; its tombstone still answers to its id.
        assert ledger.conversation(cid) is None and ledger.active_thread(cid) == []
        assert ledger.chunked_message_ids(cid) == set()
        assert ledger.conversation_ids_with_prefix(cid) == [cid]
        assert ledger.conversation_ids_with_prefix(cid, include_forgotten=False) == []
    # The same files again (unchanged: skipped), then a fresh copy of them (re-parsed whole).
    again = tmp_path / "again"
    shutil.copytree(demo_runs["samples"], again)
    for paths in ([str(demo_runs["samples"])], [str(again)]):
        report = run_flow(home, only=["ingest"], paths=paths)
        assert report["stages"]["ingest"]["conversations_new"] == 0
    with Ledger.open(settings, read_only=True) as ledger:
        assert ledger.conversation(cid) is None and ledger.active_thread(cid) == []


def _two_similar_conversations(home: Path) -> tuple[Conversation, Conversation]:
    """Two stored conversations whose ids share their first four hex digits (not the fifth)."""
    seen: dict[str, Conversation] = {}
    n = 0
    while True:  # ids are hashes: the first collision on four hex digits comes within ~300 tries
        conv = Conversation(source="pi", native_id=f"session-{n}", title=f"title {n}")
        first = seen.setdefault(conv.id[:4], conv)
        if first.id[4] != conv.id[4]:
            break
        n += 1
    with Ledger.open(load_settings(home)) as ledger:
        ledger.upsert_conversations([first, conv])
    return first, conv


def test_forget_conversation_prefixes_and_misuse(home: Path) -> None:
    first, second = _two_similar_conversations(home)
    a, b = first.id, second.id
    ambiguous = cli("--home", str(home), "forget", "--conversation", f"conv:{a[:4]}", "--yes")
    assert ambiguous.exit_code == 1  # as `memvault show` answers an ambiguous prefix; a bad id is misuse (2)
    assert f"conv:{a[:5]}" in ambiguous.output and f"conv:{b[:5]}" in ambiguous.output
    assert first.title in ambiguous.output and second.title in ambiguous.output
    assert cli("--home", str(home), "forget", "--conversation", "conv:zz", "--yes").exit_code == 2
    missing = next(h for h in ("ffff", "0000", "aaaa") if not a.startswith(h) and not b.startswith(h))
    assert cli("--home", str(home), "forget", "--conversation", f"conv:{missing}", "--yes").exit_code == 1
    assert cli("--home", str(home), "forget", "--yes").exit_code == 2
    assert cli("--home", str(home), "forget", "X", "--conversation", f"conv:{a[:5]}", "--yes").exit_code == 2
    declined = cli("--home", str(home), "forget", "--conversation", a[:5])  # no --yes, no answer
    assert declined.exit_code == 1
    # The question names it as citations do (the shortest unique prefix, 8 hex here), and says
    # when no article cites it rather than "removed from: no article".
    asked = CliRunner().invoke(app, ["--home", str(home), "forget", "--conversation", a[:5]], input="n\n")
    assert asked.exit_code == 1 and f"Forget conversation conv:{a[:8]} (pi, {first.title})?" in asked.output
    assert "no article cites it" in asked.output and f"conv:{a[:9]}" not in asked.output
    ok = cli("--home", str(home), "forget", "--conversation", a[:5], "--yes", "--json")
    assert ok.exit_code == 0 and json.loads(ok.output)["id"] == a
    # Running it again finishes nothing left to do, and still finds the id by its tombstone.
    assert cli("--home", str(home), "forget", "--conversation", a[:5], "--yes").exit_code in (0, 1)


def test_forget_article_asks_first_and_unknown_names_fail(home: Path) -> None:
    (home / "articles" / "Hand_Written.md").write_text("# Hand Written\n\nA person wrote this.\n")
    Vault(home).record(["articles/Hand_Written.md"])
    Vault(home).commit("hand edit")
    assert cli("--home", str(home), "forget", "Nope", "--yes").exit_code == 1
    declined = CliRunner().invoke(app, ["--home", str(home), "forget", "hand written"], input="n\n")
    assert declined.exit_code == 1 and (home / "articles" / "Hand_Written.md").exists()
    accepted = CliRunner().invoke(app, ["--home", str(home), "forget", "hand written"], input="y\n")
    assert accepted.exit_code == 0 and not (home / "articles" / "Hand_Written.md").exists()
    with Ledger.open(load_settings(home)) as ledger:
        # a hand-written article has no bucket: one is recorded, forgotten, so the name stays taken
        assert "hand written" in ledger.taken_bucket_names()
        assert ledger.buckets() == []


def test_strip_citations_keeps_other_conversations_of_a_shared_definition() -> None:
    text = ("# T\n\nOne.[^1] Two.[^2] Three.[^3]\n\n## References\n\n"
            "[^1]: `conv:aaaaaaaa` (2026-01-01, pi) — a\n"
            "[^2]: `conv:bbbbbbbb` (2026-01-02, pi) — b; `conv:aaaaaaaa` (2026-01-01, pi) — a\n"
            "[^3]: `conv:cccccccc` (2026-01-03, pi) — c\n")
    new, touched, log = strip_citations(text, "aaaaaaaa" + "1" * 56)
    assert touched == 2
    assert new == ("# T\n\nOne. Two.[^1] Three.[^2]\n\n## References\n\n"
                   "[^1]: `conv:bbbbbbbb` (2026-01-02, pi) — b\n"
                   "[^2]: `conv:cccccccc` (2026-01-03, pi) — c\n")
    assert log == ["dropped citation marker [^1] on line 3: no definition"]
    assert gate(new, text, allowed_removed=["aaaaaaaa" + "1" * 56]) == []
    assert any("lost citation conv:aaaaaaaa" in r for r in gate(new, text))


# A stand-in for a nightly run in another process: the writer lock, and the ledger read-write.
RUN = """
import sys
from pathlib import Path
from memvault.lock import writer_lock
from stores.ledger import Ledger
state = Path(sys.argv[1])
with writer_lock(state, "memvault run 20260101-000000-abcdef", 5):
    ledger = Ledger(state / "ledger.duckdb")
    print("ready", flush=True)
    sys.stdin.readline()
    ledger.close()
"""


def test_forget_while_a_run_writes_names_the_run_and_changes_nothing(demo_copy: Path) -> None:
    from memvault.errors import LockedError
    from memvault.ops.forget import forget_article, forget_conversation

    home = demo_copy
    articles = {p.name: p.read_text() for p in Vault(home).list_articles()}
    short = next(c for t in articles.values() for c in citations(t))
    commits = Vault(home).commit_count()
    run = subprocess.Popen([sys.executable, "-c", RUN, str(home / ".memvault")], cwd=ROOT,
                           stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        assert run.stdout.readline().strip() == "ready"
        for args in (["--conversation", f"conv:{short}"], [next(iter(articles)).removesuffix(".md")]):
            result = cli("--home", str(home), "forget", *args, "--yes")
            assert result.exit_code == 1, result.output
            assert f"another memvault process (pid {run.pid}, memvault run 20260101-000000-abcdef" in result.output
            assert "Conflicting lock" not in result.output and "IO Error" not in result.output  # not DuckDB's text
        # A Python (or MCP) caller of the operations goes through the same lock.
        settings = load_settings(home, lock_timeout_s=0.2)
        with pytest.raises(LockedError, match=f"pid {run.pid}, memvault run"):
            forget_conversation(settings, f"conv:{short}")
        with pytest.raises(LockedError, match=f"pid {run.pid}, memvault run"):
            forget_article(settings, next(iter(articles)).removesuffix(".md"))
    finally:
        run.communicate("done\n", timeout=60)
    assert run.returncode == 0
    assert {p.name: p.read_text() for p in Vault(home).list_articles()} == articles
    assert Vault(home).commit_count() == commits
