"""The pure parts of #25 items 2, 3, 6, 7, 8 and 10: filler names, scripts, leads from
citations, links between related articles, conversation pages and the lint rules that see
what went wrong."""

from datetime import datetime

from memvault.markdown.conversation_page import PageMessage, citation_link, render_page, sections_of
from memvault.markdown.leads import lead_counts, refresh_lead
from memvault.markdown.lint import lint_vault
from memvault.markdown.lint_wiki import fix_escapes_and_lead
from memvault.markdown.related import add_see_also, related_articles
from memvault.naming.scripts import mixed, script_of
from memvault.naming.titles import addressed_names, is_filler, ranked_phrases, topic_title


def test_filler_never_names_a_topic() -> None:
    for name in ["Ttyl", "Hey Andrew", "Sounds Great", "Thanks so much", "hi", "Good to see you", "Talk soon"]:
        assert is_filler(name), name
    for name in ["Sourdough Starter", "Postgres Backups", "Dance Studio", "Lisbon Trip"]:
        assert not is_filler(name), name


def test_a_person_named_alone_is_not_a_title() -> None:
    texts = ["user: Hey Andrew! How was the hike? We went to the Dolomites and the via ferrata was steep.\n"
             "assistant: Thanks, Andrew! The via ferrata sounds amazing, how long was the Dolomites trip?",
             "user: Andrew, the Dolomites trip took five days and the via ferrata took one of them."]
    assert "andrew" in addressed_names(texts)
    phrases = ranked_phrases(texts, texts)
    assert all(p.casefold() != "andrew" for p in phrases)
    title = topic_title(texts, texts, set(), ["", ""])
    assert not is_filler(title) and title.casefold() != "andrew"


def test_scripts() -> None:
    assert script_of("user: 我们讨论了数据库的备份策略和恢复时间") == "chinese"
    assert script_of("user: データベースのバックアップについて話しましょう") == "japanese"
    assert script_of("user: Как настроить резервное копирование базы данных?") == "cyrillic"
    assert script_of("user: How do I back up Postgres?\n```\npg_dump db\n```") == "latin"
    assert mixed(["chinese", "japanese"]) and not mixed(["latin", "none", "latin"])


ARTICLE = """# Postgres Backups

**Postgres Backups** is a topic that came up in 1 conversation(s) between 2025-01-02 and 2025-01-02, about pgBackRest.

## Retention (2025-01-02)

Keep 14 full backups.[^1]

## Restore drill (2025-03-04)

The restore took 9 minutes.[^2]

## References

[^1]: [[Conversations/conv-1a2b3c4d#m3|conv:1a2b3c4d]] (2025-01-02, claude-code) — Backups
[^2]: [[Conversations/conv-99887766#m0|conv:99887766]] (2025-03-04, chatgpt) — Restore drill
"""


def test_lead_counts_come_from_citations() -> None:
    assert lead_counts(ARTICLE) == [(3, 1, 2)]
    fixed = refresh_lead(ARTICLE)
    assert "came up in 2 conversations between 2025-01-02 and 2025-03-04, about pgBackRest." in fixed
    assert lead_counts(fixed) == []
    assert refresh_lead(fixed) == fixed  # a person's lead, or one already right, is left alone


def test_related_articles_link_both_ways() -> None:
    texts = {
        "Postgres_Backups": "# Postgres Backups\n\nLead.\n\n## S\n\npgBackRest keeps the Postgres archive on the NAS.\n",
        "Home_NAS": "# Home NAS\n\nLead.\n\n## S\n\nThe Synology NAS holds the pgBackRest archive and photos.\n",
        "Sourdough": "# Sourdough\n\nLead.\n\n## S\n\nFeed the starter flour and water twice a day.\n",
    }
    related = related_articles(texts)
    assert related["Postgres_Backups"] == ["Home_NAS"] and related["Home_NAS"] == ["Postgres_Backups"]
    assert related["Sourdough"] == []
    linked = add_see_also(ARTICLE, ["Home_NAS"])
    assert "## See also\n\n- [[Home_NAS]]\n\n## References" in linked
    assert add_see_also(linked, ["Home_NAS"]) == linked


def test_conversation_page_sections_and_safety() -> None:
    when = datetime(2025, 1, 2, 10, 0)
    page = render_page(None, "<iframe src=x> backups", "claude-code", "2025-01-02",
                       [[PageMessage(3, "user", "What keeps ```fences``` and ![](https://evil/b.png)?", when),
                         PageMessage(4, "assistant", "14 full backups.", when)]])
    assert page.startswith("# \\<iframe src=x> backups\n")
    assert "`````" not in page and "````text\nWhat keeps ```fences``` and ![](https://evil/b.png)?\n````" in page
    again = render_page(page, "t", "claude-code", "2025-01-02", [[PageMessage(0, "user", "first", when)]])
    assert list(sections_of(again)) == ["m0", "m3"]
    assert citation_link("1a2b3c4d", 3) == "[[Conversations/conv-1a2b3c4d#m3|conv:1a2b3c4d]]"


def test_lint_sees_each_planted_defect() -> None:
    good = ARTICLE.replace("## References", "## See also\n\n- [[Home_NAS]]\n\n## References")
    nas = "# Home NAS\n\nThe Synology NAS holds the pgBackRest archive of Postgres backups.\n\n## See also\n\n- [[Postgres_Backups]]\n"
    planted = (good.replace("# Postgres Backups", "# Thanks")
               .replace("Keep 14 full backups.", "Keep \\*\\*14\\*\\* full backups\\.")
               .replace("## Restore drill", "## Noise\n\nPlease run /login · API Error: 401 OAuth token expired.\n\n"
                                            "## 数据库备份\n\n我们讨论了数据库的备份策略和恢复时间。\n\n## Restore drill"))
    rules = {f.rule: f.line for f in lint_vault({"articles/Postgres_Backups.md": planted, "articles/Home_NAS.md": nas})
             if f.file == "articles/Postgres_Backups.md"}
    assert {"filler-title", "needless-escape", "agent-noise", "lead-count", "mixed-script"} <= set(rules)
    assert rules["filler-title"] == 1 and rules["needless-escape"] == 7
    clean = lint_vault({"articles/Postgres_Backups.md": refresh_lead(good), "articles/Home_NAS.md": nas})
    assert [f for f in clean if f.rule not in ("bad-filename", "dangling-link")] == []
    unlinked = lint_vault({"articles/Postgres_Backups.md": refresh_lead(ARTICLE), "articles/Home_NAS.md": nas})
    assert any(f.rule == "no-links" and f.file == "articles/Postgres_Backups.md" for f in unlinked)
    fixed = fix_escapes_and_lead(planted)
    assert "Keep **14** full backups." in fixed and "came up in 2 conversations" in fixed
