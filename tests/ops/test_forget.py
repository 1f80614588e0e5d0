"""`memvault forget`: an article (recoverable from git, no node left, never re-synthesized) and a
conversation (ledger, index, citations; never re-ingested). Real DuckDB, LanceDB, git, Prefect,
on a copy of the session's demo home."""

import json
import re
import shutil
import subprocess
from pathlib import Path


from memvault.embeddings import Embedder
from memvault.ops.forget import strip_citations
from memvault.markdown.footnotes import check_bijection, citations
from memvault.markdown.gate import gate
from memvault.settings import load_settings
from stores.ledger import Ledger
from stores.nodes import NodeIndex
from stores.vault import Vault
from tests.helpers import cli, run_flow


def _nodes(home: Path) -> NodeIndex:
    return NodeIndex(load_settings(home).index_uri, Embedder.name, Embedder.dim, create=False)


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
    ledger = Ledger(load_settings(home).ledger_path)
    try:
        bucket = next(b for b in ledger.buckets(include_forgotten=True) if b["name"] == data["bucket"])
        assert bucket["forgotten"] and data["bucket"].casefold() in ledger.taken_bucket_names()
        # Even chunks not yet synthesized are never offered to synthesis under that bucket again.
        ledger.con.execute("DELETE FROM synthesized_bucket_chunks WHERE bucket = ?", [data["bucket"]])
        assert data["bucket"] not in ledger.pending_by_bucket()
    finally:
        ledger.close()
    report = run_flow(home, paths=[str(demo_runs["samples"])])
    assert report["status"] == "completed"
    assert not path.exists() and _nodes(home).doc_hashes(stem) == {}


def test_forget_conversation_removes_citations_nodes_and_never_comes_back(demo_copy: Path, demo_runs,
                                                                         tmp_path: Path) -> None:
    home = demo_copy
    articles = {p.stem: p.read_text() for p in Vault(home).list_articles()}
    short = next(c for t in articles.values() for c in citations(t))
    settings = load_settings(home)
    ledger = Ledger(settings.ledger_path, read_only=True)
    try:
        cid = next(i for i in ledger.conversation_ids() if i.startswith(short))
    finally:
        ledger.close()
    assert _nodes(home).doc_hashes(f"conv:{cid}")
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
    ledger = Ledger(settings.ledger_path)
    try:
        assert ledger.conversation(cid) is None and ledger.is_forgotten_conversation(cid)
        for table, column in (("messages", "conversation_id"), ("chunks", "conversation_id")):
            assert ledger.con.execute(f"SELECT count(*) FROM {table} WHERE {column} = ?", [cid]).fetchone()[0] == 0
    finally:
        ledger.close()
    # The same files again (unchanged: skipped), then a fresh copy of them (re-parsed whole).
    again = tmp_path / "again"
    shutil.copytree(demo_runs["samples"], again)
    for paths in ([str(demo_runs["samples"])], [str(again)]):
        report = run_flow(home, only=["ingest"], paths=paths)
        assert report["stages"]["ingest"]["conversations_new"] == 0
    ledger = Ledger(settings.ledger_path, read_only=True)
    try:
        assert ledger.conversation(cid) is None
        assert ledger.con.execute("SELECT count(*) FROM messages WHERE conversation_id = ?", [cid]).fetchone()[0] == 0
    finally:
        ledger.close()


def _two_similar_conversations(home: Path) -> tuple[str, str]:
    ledger = Ledger(load_settings(home).ledger_path)
    a, b = "abcd1" + "0" * 59, "abcd2" + "0" * 59
    try:
        for cid, title in ((a, "first"), (b, "second")):
            ledger.con.execute("INSERT INTO conversations (id, source, native_id, title) VALUES (?, 'pi', ?, ?)",
                               [cid, cid, title])
    finally:
        ledger.close()
    return a, b


def test_forget_conversation_prefixes_and_misuse(home: Path) -> None:
    a, _ = _two_similar_conversations(home)
    ambiguous = cli("--home", str(home), "forget", "--conversation", "conv:abcd", "--yes")
    assert ambiguous.exit_code == 2
    assert "conv:abcd1" in ambiguous.output and "conv:abcd2" in ambiguous.output and "second" in ambiguous.output
    assert cli("--home", str(home), "forget", "--conversation", "conv:zz", "--yes").exit_code == 2
    assert cli("--home", str(home), "forget", "--conversation", "conv:ffff", "--yes").exit_code == 1
    assert cli("--home", str(home), "forget", "--yes").exit_code == 2
    assert cli("--home", str(home), "forget", "X", "--conversation", "conv:abcd1", "--yes").exit_code == 2
    declined = cli("--home", str(home), "forget", "--conversation", "abcd1")  # no --yes, no answer
    assert declined.exit_code == 1
    ok = cli("--home", str(home), "forget", "--conversation", "abcd1", "--yes", "--json")
    assert ok.exit_code == 0 and json.loads(ok.output)["id"] == a
    # Running it again finishes nothing left to do, and still finds the id by its tombstone.
    assert cli("--home", str(home), "forget", "--conversation", "abcd1", "--yes").exit_code in (0, 1)


def test_forget_article_asks_first_and_unknown_names_fail(home: Path) -> None:
    (home / "articles" / "Hand_Written.md").write_text("# Hand Written\n\nA person wrote this.\n")
    Vault(home).record(["articles/Hand_Written.md"])
    Vault(home).commit("hand edit")
    assert cli("--home", str(home), "forget", "Nope", "--yes").exit_code == 1
    from typer.testing import CliRunner

    from memvault.cli import app

    declined = CliRunner().invoke(app, ["--home", str(home), "forget", "hand written"], input="n\n")
    assert declined.exit_code == 1 and (home / "articles" / "Hand_Written.md").exists()
    accepted = CliRunner().invoke(app, ["--home", str(home), "forget", "hand written"], input="y\n")
    assert accepted.exit_code == 0 and not (home / "articles" / "Hand_Written.md").exists()
    ledger = Ledger(load_settings(home).ledger_path)
    try:  # a hand-written article has no bucket: one is recorded, forgotten, so the name stays taken
        assert "hand written" in ledger.taken_bucket_names()
        assert ledger.buckets() == []
    finally:
        ledger.close()


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
