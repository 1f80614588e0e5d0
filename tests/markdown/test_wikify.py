"""Wikify: golden cleanups of model output and hand-written articles, idempotence."""

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from memvault.markdown.footnotes import renumber
from memvault.markdown.gate import gate
from memvault.markdown.scan import split_front_matter
from memvault.markdown.cleanup import clean_article
from memvault.markdown.wikilinks import build_known

CASES = [
    ("wrapped_model_output.md", "Archie Project"),
    ("no_lead.md", "Scheduler"),
    ("messy_links.md", "Messy Links"),
    ("footnotes_messy.md", "Archie Project"),
]


@pytest.mark.parametrize(("name", "title"), CASES)
def test_golden(article, golden, name, title):
    out = clean_article(article(name), title)
    golden(name.replace(".md", ".wikified.md"), out)
    assert clean_article(out, title) == out


def test_wrapped_model_output_passes_the_gate(article):
    out = clean_article(article("wrapped_model_output.md"), "Archie Project")
    assert gate(out, None, None) == []
    assert renumber(out) == (out, [])


def test_title_and_extra_h1():
    out = clean_article("Title\n=====\n\nLead.\n\n# Second\n\nText.\n", "Real Title")
    assert out == "# Real Title\n\nLead.\n\n## Second\n\nText.\n"


def test_missing_h1_is_added():
    assert clean_article("Just a lead.\n", "T") == "# T\n\nJust a lead.\n"


def test_non_chatter_before_title_becomes_lead():
    assert clean_article("A real first sentence.\n\n# T\n\n## S\n\nBody.\n", "T") == (
        "# T\n\nA real first sentence.\n\n## S\n\nBody.\n"
    )


def test_definitions_outside_references_are_gathered():
    out = clean_article("# T\n\nLead.[^1]\n\n[^1]: `conv:12345678` (2026-01-01, pi) — x\n", "T")
    assert out.endswith("## References\n\n[^1]: `conv:12345678` (2026-01-01, pi) — x\n")


def test_see_also_uses_known_stems_and_skips_self():
    known = build_known(["Archie_Project", "Cron"], {"Archie_Project": ["Archie"]})
    out = clean_article("# Cron\n\nSee [[Archie]], [[archie project]] and [[cron]].\n", "Cron", known)
    assert out.endswith("## See also\n\n- [[Archie_Project]]\n")


def test_front_matter_is_kept():
    out = clean_article("---\naliases: [X]\n---\nSure! Here it is:\n\n# T\n\nLead.\n", "T")
    assert out == "---\naliases: [X]\n---\n# T\n\nLead.\n"


parts = st.sampled_from([
    "# Title", "# Other", "Title\n===", "## Section", "## See also", "## References", "### Sub",
    "Lead prose with [[Link One]].", "- [[Link Two]]", "Sure, here is the article:", "Let me know if that helps.",
    "[^1]: `conv:12345678` (2026-01-01, pi) — t", "Body text.[^1]", "---", "```\ncode\n```", "```markdown", "",
])


@settings(max_examples=300, deadline=None)
@given(st.lists(parts, max_size=14).map("\n".join))
def test_wikify_is_idempotent(text):
    once = clean_article(text, "Title")
    assert clean_article(once, "Title") == once
    assert split_front_matter(once)[1].startswith("# Title\n")
