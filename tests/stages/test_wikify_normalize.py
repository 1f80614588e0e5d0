"""Golden tests of the wikify and normalize stages over a vault of messy fixture articles."""

from pathlib import Path

import pytest

from memvault.markdown.footnotes import check_bijection
from memvault.stages.normalize import run_normalize
from memvault.stages.wikify import run_wikify
from tests.helpers import stage_ctx

STEMS = ("Archie_Project", "Messy_Links", "Agent_Platforms")


def _articles(home: Path) -> dict[str, str]:
    return {s: (home / "articles" / f"{s}.md").read_text() for s in STEMS}


def test_normalize_stage_golden(messy_home: Path, golden) -> None:
    ctx = stage_ctx(messy_home)
    out = run_normalize(ctx)
    assert out.articles == 3 and out.changed == 3
    for stem, text in _articles(messy_home).items():
        golden(f"normalize/{stem}.md", text)
        assert check_bijection(text) == []
    # Every normalized article counts as touched, so wikify and the changelog see it.
    assert set(ctx.touched_articles) == set(STEMS)


def test_normalize_logs_each_drop_on_the_talk_page_with_the_run_id(messy_home: Path) -> None:
    out = run_normalize(stage_ctx(messy_home, run_id="run-abc"))
    talk = (messy_home / "Talk" / "Archie_Project.md").read_text()
    assert talk.startswith("# Talk: Archie Project\n")
    assert "normalize (run run-abc)" in talk
    # The orphan marker, the never-cited definition and the conflicting duplicate, each logged;
    # the markers quoted, so they render as text rather than as undefined footnotes.
    assert "dropped citation marker `[^9]`" in talk
    assert "dropped unused footnote definition `[^8]`" in talk and "conv:dddddddd" in talk
    assert "dropped conflicting duplicate definition `[^3]`" in talk and "conv:cccccccc" in talk
    assert out.footnotes_dropped == talk.count("\n- dropped")
    assert not (messy_home / "Talk" / "Agent_Platforms.md").exists()  # nothing dropped there


def test_dangling_links_go_to_wanted_articles_and_stay_in_the_text(messy_home: Path) -> None:
    run_normalize(stage_ctx(messy_home))
    wanted = (messy_home / "Meta" / "Wanted_Articles.md").read_text()
    assert "- **Nowhere Page** — linked from [[Messy_Links]]" in wanted
    text = (messy_home / "articles" / "Messy_Links.md").read_text()
    assert "[[Nowhere Page]]" in text
    # See also lists only articles that exist: its dangling bullet goes, noted on the Talk page.
    assert "Scheduler" not in text and "## See also" not in text and "Scheduler" not in wanted
    assert "See also: removed `[[Scheduler.md]]`" in (messy_home / "Talk" / "Messy_Links.md").read_text()


def test_aliases_and_display_text(messy_home: Path) -> None:
    run_normalize(stage_ctx(messy_home))
    links = (messy_home / "articles" / "Messy_Links.md").read_text()
    assert "the alias [[Archie_Project|Archie]]" in links  # alias → stem, what the reader saw kept
    assert "[[Agent_Platforms|the platforms]]" in links  # explicit display text kept
    assert "Links to [[Agent_Platforms]], [[Agent_Platforms]]," in links  # spellings → the stem
    assert "[[Archie_Project|archie]]" in (messy_home / "articles" / "Agent_Platforms.md").read_text()


def test_normalize_second_pass_changes_nothing(messy_home: Path) -> None:
    run_normalize(stage_ctx(messy_home, run_id="run-1"))
    files = {p: p.read_text() for p in messy_home.rglob("*.md") if ".git" not in p.parts}
    ctx = stage_ctx(messy_home, run_id="run-2")
    out = run_normalize(ctx)
    assert out.changed == 0 and out.footnotes_dropped == 0 and ctx.touched_articles == {}
    assert {p: p.read_text() for p in messy_home.rglob("*.md") if ".git" not in p.parts} == files


def test_wikify_stage_golden_over_touched_articles_only(messy_home: Path, golden) -> None:
    run_normalize(stage_ctx(messy_home))
    before = _articles(messy_home)
    out = run_wikify(stage_ctx(messy_home, touched={"Archie_Project": "updated", "Messy_Links": "updated"}))
    # The two touched articles, and Agent_Platforms, their related article: it gains the See
    # also link back (links between related articles go both ways) and nothing else.
    assert out.articles == 3 and out.kept == 0
    after = _articles(messy_home)
    gained = set(after["Agent_Platforms"].splitlines()) - set(before["Agent_Platforms"].splitlines())
    assert gained <= {"- [[Archie_Project]]", "- [[Messy_Links]]", "## See also", ""}, gained
    for stem in ("Archie_Project", "Messy_Links"):
        golden(f"wikify/{stem}.md", after[stem])
    # See also is built against the whole vault: the alias resolves to the stem, once.
    assert after["Archie_Project"].count("[[Agent_Platforms]]") == 1
    # wikify then normalize is a fixed point of both stages.
    assert run_normalize(stage_ctx(messy_home)).changed == 0
    assert run_wikify(stage_ctx(messy_home, touched={s: "updated" for s in STEMS[:2]})).changed == 0
    # Once every article went through both, neither changes anything.
    run_wikify(stage_ctx(messy_home, touched={s: "updated" for s in STEMS}))
    run_normalize(stage_ctx(messy_home))
    settled = _articles(messy_home)
    assert run_wikify(stage_ctx(messy_home, touched={s: "updated" for s in STEMS})).changed == 0
    assert run_normalize(stage_ctx(messy_home)).changed == 0 and _articles(messy_home) == settled


def test_wikify_removes_model_artefacts(home: Path) -> None:
    path = home / "articles" / "Tide_Tables.md"
    path.write_text("Sure! Here is the updated article:\n\n```markdown\n# Tide Tables\n\nTide tables list the "
                    "predicted high and low water for a station, here station 9414750.[^1]\n\n## References\n\n"
                    "[^1]: `conv:12345678` (2026-01-01, chatgpt) — Tides\n```\n\nLet me know if you want changes!\n")
    out = run_wikify(stage_ctx(home, touched={"Tide_Tables": "created"}))
    assert out.changed == 1
    text = path.read_text()
    assert text.startswith("# Tide Tables\n\nTide tables list") and text.endswith("— Tides\n")
    assert "Sure" not in text and "```" not in text and "Let me know" not in text


def test_wikify_failure_keeps_the_article_and_reports_why(home: Path, monkeypatch) -> None:
    import memvault.stages.wikify as wikify_stage

    path = home / "articles" / "Odd.md"
    path.write_text("# Odd\n\nSome text.\n")

    def broken(text: str, title: str, known=None) -> str:
        raise ValueError("could not parse the heading structure")

    monkeypatch.setattr(wikify_stage, "clean_article", broken)
    out = run_wikify(stage_ctx(home, touched={"Odd": "created"}))
    assert out.kept == 1 and out.changed == 0
    assert "could not parse the heading structure" in out.kept_reasons["Odd"][0]
    assert path.read_text() == "# Odd\n\nSome text.\n"


def test_wikify_programming_errors_are_not_swallowed(home: Path, monkeypatch) -> None:
    import memvault.stages.wikify as wikify_stage

    (home / "articles" / "Odd.md").write_text("# Odd\n\nSome text.\n")

    def buggy(text: str, title: str, known=None) -> str:
        return None.strip()  # type: ignore[union-attr]

    monkeypatch.setattr(wikify_stage, "clean_article", buggy)
    with pytest.raises(AttributeError):
        run_wikify(stage_ctx(home, touched={"Odd": "created"}))


def test_wikify_output_that_would_lose_a_citation_is_not_applied(home: Path, monkeypatch) -> None:
    import memvault.stages.wikify as wikify_stage

    original = "# Odd\n\nSome text about tides.[^1]\n\n## References\n\n[^1]: `conv:12345678` (2026-01-01, x) — t\n"
    (home / "articles" / "Odd.md").write_text(original)
    monkeypatch.setattr(wikify_stage, "clean_article", lambda text, title, known=None: "# Odd\n\nSome text about tides.\n")
    out = run_wikify(stage_ctx(home, touched={"Odd": "created"}))
    assert out.kept == 1 and any("lost citation conv:12345678" in r for r in out.kept_reasons["Odd"])
    assert (home / "articles" / "Odd.md").read_text() == original
