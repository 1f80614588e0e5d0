"""Wikilinks: finding, canonicalizing (golden + properties), aliases, dangling targets."""

from hypothesis import given, settings
from hypothesis import strategies as st

from memvault.markdown.wikilinks import aliases_of, build_known, canonicalize, find_links, link_key

STEMS = ["Agent_Platforms", "Archie_Project", "Scheduler", "Messy_Links"]
ALIASES = {"Archie_Project": ["Archie", "Archie platform"], "Messy_Links": ["Links Demo"]}
KNOWN = build_known(STEMS, ALIASES)


def test_link_key():
    assert link_key("Topic_Name") == link_key("topic name") == link_key(" TOPIC   Name.md ") == "topic name"


def test_messy_links_golden(article, golden):
    text, dangling = canonicalize(article("messy_links.md"), KNOWN)
    golden("messy_links.canonical.md", text)
    assert dangling == ["Nowhere Page"]


def test_rewrite_rules():
    text = "[[topic name]] [[Topic Name|shown]] [[TN]] [[topic_name#Part|x]] ![[Topic Name]] [[Gone]]"
    known = build_known(["Topic_Name"], {"Topic_Name": ["TN"]})
    out, dangling = canonicalize(text, known)
    assert out == "[[Topic_Name]] [[Topic_Name|shown]] [[Topic_Name|TN]] [[Topic_Name#Part|x]] ![[Topic_Name]] [[Gone]]"
    assert dangling == ["Gone"]


def test_code_is_untouched():
    text = "# T\n\n`[[topic name]]`\n\n```\n[[topic name]]\n```\n\n    [[topic name]]\n"
    assert canonicalize(text, build_known(["Topic_Name"])) == (text, [])
    assert find_links(text) == []


def test_find_links(article):
    links = find_links(article("messy_links.md"))
    assert links[0] == ("agent platforms", None, 6)
    assert ("AGENT  PLATFORMS", "the platforms", 6) in links
    assert ("archie project", "Archie", 12) in links  # the table-escaped pipe
    assert not any(t.startswith("#") or t == "in code" for t, _, _ in links)


def test_aliases_of(article):
    assert aliases_of(article("messy_links.md")) == ["Links Demo"]
    assert aliases_of("---\naliases:\n  - One\n  - Two\n---\n# T\n") == ["One", "Two"]
    assert aliases_of("---\nalias: Solo\n---\n# T\n") == ["Solo"]
    assert aliases_of("# T\n") == []


def test_build_known_stems_win_over_aliases():
    known = build_known(["Archie"], {"Archie_Project": ["Archie"]})
    assert known["archie"] == "Archie"


spelling = st.sampled_from(
    ["agent platforms", "Agent_Platforms", "AGENT PLATFORMS", "Archie", "archie platform", "Scheduler.md",
     "scheduler", "Nowhere", "Archie_Project"]
)
link = st.tuples(spelling, st.sampled_from(["", "|shown", "#Part", "#Part|x"])).map(lambda p: f"[[{p[0]}{p[1]}]]")
chunk = st.one_of(link, st.sampled_from(["text", "`[[agent platforms]]`", "\n", "\n```\n[[archie]]\n```\n", "## H"]))
docs = st.lists(chunk, max_size=12).map(" ".join)


@settings(max_examples=300, deadline=None)
@given(docs)
def test_canonicalize_is_idempotent(text):
    once, dangling = canonicalize(text, KNOWN)
    assert canonicalize(once, KNOWN) == (once, dangling)


@settings(max_examples=300, deadline=None)
@given(docs)
def test_canonicalize_keeps_link_count_and_resolves_all_known(text):
    out, dangling = canonicalize(text, KNOWN)
    assert len(find_links(out)) == len(find_links(text))
    for target, _, _ in find_links(out):
        assert target in KNOWN.values() or target in dangling


def test_a_citation_of_a_conversation_page_is_neither_rewritten_nor_wanted() -> None:
    # Citations link to the vault's pages of cited passages; they are no article, and
    # normalize must not list them on Meta/Wanted_Articles.md as missing ones.
    text = ("# Topic Name\n\nA fact.[^1]\n\n## References\n\n"
            "[^1]: [[Conversations/conv-08468284#m0|conv:08468284]] (2026-09-14, claude-code) — a chat\n"
            "See [[Missing Page]].\n")
    out, dangling = canonicalize(text, build_known(["Topic_Name"]))
    assert out == text
    assert dangling == ["Missing Page"]
