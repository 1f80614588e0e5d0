"""Footnotes: bijection check, renumbering (golden + properties), citations."""

from hypothesis import given, settings
from hypothesis import strategies as st

from memvault.markdown.footnotes import (
    check_bijection,
    citations,
    find_definitions,
    find_markers,
    renumber,
)


def test_messy_article_problems(article):
    problems = check_bijection(article("footnotes_messy.md"))
    assert "marker [^9] on line 8 has no definition" in problems
    assert "definition [^8] on line 26 is never cited" in problems
    assert "footnote [^3] is defined 2 times (lines 23, 25)" in problems
    assert not any("[^5]" in p or "[^2]" in p for p in problems), "code must be ignored"


def test_messy_article_golden(article, golden):
    text, log = renumber(article("footnotes_messy.md"))
    golden("footnotes_messy.renumbered.md", text)
    golden("footnotes_messy.log.txt", "\n".join(log) + "\n")
    assert check_bijection(text) == []


def test_clean_article_is_unchanged(article):
    text = article("footnotes_clean.md")
    assert renumber(text) == (text, [])
    assert check_bijection(text) == []


def test_order_of_first_use_and_merge():
    text = "# T\n\nB.[^b] A.[^a] B again.[^b] Same.[^c]\n\n[^a]: `conv:aaaaaaaa` x\n[^b]: `conv:bbbbbbbb` y\n[^c]: `conv:aaaaaaaa`  x\n"
    out, log = renumber(text)
    assert out == (
        "# T\n\nB.[^1] A.[^2] B again.[^1] Same.[^2]\n\n## References\n\n"
        "[^1]: `conv:bbbbbbbb` y\n[^2]: `conv:aaaaaaaa` x\n"
    )
    assert log == []


def test_orphan_marker_leaves_clean_punctuation():
    out, log = renumber("# T\n\nWord [^x]. Other.[^1]\n\n[^1]: `conv:12345678` a\n")
    assert "Word. Other.[^1]" in out
    assert log == ["dropped citation marker [^x] on line 3: no definition"]


def test_no_footnotes_no_references_section():
    assert renumber("# T\n\nPlain.\n\n## References\n") == ("# T\n\nPlain.\n", [])


def test_prose_under_references_is_kept():
    out, _ = renumber("# T\n\nA.[^1]\n\n## References\n\nSee also the logs.\n\n[^1]: `conv:12345678` a\n")
    assert out.endswith("## References\n\nSee also the logs.\n\n[^1]: `conv:12345678` a\n")


def test_sections_after_references_move_before_it(article):
    text, _ = renumber(article("footnotes_messy.md"))
    assert text.index("## See also") < text.index("## References")
    assert text.rstrip().splitlines()[-1].startswith("[^")


def test_find_markers_and_definitions(article):
    text = article("footnotes_clean.md")
    assert find_markers(text) == [("1", 3), ("2", 3), ("1", 7)]
    assert [(label, line) for label, _, line in find_definitions(text)] == [("1", 11), ("2", 12)]


def test_citations(article):
    assert citations(article("footnotes_clean.md")) == ["1a2b3c4d", "5e6f7a8b"]
    assert citations("`conv:abc` is too short\n\n[^1]: `conv:abc`\n") == []
    assert citations("# T\n\n```\n[^1]: `conv:12345678`\n```\n") == []


# --- properties -------------------------------------------------------------------------

labels = st.sampled_from(["1", "2", "3", "7", "a", "x9"])
conv = st.sampled_from(["aaaaaaaa", "bbbbbbbb", "cccccccc", "dddddddd"])
prose = st.sampled_from(["Alpha beta.", "Gamma", "Delta, epsilon", "`[^1]` code", "Zeta [[Link]]"])
body_line = st.lists(st.one_of(prose, labels.map(lambda x: f"[^{x}]")), min_size=1, max_size=6).map(" ".join)
def_line = st.tuples(labels, conv).map(lambda p: f"[^{p[0]}]: `conv:{p[1]}` (2026-01-01, pi) — t")
heading = st.sampled_from(["## Section", "## References", "## See also", "### Sub"])
any_line = st.one_of(body_line, def_line, heading, st.sampled_from(["", "---", "```\n[^1]: in code\n```"]))
articles = st.lists(any_line, max_size=14).map(lambda ls: "# Title\n\n" + "\n".join(ls) + "\n")


@settings(max_examples=300, deadline=None)
@given(articles)
def test_renumber_is_idempotent(text):
    once, _ = renumber(text)
    twice, log = renumber(once)
    assert twice == once
    assert log == []
    assert check_bijection(once) == []


@settings(max_examples=300, deadline=None)
@given(articles)
def test_no_citation_lost_unless_logged(text):
    out, log = renumber(text)
    kept = set(citations(out))
    logged = "\n".join(log)
    for cid in citations(text):
        assert cid in kept or f"conv:{cid}" in logged
