"""Lint: each rule fires on its case with the right line and fixability."""

from memvault.markdown.lint import Finding, lint_article, lint_vault

GOOD = "# Good Page\n\nLead.[^1] See [[Other_Page]].\n\n## References\n\n[^1]: `conv:12345678` (2026-01-01, pi) — t\n"


def rules(findings: list[Finding]) -> list[tuple[str, int, bool]]:
    return [(f.rule, f.line, f.fixable) for f in findings]


def test_clean_article_has_no_findings():
    assert lint_article("articles/Good_Page.md", GOOD, {"Good_Page", "Other_Page"}) == []


def test_footnotes_and_dangling(article):
    found = rules(lint_article("articles/Archie_Project.md", article("footnotes_messy.md"), {"Archie_Project"}))
    assert ("footnote-bijection", 8, True) in found
    assert ("footnote-bijection", 25, True) in found
    assert ("footnote-bijection", 26, True) in found
    assert ("dangling-link", 31, False) in found


def test_structure_rules():
    text = "# Page\n\n## S\n\nBody.\n\n# Again\n\n```\nopen\n"
    found = rules(lint_article("articles/Wrong.md", text, {"Wrong"}))
    assert ("bad-filename", 1, False) in found
    assert ("missing-lead", 1, True) in found
    assert ("multiple-h1", 7, True) in found
    assert ("unclosed-fence", 9, False) in found


def test_missing_lead_not_fixable_when_first_section_starts_with_a_list():
    found = rules(lint_article("a/P.md", "# P\n\n## S\n\n- item\n", {"P"}))
    assert ("missing-lead", 1, False) in found


def test_missing_references_and_title():
    found = rules(lint_article("a/P.md", "Lead.[^1]\n\n[^1]: `conv:12345678` x\n", {"P"}))
    assert ("missing-title", 1, True) in found
    assert ("missing-references", 3, True) in found


def test_oversize_and_front_matter():
    text = "---\naliases: [unclosed\n---\n# P\n\n" + "word " * 50 + "\n"
    found = rules(lint_article("a/P.md", text, {"P"}, max_words=20))
    assert ("oversize", 1, False) in found
    assert ("bad-front-matter", 1, False) in found


def test_lint_vault_duplicates_and_aliases():
    files = {
        "articles/Good_Page.md": GOOD,
        "articles/Good_page_2.md": "# good page\n\nLead, see [[Nick]].\n",
        "articles/Other_Page.md": "---\naliases: [Nick]\n---\n# Other Page\n\nLead.\n",
    }
    found = lint_vault(files)
    dups = [(f.file, f.line) for f in found if f.rule == "duplicate-title"]
    assert dups == [("articles/Good_Page.md", 1), ("articles/Good_page_2.md", 1)]
    assert not any(f.rule == "dangling-link" for f in found)
